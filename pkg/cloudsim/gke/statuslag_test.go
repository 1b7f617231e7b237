package gke_test

import (
	"strings"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// TestStatusLag: with Options.StatusLag the cluster and its pools stay RUNNING for a while after
// an update starts, and only operations.list (and operations.get) show the operation then.
func TestStatusLag(t *testing.T) {
	clock := simcore.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	const lag = 10 * time.Second
	ts := gke.NewTestServer(t, gke.Options{Delay: time.Minute, Clock: clock, StatusLag: lag})
	svc := newService(t, ts, saEmail, project)
	ctx := t.Context()
	clusters := svc.Projects.Locations.Clusters
	loc := "europe-west1-b"
	name := clusterPath(loc, "laggy")
	if _, err := clusters.Create(parent(loc), &container.CreateClusterRequest{Cluster: &container.Cluster{Name: "laggy", InitialNodeCount: 3}}).Context(ctx).Do(); err != nil {
		t.Fatalf("clusters.create: %v", err)
	}
	clock.Advance(time.Minute)

	statuses := func() (string, string) {
		t.Helper()
		c, err := clusters.Get(name).Context(ctx).Do()
		if err != nil {
			t.Fatalf("clusters.get: %v", err)
		}
		return c.Status, findPool(c, "default-pool").Status
	}
	running := func(what string) *container.Operation {
		t.Helper()
		list, err := svc.Projects.Locations.Operations.List(parent(loc)).Context(ctx).Do()
		if err != nil {
			t.Fatalf("operations.list: %v", err)
		}
		var found *container.Operation
		for _, op := range list.Operations {
			if op.Status != "DONE" {
				if found != nil {
					t.Fatalf("%s: two operations running", what)
				}
				found = op
			}
		}
		return found
	}

	op, err := clusters.NodePools.SetSize(name+"/nodePools/default-pool", &container.SetNodePoolSizeRequest{NodeCount: 5}).Context(ctx).Do()
	if err != nil {
		t.Fatalf("setSize: %v", err)
	}
	if c, p := statuses(); c != "RUNNING" || p != "RUNNING" {
		t.Fatalf("right after setSize: cluster %s pool %s, want both RUNNING during the lag", c, p)
	}
	if got := running("during the lag"); got == nil || got.Name != op.Name || !strings.HasSuffix(got.TargetLink, "/clusters/laggy/nodePools/default-pool") {
		t.Fatalf("operations.list during the lag: running %+v, want %s targeting the pool", got, op.Name)
	}
	clock.Advance(lag)
	if c, p := statuses(); c != "RECONCILING" || p != "RECONCILING" {
		t.Fatalf("after the lag: cluster %s pool %s, want both RECONCILING", c, p)
	}
	clock.Advance(time.Minute)
	if c, p := statuses(); c != "RUNNING" || p != "RUNNING" {
		t.Fatalf("after the operation: cluster %s pool %s, want RUNNING", c, p)
	}
	if got := running("after the operation"); got != nil {
		t.Fatalf("operation %s still running", got.Name)
	}
}
