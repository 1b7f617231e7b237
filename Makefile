# drover — run `make help` for the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

ROOT       := $(abspath .)
BIN        := $(ROOT)/bin
KUBE_BIN   := $(BIN)/k8s
DATA_DIR   ?= $(ROOT)/.drover
GO         ?= go

# Pinned tool versions.
CONTROLLER_GEN_VERSION := v0.23.0
GOLANGCI_LINT_VERSION  := v2.15.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT  := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

# Tests find the Kubernetes binaries here (envtest and drover's own control plane).
export KUBEBUILDER_ASSETS   := $(KUBE_BIN)
export DROVER_KUBE_BIN_DIR  := $(KUBE_BIN)

# -race: every test runs under the race detector (benchmarks only run with `make bench`, without it).
GO_TEST_FLAGS ?= -race -timeout 30m

# drover's version: the tag on HEAD (v1.2.3), else the nearest tag plus commits
# (v1.2.3-4-gabcdef), else v0.0.0-dev-<short commit> (v0.0.0-dev outside git), with -dirty for
# uncommitted changes. Agents default to the image of this version, so each commit gets its own
# tag: an IfNotPresent pull does not reuse another commit's image.
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || \
	{ sha=$$(git rev-parse --short HEAD 2>/dev/null) && echo "v0.0.0-dev-$$sha$$(git diff --quiet HEAD -- 2>/dev/null || echo -dirty)"; } || \
	echo v0.0.0-dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- 2>/dev/null; test $$? -eq 1 && echo -dirty)
LDFLAGS := -X github.com/droverhq/drover/internal/version.Version=$(VERSION) -X github.com/droverhq/drover/internal/version.Commit=$(COMMIT)

##@ General

# awk reads this file unexpanded: $(VERSION) in a target's text is replaced by its value.
.PHONY: help
help: ## Show this help.
	@awk -v version='$(VERSION)' 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { gsub(/\$$\(VERSION\)/, version, $$2); printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: run
run: build tools ## Build, then start drover server on the embedded control plane (state in .drover/; more flags in SERVER_FLAGS="...").
	$(BIN)/drover server --embedded --data-dir $(DATA_DIR) --bin-dir $(KUBE_BIN) $(SERVER_FLAGS)

.PHONY: demo
demo: build tools ## Start drover with a demo world (simulated EKS/AKS/GKE clusters, two kwok clusters with agents, a Bundle, two cloud-provider migrations, the dashboard); .drover-demo/ is deleted on exit. More flags (other ports) in SERVER_FLAGS="...".
	$(BIN)/drover server --demo --data-dir $(ROOT)/.drover-demo --bin-dir $(KUBE_BIN) --zap-log-level=error --zap-stacktrace-level=panic $(SERVER_FLAGS)

.PHONY: test
test: tools ## Run every test (unit, envtest integration, end-to-end) with the race detector.
	$(GO) test $(GO_TEST_FLAGS) ./...

.PHONY: bench
bench: tools ## Run the Go benchmarks and print their figures.
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code, CRD manifests and the server's RBAC (config/rbac).
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=drover-manager paths=./internal/... output:rbac:artifacts:config=config/rbac
	@# charts/drover renders its ClusterRole/Role rules from this copy of the generated RBAC.
	@if [ -d charts/drover ]; then mkdir -p charts/drover/files && cp config/rbac/role.yaml charts/drover/files/rbac-role.yaml; fi
	@# ... and the ClusterRoles for people from this copy (userRoles.enabled).
	@if [ -d charts/drover ]; then cp config/rbac/user_roles.yaml charts/drover/files/rbac-user-roles.yaml; fi
	@# ... and the admission policy that limits the server's own identity from this copy.
	@if [ -d charts/drover ]; then cp config/rbac/server_limits.yaml charts/drover/files/server-limits.yaml; fi
	@# ... and ships the Grafana dashboard from this copy (grafanaDashboard.enabled).
	@if [ -d charts/drover ]; then cp config/grafana/drover.json charts/drover/files/grafana-dashboard.json; fi
	@# ... and its alerting rules (prometheusRule.enabled).
	@if [ -d charts/drover ]; then cp config/prometheus/drover-alerts.yaml charts/drover/files/prometheus-alerts.yaml; fi

.PHONY: verify
verify: generate ## Fail if generated files are stale, code is not gofmt-clean or go.mod is untidy.
	@git diff --exit-code -- api config/crd config/rbac charts/drover/files || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git ls-files --others --exclude-standard -- api config/crd config/rbac charts/drover/files)" || { echo "untracked generated files: run 'make generate' and commit"; exit 1; }
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "not gofmt-clean (run gofmt -w):"; echo "$$out"; exit 1; }
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum untidy: run 'go mod tidy'"; exit 1; }
	$(GO) vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (config: .golangci.yml).
	$(GOLANGCI_LINT) run ./...

##@ Build

.PHONY: build
build: ## Build bin/drover.
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/drover ./cmd/drover

IMAGE_ARCH ?= $(shell $(GO) env GOARCH)

.PHONY: image
image: ## Build drover's image offline into bin/drover-image.tar (docker load -i; tag: $(VERSION); IMAGE_ARCH=arm64 for another arch; non-root, reproducible).
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/linux-$(IMAGE_ARCH)/drover ./cmd/drover
	$(GO) run ./hack/image --binary $(BIN)/linux-$(IMAGE_ARCH)/drover --tag $(VERSION) --commit $(COMMIT) --arch $(IMAGE_ARCH) --output $(BIN)/drover-image.tar

.PHONY: tools
tools: ## Build the pinned Kubernetes binaries (apiserver, controller-manager, scheduler, kubectl, etcd, kwok) into bin/k8s once.
	hack/kube-bins/build.sh $(KUBE_BIN)

$(CONTROLLER_GEN):
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $@

$(GOLANGCI_LINT):
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@

.PHONY: clean
clean: ## Remove built binaries (keeps the Go caches) and the embedded control plane's state.
	rm -rf $(BIN) $(DATA_DIR)
