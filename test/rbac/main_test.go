// Package rbac proves that drover server's generated RBAC (config/rbac) is enough and no more:
// the server runs in-process under a ServiceAccount bound only to those rules, on a real
// kube-apiserver with RBAC on, while the tests drive every controller through its work. Any
// Forbidden answer to the server fails the tests.
package rbac

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/eks"
	migrationcontroller "github.com/droverhq/drover/internal/migration/controller"
	"github.com/droverhq/drover/internal/registration"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/pkg/distsim"
	"github.com/droverhq/drover/test/envtest"
)

// The identity the server runs as (config/rbac/service_account.yaml).
const (
	serverNamespace = server.SystemNamespace
	serverAccount   = "drover"
)

var (
	cluster *envtest.Cluster
	// serverConfig authenticates as the server's ServiceAccount (no admin rights).
	serverConfig *rest.Config
	denied       = &forbiddenLog{}
)

// logs holds every log line of the suite, at every verbosity drover emits, for the secret scan.
var logs = &envtest.SyncBuffer{}

func TestMain(m *testing.M) {
	ctrl.SetLogger(envtest.SuiteLogger(logs))
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	// The CRDs are installed by the test (as GitOps or Helm would); the server applies them
	// again at start, as it does by default, which needs its CRD rights. A full cluster
	// (controller-manager, scheduler, kwok): the RKE2 migration needs Ready nodes and pods.
	if cluster, err = envtest.StartFull("rbac", envtest.Options{InstallCRDs: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cluster.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	secrets, err := envtest.StartSecretScan(ctx, cluster)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Options{
			RESTConfig: serverConfig, MetricsAddr: "0", HealthAddr: "0", LeaderElect: true,
			APIServerURL: cluster.Config.Host, APIServerCA: cluster.Config.CAData,
			Controllers: controllers(),
		}, io.Discard)
	}()
	code := m.Run()
	// Secret values never reach a log line, an Event or a status: every credential this suite's
	// flows made (the EKS keys, registration tokens and answers, the agent's credentials, the
	// kubeconfigs), searched for in all of them.
	if code == 0 && !testing.Short() {
		if err := secrets.Check(ctx, 6, map[string]string{"the logs": logs.String()}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "drover server:", err)
		code = 1
	}
	return code
}

// setup installs the generated RBAC and the provisioning CRD of the migration's RKE2 clusters,
// and makes a token config for the server's ServiceAccount.
func setup(ctx context.Context) error {
	root := envtest.RepoRoot()
	if _, err := crenvtest.InstallCRDs(cluster.Config, crenvtest.CRDInstallOptions{Paths: []string{
		filepath.Join(root, "pkg", "distsim", "provisioning-crd.yaml"),
	}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("install the provisioning CRD: %w", err)
	}
	// The admission policy is not there before drover: the server creates it with its own rights.
	policies, err := crds.LoadPolicies()
	if err != nil {
		return err
	}
	for _, o := range policies.Objects() {
		if err := cluster.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", o.GetName(), err)
		}
	}
	for _, f := range []string{"role.yaml", "service_account.yaml", "role_binding.yaml", "server_limits.yaml"} {
		if err := applyFile(ctx, filepath.Join(root, "config", "rbac", f)); err != nil {
			return err
		}
	}
	var cfg *rest.Config
	cfg, err = envtest.TokenConfig(ctx, cluster.Clientset, cluster.Config, serverNamespace, serverAccount, time.Hour)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &forbiddenRecorder{next: rt, log: denied} })
	serverConfig = cfg
	return nil
}

// applyFile creates every object of a multi-document YAML file as admin, creating a missing
// namespace first.
func applyFile(ctx context.Context, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s (run make generate): %w", path, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if ns := u.GetNamespace(); ns != "" {
			nsObj := &unstructured.Unstructured{}
			nsObj.SetAPIVersion("v1")
			nsObj.SetKind("Namespace")
			nsObj.SetName(ns)
			if err := cluster.Client.Create(ctx, nsObj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create namespace %s: %w", ns, err)
			}
		}
		if err := cluster.Client.Create(ctx, u); err != nil {
			return fmt.Errorf("create %s %s from %s: %w", u.GetKind(), u.GetName(), path, err)
		}
	}
}

// controllers is drover server's controller set (internal/cli), with short intervals.
func controllers() []func(ctrl.Manager) error {
	return []func(ctrl.Manager) error{
		func(mgr ctrl.Manager) error {
			return (&hosted.Reconciler{
				Client: mgr.GetClient(), Providers: []hosted.Provider{eks.Provider{}},
				Recorder: mgr.GetEventRecorder("drover-hosted"), RefreshInterval: time.Minute,
				PollInterval: 200 * time.Millisecond,
			}).SetupWithManager(mgr)
		},
		func(mgr ctrl.Manager) error {
			// The downstream control plane is the simulated one of testMigration.
			return (&migrationcontroller.Reconciler{Client: mgr.GetClient(), PollInterval: 100 * time.Millisecond,
				StepTimeout: time.Minute, Namespace: downstreamNamespace, Selector: distsim.ClusterLabel + "=" + downstreamName,
				KCMIdentity: downstreamKCM}).SetupWithManager(mgr)
		},
		registration.Controllers(registration.Options{}),
		bundle.Controllers(bundle.Options{ManageAgents: true}),
		gitrepo.Controllers(),
	}
}

// forbiddenLog holds every request of the server that was refused.
type forbiddenLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *forbiddenLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, s)
}

func (l *forbiddenLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

type forbiddenRecorder struct {
	next http.RoundTripper
	log  *forbiddenLog
}

func (f *forbiddenRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		f.log.add(req.Method + " " + req.URL.RequestURI())
	}
	return resp, err
}
