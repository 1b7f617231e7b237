#!/usr/bin/env bash
# Builds the pinned Kubernetes binaries (and etcd, kwok) from the Go module proxy into $1 (default ../../bin/k8s).
# The build is skipped when a stamp matching this module's go.sum, this script and the Go version exists.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../bin/k8s}
mkdir -p "$out"
out=$(cd "$out" && pwd)

KUBE_VERSION=v$(sed -n 's#^\s*k8s.io/kubernetes v\(.*\)$#\1#p' "$here/go.mod" | head -1)
KWOK_VERSION=v0.8.0

stamp="$out/.stamp-$( (cat "$here/go.sum" "$here/go.mod" "$0"; go version) | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  echo "kube-bins: up to date in $out ($KUBE_VERSION)"
  exit 0
fi

cd "$here"
ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
 -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) \
 -X k8s.io/component-base/version.gitTreeState=clean"
for b in kube-apiserver etcd kube-controller-manager kube-scheduler kubectl; do
  echo "kube-bins: building $b $KUBE_VERSION"
  start=$(date +%s)
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$b" "./cmd/$b"
  echo "kube-bins: built $b in $(( $(date +%s) - start ))s"
done
echo "kube-bins: building kwok $KWOK_VERSION"
CGO_ENABLED=0 GOBIN="$out" GOFLAGS=-buildvcs=false go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
# kwok needs Stage definitions; take kwok's own "fast" node and pod stages from its module.
kwokdir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
{ for f in node/fast/node-initialize node/heartbeat/node-heartbeat pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    echo "---"; cat "$kwokdir/kustomize/stage/$f.yaml"; done; } > "$out/kwok-stages.yaml"
echo "$KUBE_VERSION" > "$out/VERSION"
rm -f "$out"/.stamp-*
touch "$stamp"
echo "kube-bins: done in $out"
