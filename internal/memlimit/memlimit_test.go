package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	const gi = 1 << 30
	tests := []struct {
		name      string
		files     map[string]string
		gomem     string
		want      int64 // the limit set; 0: none
		wantError string
	}{
		{name: "cgroup v2", files: map[string]string{"memory.max": "1073741824\n"}, want: ratioOf(gi)},
		{name: "cgroup v2 without a limit", files: map[string]string{"memory.max": "max\n"}},
		{name: "cgroup v1", files: map[string]string{"memory/memory.limit_in_bytes": "2147483648\n"}, want: ratioOf(2 * gi)},
		{name: "cgroup v1 without a limit", files: map[string]string{"memory/memory.limit_in_bytes": strconv.FormatInt(math.MaxInt64&^4095, 10) + "\n"}},
		{name: "no cgroup"},
		{name: "GOMEMLIMIT wins", files: map[string]string{"memory.max": "1073741824\n"}, gomem: "500MiB"},
		{name: "garbage", files: map[string]string{"memory.max": "lots\n"}, wantError: `"lots" is not a number of bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range tt.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			const unset = math.MaxInt64 - 1
			debug.SetMemoryLimit(unset)
			limit, _, err := Set(root, func(k string) string {
				if k == "GOMEMLIMIT" {
					return tt.gomem
				}
				return ""
			})
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := debug.SetMemoryLimit(-1)
			if limit != tt.want || (tt.want == 0 && got != unset) || (tt.want != 0 && got != tt.want) {
				t.Errorf("Set returned %d and the runtime's limit is %d; want %d (0: left alone)", limit, got, tt.want)
			}
		})
	}
}

func ratioOf(n int64) int64 { return int64(float64(n) * Ratio) }
