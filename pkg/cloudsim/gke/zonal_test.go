package gke_test

import (
	"testing"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// TestZonalMethods checks that the older projects.zones.* methods reach the same state as the
// projects.locations.* ones.
func TestZonalMethods(t *testing.T) {
	clock := simcore.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ts := gke.NewTestServer(t, gke.Options{Delay: time.Second, Clock: clock})
	svc := newService(t, ts, saEmail, project)
	ctx := t.Context()
	zc := svc.Projects.Zones.Clusters
	const zone = "us-west1-a"

	op, err := zc.Create(project, zone, &container.CreateClusterRequest{Cluster: &container.Cluster{Name: "zonal", InitialNodeCount: 2}}).Context(ctx).Do()
	if err != nil {
		t.Fatalf("zones.clusters.create: %v", err)
	}
	clock.Advance(time.Second)
	if got, err := svc.Projects.Zones.Operations.Get(project, zone, op.Name).Context(ctx).Do(); err != nil || got.Status != "DONE" {
		t.Fatalf("zones.operations.get = %+v, %v", got, err)
	}
	c, err := zc.Get(project, zone, "zonal").Context(ctx).Do()
	if err != nil || c.Status != "RUNNING" || len(c.Locations) != 1 || c.NodePools[0].Name != "default-pool" {
		t.Fatalf("zones.clusters.get = %+v, %v", c, err)
	}

	steps := []struct {
		name string
		call func() (*container.Operation, error)
	}{
		{"resource labels", func() (*container.Operation, error) {
			return zc.ResourceLabels(project, zone, "zonal", &container.SetLabelsRequest{
				ResourceLabels: map[string]string{"k": "v"}, LabelFingerprint: c.LabelFingerprint}).Context(ctx).Do()
		}},
		{"set size", func() (*container.Operation, error) {
			return zc.NodePools.SetSize(project, zone, "zonal", "default-pool", &container.SetNodePoolSizeRequest{NodeCount: 4}).Context(ctx).Do()
		}},
		{"autoscaling", func() (*container.Operation, error) {
			return zc.NodePools.Autoscaling(project, zone, "zonal", "default-pool", &container.SetNodePoolAutoscalingRequest{
				Autoscaling: &container.NodePoolAutoscaling{Enabled: true, MinNodeCount: 2, MaxNodeCount: 6}}).Context(ctx).Do()
		}},
		{"pool update", func() (*container.Operation, error) {
			return zc.NodePools.Update(project, zone, "zonal", "default-pool", &container.UpdateNodePoolRequest{
				Labels: &container.NodeLabels{Labels: map[string]string{"tier": "gold"}}}).Context(ctx).Do()
		}},
	}
	for _, st := range steps {
		if _, err := st.call(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		clock.Advance(time.Second)
	}
	st, ok := ts.Cluster(project, zone, "zonal")
	np := st.Cluster.NodePools[0]
	if !ok || st.Cluster.ResourceLabels["k"] != "v" || np.InitialNodeCount != 4 || np.Autoscaling.MaxNodeCount != 6 || np.Config.Labels["tier"] != "gold" {
		t.Fatalf("cluster after zonal changes = %+v, pool %+v", st.Cluster, np)
	}
}
