package envtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// RepoRoot is the root of the drover repository.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// BinDir finds the Kubernetes binaries: $KUBEBUILDER_ASSETS, $DROVER_KUBE_BIN_DIR, or bin/k8s.
func BinDir() (string, error) {
	for _, d := range []string{os.Getenv("KUBEBUILDER_ASSETS"), os.Getenv("DROVER_KUBE_BIN_DIR"), filepath.Join(RepoRoot(), "bin", "k8s")} {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "kube-apiserver")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("kube-apiserver not found in $KUBEBUILDER_ASSETS, $DROVER_KUBE_BIN_DIR or bin/k8s: run `make tools` first (or use `make test`)")
}
