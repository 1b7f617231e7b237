//go:build unix

package aks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
)

const benchClusters = 10_000

// discard is a minimal ResponseWriter so benchmarks measure the simulator, not a recorder.
type discard struct {
	h      http.Header
	status int
	n      int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(status int)      { d.status = status }
func (d *discard) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }
func (d *discard) reset()                      { clear(d.h); d.status, d.n = 0, 0 }

// benchSim is a simulator called through its handler (no TLS, no sockets) with a valid token.
func benchSim(b *testing.B) (*aks.Server, string) {
	b.Helper()
	sim, err := aks.New(aks.Options{
		Credentials: []aks.Credential{{TenantID: tenantID, ClientID: clientID, ClientSecret: secret, Subscriptions: []string{subID}}},
		Delay:       time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {secret}, "scope": {"https://example.com/.default"}}
	req := httptest.NewRequest(http.MethodPost, "https://example.com/"+tenantID+"/oauth2/v2.0/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	sim.Handler().ServeHTTP(rec, req)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &tok); err != nil || tok.AccessToken == "" {
		b.Fatalf("token: %d %s", rec.Code, rec.Body)
	}
	return sim, tok.AccessToken
}

func clusterPath(i int) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-%d/providers/Microsoft.ContainerService/managedClusters/cluster-%05d", subID, i%50, i)
}

// benchBody is a realistic cluster: two pools, labels, taints, tags, network and API server
// profiles.
var benchBody = []byte(`{
  "location": "westeurope",
  "tags": {"env": "prod", "owner": "platform", "cost-center": "1234"},
  "identity": {"type": "SystemAssigned"},
  "properties": {
    "kubernetesVersion": "1.31.6",
    "dnsPrefix": "bench",
    "networkProfile": {"networkPlugin": "azure", "networkPolicy": "calico"},
    "apiServerAccessProfile": {"authorizedIPRanges": ["203.0.113.0/24", "198.51.100.0/24"]},
    "agentPoolProfiles": [
      {"name": "system", "count": 3, "vmSize": "Standard_D4s_v5", "mode": "System", "availabilityZones": ["1", "2", "3"]},
      {"name": "user1", "count": 5, "vmSize": "Standard_D8s_v5", "mode": "User", "enableAutoScaling": true, "minCount": 2, "maxCount": 10,
       "nodeLabels": {"workload": "batch"}, "nodeTaints": ["dedicated=batch:NoSchedule"]}
    ]
  }
}`)

func createBenchClusters(b *testing.B, h http.Handler, tok string, n int) {
	b.Helper()
	w := &discard{h: http.Header{}}
	for i := range n {
		req := httptest.NewRequest(http.MethodPut, "https://example.com"+clusterPath(i)+"?api-version=2025-02-01", bytes.NewReader(benchBody))
		req.Header.Set("Authorization", "Bearer "+tok)
		w.reset()
		h.ServeHTTP(w, req)
		if w.status != http.StatusCreated {
			b.Fatalf("create %d: status %d", i, w.status)
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGetManagedCluster10k: GET of random clusters among 10,000, through the handler.
// Reports CPU per call and the heap each cluster costs (measured while creating them).
func BenchmarkGetManagedCluster10k(b *testing.B) {
	sim, tok := benchSim(b)
	h := sim.Handler()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	createBenchClusters(b, h, tok, benchClusters)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perCluster := float64(after.HeapAlloc-before.HeapAlloc) / benchClusters

	paths := make([]string, benchClusters)
	for i := range paths {
		paths[i] = clusterPath((i * 7919) % benchClusters) // spread over the key space
	}
	req := httptest.NewRequest(http.MethodGet, "https://example.com"+paths[0]+"?api-version=2025-02-01", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	w := &discard{h: http.Header{}}

	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		req.URL.Path = paths[i%benchClusters]
		w.reset()
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("GET %s: %d", req.URL.Path, w.status)
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(perCluster, "B/cluster")
	b.ReportMetric(float64(w.n), "resp-bytes")
	runtime.KeepAlive(sim)
}

// BenchmarkCreateManagedCluster: PUT of a new cluster through the handler.
func BenchmarkCreateManagedCluster(b *testing.B) {
	sim, tok := benchSim(b)
	h := sim.Handler()
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		req := httptest.NewRequest(http.MethodPut, "https://example.com"+clusterPath(i)+"?api-version=2025-02-01", bytes.NewReader(benchBody))
		req.Header.Set("Authorization", "Bearer "+tok)
		w.reset()
		h.ServeHTTP(w, req)
		if w.status != http.StatusCreated {
			b.Fatalf("create %d: status %d", i, w.status)
		}
	}
}
