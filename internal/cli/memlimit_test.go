package cli

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/droverhq/drover/internal/memlimit"
)

// TestLongRunningCommandsSetMemoryLimit: drover server and drover agent give the Go runtime a
// soft memory limit of memlimit.Ratio of their container's (here a cgroup v2 memory.max of
// 4 GiB), before anything else can fail; a short command (drover version) leaves it alone.
func TestLongRunningCommandsSetMemoryLimit(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: it wins over the container's limit")
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("4294967296\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := debug.SetMemoryLimit(-1)
	oldRoot := cgroupRoot
	cgroupRoot = root
	t.Cleanup(func() { cgroupRoot = oldRoot; debug.SetMemoryLimit(before) })
	size := int64(4 << 30)
	want := int64(float64(size) * memlimit.Ratio)
	missing := filepath.Join(root, "no-such.kubeconfig")
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{[]string{"version", "--client"}, 0},
		{[]string{"server", "--kubeconfig", missing, "--embedded=false"}, want},
		{[]string{"agent", "--downstream-kubeconfig", missing}, want},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			const unset = 1<<62 - 1
			debug.SetMemoryLimit(unset)
			_, _, err := drover(t.Context(), tc.args...)
			if tc.args[0] != "version" && err == nil {
				t.Fatalf("drover %v with a missing kubeconfig succeeded", tc.args)
			}
			got := debug.SetMemoryLimit(-1)
			if (tc.want == 0 && got != unset) || (tc.want != 0 && got != tc.want) {
				t.Errorf("drover %v: the runtime's memory limit is %d, want %d (0: left alone)", tc.args, got, tc.want)
			}
		})
	}
}
