package gke_test

import (
	"context"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// TestValidation checks that invalid requests get GKE's error codes and leave state alone.
func TestValidation(t *testing.T) {
	clock := simcore.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ts := gke.NewTestServer(t, gke.Options{Delay: time.Second, Clock: clock})
	svc := newService(t, ts, saEmail, project)
	ctx := t.Context()
	clusters := svc.Projects.Locations.Clusters
	pools := clusters.NodePools
	base := clusterPath(region, "base")
	if _, err := clusters.Create(parent(region), &container.CreateClusterRequest{Cluster: &container.Cluster{
		Name: "base", InitialClusterVersion: "1.32",
		NodePools: []*container.NodePool{{Name: "pool-a", InitialNodeCount: 1}}}}).Context(ctx).Do(); err != nil {
		t.Fatalf("clusters.create: %v", err)
	}
	clock.Advance(time.Second)

	create := func(c *container.Cluster) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := clusters.Create(parent(region), &container.CreateClusterRequest{Cluster: c}).Context(ctx).Do()
			return err
		}
	}
	update := func(u *container.ClusterUpdate) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := clusters.Update(base, &container.UpdateClusterRequest{Update: u}).Context(ctx).Do()
			return err
		}
	}
	onePool := []*container.NodePool{{Name: "p", InitialNodeCount: 1}}
	tests := []struct {
		name       string
		call       func(context.Context) error
		wantCode   int
		wantStatus string
	}{
		{"missing name", create(&container.Cluster{NodePools: onePool}), 400, "INVALID_ARGUMENT"},
		{"invalid name", create(&container.Cluster{Name: "Bad_Name", NodePools: onePool}), 400, "INVALID_ARGUMENT"},
		{"duplicate cluster", create(&container.Cluster{Name: "base", NodePools: onePool}), 409, "ALREADY_EXISTS"},
		{"unsupported version", create(&container.Cluster{Name: "c1", InitialClusterVersion: "1.99", NodePools: onePool}), 400, "INVALID_ARGUMENT"},
		{"no node pools", create(&container.Cluster{Name: "c2"}), 400, "INVALID_ARGUMENT"},
		{"duplicate pool in create", create(&container.Cluster{Name: "c3", NodePools: []*container.NodePool{{Name: "p"}, {Name: "p"}}}), 400, "INVALID_ARGUMENT"},
		{"zone outside region", create(&container.Cluster{Name: "c4", Locations: []string{"europe-west1-b"}, NodePools: onePool}), 400, "INVALID_ARGUMENT"},
		{"invalid label key", create(&container.Cluster{Name: "c5", ResourceLabels: map[string]string{"Env": "x"}, NodePools: onePool}), 400, "INVALID_ARGUMENT"},
		{"legacy logging", create(&container.Cluster{Name: "c6", LoggingService: "logging.googleapis.com", NodePools: onePool}), 400, "INVALID_ARGUMENT"},
		{"master downgrade", update(&container.ClusterUpdate{DesiredMasterVersion: "1.31"}), 400, "INVALID_ARGUMENT"},
		{"master skips a minor", update(&container.ClusterUpdate{DesiredMasterVersion: "1.34"}), 400, "INVALID_ARGUMENT"},
		{"node newer than master", update(&container.ClusterUpdate{DesiredNodeVersion: "1.33", DesiredNodePoolId: "pool-a"}), 400, "INVALID_ARGUMENT"},
		{"two updates at once", update(&container.ClusterUpdate{DesiredLoggingService: "none", DesiredMonitoringService: "none"}), 400, "INVALID_ARGUMENT"},
		{"empty update", update(&container.ClusterUpdate{}), 400, "INVALID_ARGUMENT"},
		{"invalid CIDR", update(&container.ClusterUpdate{DesiredMasterAuthorizedNetworksConfig: &container.MasterAuthorizedNetworksConfig{
			Enabled: true, CidrBlocks: []*container.CidrBlock{{CidrBlock: "10.0.0.1/8"}}}}), 400, "INVALID_ARGUMENT"},
		{"autoscaling min above max", func(ctx context.Context) error {
			_, err := pools.SetAutoscaling(base+"/nodePools/pool-a", &container.SetNodePoolAutoscalingRequest{
				Autoscaling: &container.NodePoolAutoscaling{Enabled: true, MinNodeCount: 5, MaxNodeCount: 3}}).Context(ctx).Do()
			return err
		}, 400, "INVALID_ARGUMENT"},
		{"duplicate pool", func(ctx context.Context) error {
			_, err := pools.Create(base, &container.CreateNodePoolRequest{NodePool: &container.NodePool{Name: "pool-a"}}).Context(ctx).Do()
			return err
		}, 409, "ALREADY_EXISTS"},
		{"pool newer than master", func(ctx context.Context) error {
			_, err := pools.Create(base, &container.CreateNodePoolRequest{NodePool: &container.NodePool{Name: "new", Version: "1.33"}}).Context(ctx).Do()
			return err
		}, 400, "INVALID_ARGUMENT"},
		{"pool version newer than master", func(ctx context.Context) error {
			_, err := pools.Update(base+"/nodePools/pool-a", &container.UpdateNodePoolRequest{NodeVersion: "latest"}).Context(ctx).Do()
			return err
		}, 400, "INVALID_ARGUMENT"},
		{"stale label fingerprint", func(ctx context.Context) error {
			_, err := clusters.SetResourceLabels(base, &container.SetLabelsRequest{ResourceLabels: map[string]string{"a": "b"}}).Context(ctx).Do()
			return err
		}, 400, "FAILED_PRECONDITION"},
		{"unknown cluster", func(ctx context.Context) error {
			_, err := clusters.Get(clusterPath(region, "nope")).Context(ctx).Do()
			return err
		}, 404, "NOT_FOUND"},
		{"unknown pool", func(ctx context.Context) error {
			_, err := pools.SetSize(base+"/nodePools/nope", &container.SetNodePoolSizeRequest{NodeCount: 1}).Context(ctx).Do()
			return err
		}, 404, "NOT_FOUND"},
		{"unknown operation", func(ctx context.Context) error {
			_, err := svc.Projects.Locations.Operations.Get(parent(region) + "/operations/operation-1-x").Context(ctx).Do()
			return err
		}, 404, "NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(t.Context())
			if code, status := apiStatus(err); code != tt.wantCode || status != tt.wantStatus {
				t.Fatalf("got %v, want %d %s", err, tt.wantCode, tt.wantStatus)
			}
		})
	}

	// None of the refused requests started an operation or changed the cluster.
	st, ok := ts.Cluster(project, region, "base")
	if !ok || st.Operation != "" || st.Cluster.Status != "RUNNING" || st.Cluster.CurrentMasterVersion != "1.32.9-gke.1072000" ||
		len(st.Cluster.NodePools) != 1 || st.Cluster.NodePools[0].Version != "1.32.9-gke.1072000" {
		t.Fatalf("cluster after refused requests = %+v (operation %q)", st.Cluster, st.Operation)
	}
	if n := ts.ClusterCount(); n != 1 {
		t.Fatalf("ClusterCount = %d, want 1", n)
	}
}
