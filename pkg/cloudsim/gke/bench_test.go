package gke_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/auth/credentials"
	container "google.golang.org/api/container/v1"

	"github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

const benchDelay = time.Second

// fleet is a simulator holding many clusters, driven through its handler directly.
type fleet struct {
	ts    *gke.TestServer
	clock *simcore.ManualClock
	auth  string // Authorization header value
	paths []string
}

// newFleet starts a simulator and gets a real access token from its token endpoint.
func newFleet(tb testing.TB) *fleet {
	tb.Helper()
	clock := simcore.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ts := gke.NewTestServer(tb, gke.Options{Delay: benchDelay, Clock: clock})
	key, err := ts.NewServiceAccountKey(saEmail, project)
	if err != nil {
		tb.Fatal(err)
	}
	creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, key,
		&credentials.DetectOptions{Scopes: []string{container.CloudPlatformScope}})
	if err != nil {
		tb.Fatal(err)
	}
	tok, err := creds.Token(tb.Context())
	if err != nil {
		tb.Fatalf("token: %v", err)
	}
	return &fleet{ts: ts, clock: clock, auth: "Bearer " + tok.Value}
}

func (f *fleet) do(tb testing.TB, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path+"?alt=json&prettyPrint=false", strings.NewReader(body))
	req.Header.Set("Authorization", f.auth)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	f.ts.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	return rec
}

// create adds n clusters like the ones drover manages (one pool, labels, authorized networks)
// and lets their create operations end.
func (f *fleet) create(tb testing.TB, n int) {
	tb.Helper()
	for i := range n {
		loc := fmt.Sprintf("us-central%d", 1+i%4)
		name := fmt.Sprintf("cluster-%05d", i)
		f.do(tb, http.MethodPost, "/v1/"+parent(loc)+"/clusters", fmt.Sprintf(`{"cluster":{
			"name":%q,"resourceLabels":{"team":"fleet","env":"prod","drover-id":"c%05d"},
			"masterAuthorizedNetworksConfig":{"enabled":true,"cidrBlocks":[{"displayName":"office","cidrBlock":"203.0.113.0/24"}]},
			"nodePools":[{"name":"pool-a","initialNodeCount":3,"config":{"machineType":"e2-standard-4","labels":{"role":"worker"}},
			"autoscaling":{"enabled":true,"minNodeCount":1,"maxNodeCount":5}}]}}`, name, i))
		f.paths = append(f.paths, "/v1/"+clusterPath(loc, name))
	}
	f.clock.Advance(benchDelay)
}

// BenchmarkGetCluster10k measures clusters.get through the handler with 10,000 clusters held.
func BenchmarkGetCluster10k(b *testing.B) {
	f := newFleet(b)
	f.create(b, 10_000)
	for _, p := range f.paths { // end the create operations and warm the encodings
		f.do(b, http.MethodGet, p, "")
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		f.do(b, http.MethodGet, f.paths[(i*7919)%len(f.paths)], "")
	}
	b.StopTimer()
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// BenchmarkMemoryPerCluster reports the heap retained per cluster (with its finished create
// operation and cached encoding) over 10,000 clusters. It measures once per run whatever b.N
// is; its ns/op means nothing.
func BenchmarkMemoryPerCluster(b *testing.B) {
	perCluster := bytesPerCluster(b, 10_000)
	for b.Loop() {
	}
	b.ReportMetric(perCluster, "B/cluster")
}

// TestMemoryBudget keeps the memory target (≤ 10 KB per cluster) from regressing.
func TestMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 2,000 clusters")
	}
	if got := bytesPerCluster(t, 2_000); got > 10_000 {
		t.Fatalf("%.0f bytes per cluster, want at most 10,000", got)
	}
}

func bytesPerCluster(tb testing.TB, n int) float64 {
	f := newFleet(tb)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f.create(tb, n)
	for _, p := range f.paths {
		f.do(tb, http.MethodGet, p, "")
	}
	f.paths = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	if f.ts.ClusterCount() != n {
		tb.Fatalf("ClusterCount = %d, want %d", f.ts.ClusterCount(), n)
	}
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}
