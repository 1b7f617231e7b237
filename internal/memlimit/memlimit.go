// Package memlimit gives the Go runtime a soft memory limit below the container's: without one,
// the garbage collector lets the heap grow to twice what is live before collecting, so a
// process whose live heap is half its container's limit is OOM-killed at a peak (a 50-path
// commit on 1,000 clusters peaks at ~800 MB in drover server), and restarts into the same peak.
// With the limit, the collector runs more often as the heap nears it instead.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Ratio is the share of the container's memory limit given to the Go heap: the rest is for
// the runtime's own memory, goroutine stacks and the kernel's accounting of the process's pages.
const Ratio = 0.9

// CgroupRoot is where cgroup v2 (memory.max) or v1 (memory/memory.limit_in_bytes) is mounted.
const CgroupRoot = "/sys/fs/cgroup"

// Set sets the runtime's soft memory limit to Ratio of the cgroup memory limit found under root,
// unless GOMEMLIMIT is set (getenv), which the runtime has applied already and which wins. It
// returns the limit it set (0: none, there being no cgroup limit or GOMEMLIMIT being set) and
// the container limit it came from.
func Set(root string, getenv func(string) string) (limit, container int64, err error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, 0, nil
	}
	container, err = cgroupLimit(root)
	if err != nil || container == 0 {
		return 0, 0, err
	}
	limit = int64(float64(container) * Ratio)
	debug.SetMemoryLimit(limit)
	return limit, container, nil
}

// cgroupLimit is the memory limit of the cgroup under root in bytes, 0 when there is none.
func cgroupLimit(root string) (int64, error) {
	for _, p := range []string{filepath.Join(root, "memory.max"), filepath.Join(root, "memory", "memory.limit_in_bytes")} {
		raw, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read the container's memory limit: %w", err)
		}
		s := strings.TrimSpace(string(raw))
		if s == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read the container's memory limit: %s: %q is not a number of bytes", p, s)
		}
		// cgroup v1 says "no limit" with the largest page-aligned int64.
		if n <= 0 || n >= math.MaxInt64/2 {
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}
