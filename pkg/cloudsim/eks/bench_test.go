//go:build unix

package eks_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// The performance target: one simulator holds 10,000 clusters, answers DescribeCluster in at
// most 100 µs of CPU and keeps each cluster in at most 10 KB.
const (
	fleetSize          = 10_000
	maxBytesPerCluster = 10 << 10
)

// benchHost is any host: the handler is called directly, and the signature covers it.
const benchHost = "http://eks.local"

func newFleet(tb testing.TB, n int, withNodegroups bool) *eksim.Server {
	tb.Helper()
	clock := simcore.NewManualClock(time.Now())
	srv := eksim.New(eksim.Options{Credentials: map[string]string{accessKey: secretKey}, Delay: delay, Clock: clock})
	do := benchDo(tb, srv)
	createFleet(tb, srv, n)
	clock.Advance(2 * delay)
	if withNodegroups {
		for i := range n {
			do(http.MethodPost, fmt.Sprintf("/clusters/c-%05d/node-groups", i), fmt.Sprintf(`{"nodegroupName":"workers","nodeRole":%q,`+
				`"subnets":["subnet-0a1b2c3d4e5f60001"],"labels":{"role":"worker"},"tags":{"team":"team-%d"}}`, nodeRole, i%50))
			do(http.MethodPost, fmt.Sprintf("/clusters/c-%05d/updates", i), `{"version":"1.33"}`)
		}
		clock.Advance(2 * delay)
	}
	return srv
}

// benchDo serves one signed call to srv directly and fails unless it answers 200.
func benchDo(tb testing.TB, srv *eksim.Server) func(method, path, body string) {
	return func(method, path, body string) {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, signedRequest(tb, method, benchHost+path, []byte(body), accessKey, secretKey, region))
		if w.Code != http.StatusOK {
			tb.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
	}
}

// createFleet creates clusters c-00000 … c-<n-1> in srv.
func createFleet(tb testing.TB, srv *eksim.Server, n int) {
	do := benchDo(tb, srv)
	for i := range n {
		do(http.MethodPost, "/clusters", fmt.Sprintf(`{"name":"c-%05d","version":"1.32","roleArn":%q,`+
			`"resourcesVpcConfig":{"subnetIds":["subnet-0a1b2c3d4e5f60001","subnet-0a1b2c3d4e5f60002"],"securityGroupIds":["sg-0123456789abcdef0"]},`+
			`"logging":{"clusterLogging":[{"types":["api","audit"],"enabled":true}]},"tags":{"team":"team-%d","env":"prod"}}`, i, roleARN, i%50))
	}
}

var fleet struct {
	once sync.Once
	srv  *eksim.Server
}

// sharedFleet builds the read-only fleet of the DescribeCluster benchmarks once per run.
func sharedFleet(tb testing.TB) *eksim.Server {
	fleet.once.Do(func() { fleet.srv = newFleet(tb, fleetSize, false) })
	return fleet.srv
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func describeRequests(tb testing.TB, n int, rng *rand.Rand) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i] = signedRequest(tb, http.MethodGet, fmt.Sprintf("%s/clusters/c-%05d", benchHost, rng.IntN(fleetSize)), nil, accessKey, secretKey, region)
	}
	return reqs
}

// BenchmarkDescribeCluster10k serves signed DescribeCluster calls (signature verification
// included) for random clusters of a 10,000-cluster fleet, and reports process CPU per call.
func BenchmarkDescribeCluster10k(b *testing.B) {
	srv := sharedFleet(b)
	reqs := describeRequests(b, 1024, rand.New(rand.NewPCG(1, 2)))
	runtime.GC()
	b.ReportAllocs()
	start, n := cpuTime(), 0
	for b.Loop() {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, reqs[n%len(reqs)])
		if w.Code != http.StatusOK {
			b.Fatalf("DescribeCluster: %d %s", w.Code, w.Body)
		}
		n++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Microsecond)/float64(n), "cpu-µs/op")
}

// BenchmarkDescribeCluster10kParallel is the same under concurrent callers, which is how a
// drover refresh loop calls it.
func BenchmarkDescribeCluster10kParallel(b *testing.B) {
	srv := sharedFleet(b)
	runtime.GC()
	b.ReportAllocs()
	start := cpuTime()
	var seed atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		reqs := describeRequests(b, 64, rand.New(rand.NewPCG(seed.Add(1), 7)))
		for i := 0; pb.Next(); i++ {
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, reqs[i%len(reqs)])
			if w.Code != http.StatusOK {
				b.Errorf("DescribeCluster: %d", w.Code)
				return
			}
		}
	})
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

// heapPerCluster returns the live heap a fleet of n clusters adds, per cluster.
func heapPerCluster(tb testing.TB, n int, withNodegroups bool) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	srv := newFleet(tb, n, withNodegroups)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if got := srv.ClusterCount(); got != n {
		tb.Fatalf("ClusterCount = %d, want %d", got, n)
	}
	runtime.KeepAlive(srv)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// BenchmarkMemoryPerCluster measures once (building the fleet is the expensive part) and
// reports live heap per cluster, bare and with a node group and a finished update.
func BenchmarkMemoryPerCluster(b *testing.B) {
	for _, ng := range []bool{false, true} {
		b.Run(fmt.Sprintf("nodegroup=%t", ng), func(b *testing.B) {
			per := heapPerCluster(b, fleetSize, ng)
			for b.Loop() {
			}
			b.ReportMetric(per, "B/cluster")
		})
	}
}

// TestMemoryPerCluster holds the budget for a realistic cluster: tags, logging, one node
// group and one finished update.
func TestMemoryPerCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 10,000 clusters")
	}
	per := heapPerCluster(t, fleetSize, true)
	t.Logf("%.0f bytes per cluster", per)
	if per > maxBytesPerCluster {
		t.Errorf("%.0f bytes per cluster, budget %d", per, maxBytesPerCluster)
	}
}
