// Package e2e runs drover's binaries and full clusters (kube-controller-manager, scheduler, kwok)
// end to end.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/droverhq/drover/test/envtest"
)

var (
	droverBin string
	binDir    string
)

func TestMain(m *testing.M) {
	// The clients made here log only client-side noise; without a logger controller-runtime
	// prints a goroutine dump into the test output after 30 s.
	ctrl.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if binDir, err = envtest.BinDir(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "drover-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	droverBin = filepath.Join(tmp, "drover")
	build := exec.Command("go", "build", "-o", droverBin, "./cmd/drover")
	build.Dir = envtest.RepoRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build drover:", err)
		return 1
	}
	return m.Run()
}

// eventually polls cond until it returns nil or the deadline passes.
var eventually = envtest.Eventually
