package envtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/heartbeat"
)

// Parallel runs f(0..n-1), workers at a time: benchmarks create their fleets with it.
func Parallel(n, workers int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
}

// Child is this test binary run again as a child process with extra environment, so that a
// benchmark can run drover's controllers there and measure their CPU time and peak RSS alone.
// The package's init function sees the environment variable and runs the controllers instead
// of the tests.
type Child struct {
	cmd     *exec.Cmd
	stopped bool
}

// StartChild starts os.Args[0] with env (KEY=VALUE) added; its stderr goes to this process's.
// It is stopped (SIGTERM, waited for) when tb ends, if not before.
func StartChild(tb testing.TB, env ...string) *Child {
	tb.Helper()
	cmd := exec.Command(os.Args[0]) //nolint:gosec // this test binary itself, run again
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start child process: %v", err)
	}
	c := &Child{cmd: cmd}
	tb.Cleanup(c.Stop)
	return c
}

// Pid is the child's process ID.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Stop sends SIGTERM and waits for the child to exit.
func (c *Child) Stop() {
	if c.stopped {
		return
	}
	c.stopped = true
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	_ = c.cmd.Wait()
}

// CPUSeconds is the child's user+system CPU time so far (0 once it has exited).
func (c *Child) CPUSeconds() float64 { return CPUSeconds(c.Pid()) }

// PeakRSSMB is the child's peak resident set size in MB: VmHWM while it runs, the rusage
// maximum once it has been stopped.
func (c *Child) PeakRSSMB() float64 {
	if c.stopped {
		if ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			return float64(ru.Maxrss) / 1024
		}
		return 0
	}
	return PeakRSSMB(c.Pid())
}

// RSSMB is the child's current resident set size in MB.
func (c *Child) RSSMB() float64 { return float64(procStatusKB(c.Pid(), "VmRSS")) / 1024 }

// PeakRSSMB is a running process's peak resident set size (VmHWM) in MB.
func PeakRSSMB(pid int) float64 { return float64(procStatusKB(pid, "VmHWM")) / 1024 }

// CPUSeconds is a process's user+system CPU time (from /proc/<pid>/stat, 100 ticks per second).
func CPUSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return float64(utime+stime) / 100
}

// procStatusKB reads a "Name:   N kB" line of /proc/<pid>/status.
func procStatusKB(pid int, name string) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return 0
}

// BenchClusterLabels are the labels of the fleet Clusters RegisterBenchClusters creates (a new
// map each time: a client decoding its answer into an object fills the object's map).
func BenchClusterLabels() map[string]string { return map[string]string{"bench": "true"} }

// RegisterBenchClusters creates n fleet Clusters c-0000, c-0001, ... labelled
// BenchClusterLabels in the default workspace, as registration leaves them, waits until the
// cluster controller (running against c) has given each its namespace, and has each agent
// check in once as a current agent (status.agent.lastSeen and features), so each also gets its
// agent Bundle.
func RegisterBenchClusters(tb testing.TB, c client.Client, n int) {
	tb.Helper()
	ctx, ws := tb.Context(), fleetv1alpha1.DefaultWorkspaceNamespace
	Eventually(tb, 30*time.Second, func() error { return c.Get(ctx, client.ObjectKey{Name: ws}, &corev1.Namespace{}) })
	name := func(i int) string { return fmt.Sprintf("c-%04d", i) }
	Parallel(n, 32, func(i int) {
		cl := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name(i), Labels: BenchClusterLabels()}}
		if err := c.Create(ctx, cl); err != nil {
			tb.Error(err)
		}
	})
	Eventually(tb, 300*time.Second, func() error {
		var list fleetv1alpha1.ClusterList
		if err := c.List(ctx, &list, client.InNamespace(ws)); err != nil {
			return err
		}
		ready := 0
		for _, cl := range list.Items {
			if cl.Status.Namespace != "" {
				ready++
			}
		}
		if ready < n {
			return fmt.Errorf("%d/%d cluster namespaces", ready, n)
		}
		return nil
	})
	now := metav1.Now()
	Parallel(n, 32, func(i int) {
		cl := &fleetv1alpha1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ws, Name: name(i)}, cl); err != nil {
			tb.Error(err)
			return
		}
		before := cl.DeepCopy()
		// Checked in as a current agent, with what it reports it can do.
		cl.Status.Agent.LastSeen, cl.Status.Agent.FeaturesSeen, cl.Status.Agent.Features = &now, &now, heartbeat.Features
		if err := c.Status().Patch(ctx, cl, client.MergeFrom(before)); err != nil {
			tb.Error(err)
		}
	})
}
