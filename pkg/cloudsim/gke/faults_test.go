package gke_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// TestLifecycleUnderThrottling runs a lifecycle while 30% of all calls (token fetches included)
// are throttled. The SDK retries none of them (container/v1 sends every call once through
// gensupport.SendRequest), so the test backs off like drover will; the counters see every try.
func TestLifecycleUnderThrottling(t *testing.T) {
	faults := simcore.NewFaults(simcore.FaultConfig{Throttle: 0.3, Seed: 2})
	ts := gke.NewTestServer(t, gke.Options{Delay: 20 * time.Millisecond, Faults: faults})
	svc := newService(t, ts, saEmail, project)
	rt := &retrier{}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	clusters := svc.Projects.Locations.Clusters
	pools := clusters.NodePools
	name := clusterPath("us-east1-b", "throttled")

	mutations := []struct {
		name string
		call func() (*container.Operation, error)
	}{
		{"create", func() (*container.Operation, error) {
			return clusters.Create(parent("us-east1-b"), &container.CreateClusterRequest{Cluster: &container.Cluster{
				Name: "throttled", NodePools: []*container.NodePool{{Name: "pool-a", InitialNodeCount: 1}}}}).Context(ctx).Do()
		}},
		{"upgrade", func() (*container.Operation, error) {
			return clusters.Update(name, &container.UpdateClusterRequest{Update: &container.ClusterUpdate{DesiredMasterVersion: "latest"}}).Context(ctx).Do()
		}},
		{"pool create", func() (*container.Operation, error) {
			return pools.Create(name, &container.CreateNodePoolRequest{NodePool: &container.NodePool{Name: "pool-b", InitialNodeCount: 2}}).Context(ctx).Do()
		}},
		{"resize", func() (*container.Operation, error) {
			return pools.SetSize(name+"/nodePools/pool-b", &container.SetNodePoolSizeRequest{NodeCount: 4}).Context(ctx).Do()
		}},
		{"pool delete", func() (*container.Operation, error) {
			return pools.Delete(name + "/nodePools/pool-a").Context(ctx).Do()
		}},
	}
	for _, m := range mutations {
		var op *container.Operation
		if err := rt.do(ctx, func() (err error) { op, err = m.call(); return err }); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		waitOp(t, svc, rt, "us-east1-b", op)
	}
	c := getCluster(t, svc, rt, "us-east1-b", "throttled")
	if c.CurrentMasterVersion != "1.34.1-gke.1431000" || len(c.NodePools) != 1 || c.NodePools[0].InitialNodeCount != 4 {
		t.Fatalf("cluster after the throttled lifecycle = version %s, pools %+v", c.CurrentMasterVersion, c.NodePools)
	}
	var op *container.Operation
	if err := rt.do(ctx, func() (err error) { op, err = clusters.Delete(name).Context(ctx).Do(); return err }); err != nil {
		t.Fatalf("delete: %v", err)
	}
	waitOp(t, svc, rt, "us-east1-b", op)
	err := rt.do(ctx, func() error { _, err := clusters.Get(name).Context(ctx).Do(); return err })
	if code, _ := apiStatus(err); code != http.StatusNotFound {
		t.Fatalf("get after delete: %v, want 404", err)
	}

	counts := ts.Counters().Snapshot()
	var apiCalls int64
	for op, n := range counts {
		if op != "token" {
			apiCalls += n
		}
	}
	if rt.retries.Load() == 0 {
		t.Fatal("no call was throttled; the fault injection did not work")
	}
	// Seed 2 throttles the first draw, which is the SDK's token fetch: the auth library does
	// not retry it either, so the second try gets the token.
	if counts["token"] < 2 {
		t.Errorf("token endpoint called %d times, want a throttled fetch and its retry", counts["token"])
	}
	// Every try that reached the API, the throttled ones included, is counted.
	if apiCalls != rt.attempts.Load() {
		t.Fatalf("counters %v record %d API calls, the client made %d", counts, apiCalls, rt.attempts.Load())
	}
	t.Logf("%d retries; counters %v", rt.retries.Load(), counts)
}

// TestFaultKinds checks the wire shape of each injected fault.
func TestFaultKinds(t *testing.T) {
	tests := []struct {
		name       string
		cfg        simcore.FaultConfig
		wantCode   int
		wantStatus string
	}{
		{"throttle", simcore.FaultConfig{Throttle: 1, Operations: []string{"clusters.list"}}, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"},
		{"server error", simcore.FaultConfig{ServerError: 1, Operations: []string{"clusters.list"}}, 0, ""},
		{"drop", simcore.FaultConfig{Drop: 1, Operations: []string{"clusters.list"}}, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := gke.NewTestServer(t, gke.Options{Faults: simcore.NewFaults(tt.cfg)})
			svc := newService(t, ts, saEmail, project)
			_, err := svc.Projects.Locations.Clusters.List(parent("-")).Context(t.Context()).Do()
			code, status := apiStatus(err)
			switch tt.wantCode {
			case -1:
				if err == nil || code != 0 {
					t.Fatalf("dropped call: %v, want a transport error", err)
				}
			case 0:
				if (code != http.StatusServiceUnavailable || status != "UNAVAILABLE") && (code != http.StatusInternalServerError || status != "INTERNAL") {
					t.Fatalf("5xx call: %v, want 503 UNAVAILABLE or 500 INTERNAL", err)
				}
			default:
				if code != tt.wantCode || status != tt.wantStatus || !strings.Contains(err.Error(), "rateLimitExceeded") {
					t.Fatalf("throttled call: %v, want %d %s", err, tt.wantCode, tt.wantStatus)
				}
			}
			if n := ts.Counters().Get("clusters.list"); n < 1 {
				t.Fatalf("clusters.list counted %d times", n)
			}
		})
	}
}
