package gke_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"
	"google.golang.org/api/googleapi"

	"github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// TestLifecycle drives a cluster through every supported change with the real client and reads
// each change back once its operation is DONE. A manual clock keeps each operation running while
// the test looks at it, however slowly the test runs (-race on a busy machine).
func TestLifecycle(t *testing.T) {
	clock := simcore.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ts := gke.NewTestServer(t, gke.Options{Delay: time.Minute, Clock: clock})
	svc := newService(t, ts, saEmail, project)
	rt := &retrier{}
	finishOp := func(t *testing.T, op *container.Operation) *container.Operation {
		t.Helper()
		clock.Advance(time.Minute)
		return waitOp(t, svc, rt, region, op)
	}
	ctx := t.Context()
	clusters := svc.Projects.Locations.Clusters

	op, err := clusters.Create(parent(region), &container.CreateClusterRequest{Cluster: &container.Cluster{
		Name:                  "fleet-a",
		InitialClusterVersion: "1.33",
		ResourceLabels:        map[string]string{"env": "dev"},
		NodePools: []*container.NodePool{{
			Name:             "pool-a",
			InitialNodeCount: 2,
			Config:           &container.NodeConfig{MachineType: "e2-standard-4", Labels: map[string]string{"role": "web"}},
		}},
	}}).Context(ctx).Do()
	if err != nil {
		t.Fatalf("clusters.create: %v", err)
	}
	if op.OperationType != "CREATE_CLUSTER" || op.Status != "PENDING" || !strings.HasPrefix(op.Name, "operation-") {
		t.Fatalf("create returned %+v, want a PENDING CREATE_CLUSTER operation", op)
	}
	if c := getCluster(t, svc, rt, region, "fleet-a"); c.Status != "PROVISIONING" || c.NodePools[0].Status != "PROVISIONING" {
		t.Fatalf("cluster status during create = %s / pool %s, want PROVISIONING", c.Status, c.NodePools[0].Status)
	}
	done := finishOp(t, op)
	if done.EndTime == "" || !strings.HasSuffix(done.TargetLink, "/clusters/fleet-a") {
		t.Errorf("finished operation = %+v, want endTime and the cluster as target", done)
	}
	c := getCluster(t, svc, rt, region, "fleet-a")
	if c.Status != "RUNNING" || c.CurrentMasterVersion != "1.33.5-gke.1162000" || c.InitialClusterVersion != c.CurrentMasterVersion ||
		c.CurrentNodeVersion != c.CurrentMasterVersion || c.Location != region || len(c.Locations) != 3 ||
		c.LoggingService != "logging.googleapis.com/kubernetes" || c.Endpoint == "" || c.SelfLink == "" ||
		c.CreateTime == "" || c.LabelFingerprint == "" || c.MasterAuth == nil || c.MasterAuth.ClusterCaCertificate == "" {
		t.Fatalf("created cluster = %+v", c)
	}
	if np := c.NodePools[0]; np.Status != "RUNNING" || np.Version != c.CurrentMasterVersion || np.InitialNodeCount != 2 ||
		np.Config.MachineType != "e2-standard-4" || np.Config.Labels["role"] != "web" || !np.Management.AutoRepair {
		t.Fatalf("created pool = %+v", np)
	}
	if n := ts.Counters().Get("token"); n < 1 {
		t.Fatalf("token endpoint called %d times, want the SDK to fetch a token there", n)
	}

	pools := clusters.NodePools
	steps := []struct {
		name  string
		do    func(c *container.Cluster) (*container.Operation, error)
		check func(c *container.Cluster) error
	}{
		{
			name: "master version",
			do: func(*container.Cluster) (*container.Operation, error) {
				return clusters.Update(clusterPath(region, "fleet-a"), &container.UpdateClusterRequest{
					Update: &container.ClusterUpdate{DesiredMasterVersion: "1.34"}}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				return want("currentMasterVersion", c.CurrentMasterVersion, "1.34.1-gke.1431000")
			},
		},
		{
			name: "logging service",
			do: func(*container.Cluster) (*container.Operation, error) {
				return clusters.Update(clusterPath(region, "fleet-a"), &container.UpdateClusterRequest{
					Update: &container.ClusterUpdate{DesiredLoggingService: "none"}}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error { return want("loggingService", c.LoggingService, "none") },
		},
		{
			name: "monitoring service",
			do: func(*container.Cluster) (*container.Operation, error) {
				return clusters.SetMonitoring(clusterPath(region, "fleet-a"), &container.SetMonitoringServiceRequest{
					MonitoringService: "none"}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error { return want("monitoringService", c.MonitoringService, "none") },
		},
		{
			name: "master authorized networks",
			do: func(*container.Cluster) (*container.Operation, error) {
				return clusters.Update(clusterPath(region, "fleet-a"), &container.UpdateClusterRequest{
					Update: &container.ClusterUpdate{DesiredMasterAuthorizedNetworksConfig: &container.MasterAuthorizedNetworksConfig{
						Enabled:    true,
						CidrBlocks: []*container.CidrBlock{{DisplayName: "office", CidrBlock: "203.0.113.0/24"}, {CidrBlock: "198.51.100.7/32"}},
					}}}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				m := c.MasterAuthorizedNetworksConfig
				if m == nil || !m.Enabled || len(m.CidrBlocks) != 2 || m.CidrBlocks[0].DisplayName != "office" || m.CidrBlocks[1].CidrBlock != "198.51.100.7/32" {
					return fmt.Errorf("masterAuthorizedNetworksConfig = %+v", m)
				}
				return nil
			},
		},
		{
			name: "locations",
			do: func(*container.Cluster) (*container.Operation, error) {
				return clusters.Update(clusterPath(region, "fleet-a"), &container.UpdateClusterRequest{
					Update: &container.ClusterUpdate{DesiredLocations: []string{"us-central1-a", "us-central1-f"}}}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				if !slices.Equal(c.Locations, []string{"us-central1-a", "us-central1-f"}) || !slices.Equal(c.NodePools[0].Locations, c.Locations) {
					return fmt.Errorf("locations = %v, pool locations %v", c.Locations, c.NodePools[0].Locations)
				}
				return want("currentNodeCount", c.CurrentNodeCount, int64(4))
			},
		},
		{
			name: "resource labels",
			do: func(c *container.Cluster) (*container.Operation, error) {
				return clusters.SetResourceLabels(clusterPath(region, "fleet-a"), &container.SetLabelsRequest{
					ResourceLabels:   map[string]string{"env": "prod", "team": "fleet"},
					LabelFingerprint: c.LabelFingerprint}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				if len(c.ResourceLabels) != 2 || c.ResourceLabels["env"] != "prod" || c.ResourceLabels["team"] != "fleet" {
					return fmt.Errorf("resourceLabels = %v", c.ResourceLabels)
				}
				return nil
			},
		},
		{
			name: "node pool create",
			do: func(*container.Cluster) (*container.Operation, error) {
				return pools.Create(clusterPath(region, "fleet-a"), &container.CreateNodePoolRequest{NodePool: &container.NodePool{
					Name:             "pool-b",
					InitialNodeCount: 1,
					Version:          "1.33.5-gke.1162000",
					Config: &container.NodeConfig{
						DiskSizeGb: 50, Preemptible: true,
						Taints: []*container.NodeTaint{{Key: "dedicated", Value: "batch", Effect: "NO_SCHEDULE"}},
					},
					MaxPodsConstraint: &container.MaxPodsConstraint{MaxPodsPerNode: 64},
				}}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				np := findPool(c, "pool-b")
				if np == nil || np.Status != "RUNNING" || np.Version != "1.33.5-gke.1162000" || np.Config.DiskSizeGb != 50 ||
					!np.Config.Preemptible || len(np.Config.Taints) != 1 || np.MaxPodsConstraint.MaxPodsPerNode != 64 {
					return fmt.Errorf("pool-b = %+v", np)
				}
				return want("currentNodeVersion", c.CurrentNodeVersion, "1.33.5-gke.1162000")
			},
		},
		{
			name: "set size",
			do: func(*container.Cluster) (*container.Operation, error) {
				return pools.SetSize(poolPath(region, "fleet-a", "pool-b"), &container.SetNodePoolSizeRequest{NodeCount: 5}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				return want("pool-b size", findPool(c, "pool-b").InitialNodeCount, int64(5))
			},
		},
		{
			name: "set autoscaling",
			do: func(*container.Cluster) (*container.Operation, error) {
				return pools.SetAutoscaling(poolPath(region, "fleet-a", "pool-b"), &container.SetNodePoolAutoscalingRequest{
					Autoscaling: &container.NodePoolAutoscaling{Enabled: true, MinNodeCount: 1, MaxNodeCount: 7}}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				a := findPool(c, "pool-b").Autoscaling
				if a == nil || !a.Enabled || a.MinNodeCount != 1 || a.MaxNodeCount != 7 {
					return fmt.Errorf("autoscaling = %+v", a)
				}
				return nil
			},
		},
		{
			name: "set management",
			do: func(*container.Cluster) (*container.Operation, error) {
				return pools.SetManagement(poolPath(region, "fleet-a", "pool-b"), &container.SetNodePoolManagementRequest{
					Management: &container.NodeManagement{AutoUpgrade: false, AutoRepair: true}}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				m := findPool(c, "pool-b").Management
				if m == nil || m.AutoUpgrade || !m.AutoRepair {
					return fmt.Errorf("management = %+v", m)
				}
				return nil
			},
		},
		{
			name: "pool version",
			do: func(*container.Cluster) (*container.Operation, error) {
				return pools.Update(poolPath(region, "fleet-a", "pool-b"), &container.UpdateNodePoolRequest{
					NodeVersion: "1.34.1-gke.1431000", ImageType: "UBUNTU_CONTAINERD"}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				np := findPool(c, "pool-b")
				if np.Version != "1.34.1-gke.1431000" || np.Config.ImageType != "UBUNTU_CONTAINERD" {
					return fmt.Errorf("pool-b version %s image %s", np.Version, np.Config.ImageType)
				}
				return nil
			},
		},
		{
			name: "pool version through cluster update",
			do: func(*container.Cluster) (*container.Operation, error) {
				return clusters.Update(clusterPath(region, "fleet-a"), &container.UpdateClusterRequest{
					Update: &container.ClusterUpdate{DesiredNodeVersion: "-", DesiredNodePoolId: "pool-a"}}).Context(ctx).Do()
			},
			check: func(c *container.Cluster) error {
				return want("pool-a version", findPool(c, "pool-a").Version, "1.34.1-gke.1431000")
			},
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := getCluster(t, svc, rt, region, "fleet-a")
			op, err := st.do(before)
			if err != nil {
				t.Fatalf("mutation: %v", err)
			}
			during := getCluster(t, svc, rt, region, "fleet-a")
			if during.Status != "RECONCILING" {
				t.Errorf("cluster status while %s runs = %s, want RECONCILING", op.OperationType, during.Status)
			}
			finishOp(t, op)
			after := getCluster(t, svc, rt, region, "fleet-a")
			if after.Status != "RUNNING" {
				t.Errorf("cluster status after %s = %s, want RUNNING", op.OperationType, after.Status)
			}
			if err := st.check(after); err != nil {
				t.Error(err)
			}
		})
	}

	// Operations are listed in the order they started.
	list, err := svc.Projects.Locations.Operations.List(parent(region)).Context(ctx).Do()
	if err != nil {
		t.Fatalf("operations.list: %v", err)
	}
	if len(list.Operations) != len(steps)+1 || list.Operations[0].OperationType != "CREATE_CLUSTER" {
		t.Errorf("operations.list returned %d operations, want %d starting with CREATE_CLUSTER", len(list.Operations), len(steps)+1)
	}

	t.Run("delete pool", func(t *testing.T) {
		op, err := pools.Delete(poolPath(region, "fleet-a", "pool-b")).Context(ctx).Do()
		if err != nil {
			t.Fatalf("nodePools.delete: %v", err)
		}
		np, err := pools.Get(poolPath(region, "fleet-a", "pool-b")).Context(ctx).Do()
		if err != nil || np.Status != "STOPPING" {
			t.Fatalf("pool during delete = %+v, %v; want STOPPING", np, err)
		}
		finishOp(t, op)
		_, err = pools.Get(poolPath(region, "fleet-a", "pool-b")).Context(ctx).Do()
		if code, status := apiStatus(err); code != http.StatusNotFound || status != "NOT_FOUND" {
			t.Fatalf("deleted pool get: %v, want 404 NOT_FOUND", err)
		}
	})

	t.Run("delete cluster", func(t *testing.T) {
		op, err := clusters.Delete(clusterPath(region, "fleet-a")).Context(ctx).Do()
		if err != nil {
			t.Fatalf("clusters.delete: %v", err)
		}
		if c := getCluster(t, svc, rt, region, "fleet-a"); c.Status != "STOPPING" {
			t.Fatalf("cluster status during delete = %s, want STOPPING", c.Status)
		}
		if done := finishOp(t, op); done.OperationType != "DELETE_CLUSTER" {
			t.Fatalf("delete operation type = %s", done.OperationType)
		}
		_, err = clusters.Get(clusterPath(region, "fleet-a")).Context(ctx).Do()
		var herr *googleapi.Error
		if !errors.As(err, &herr) || herr.Code != http.StatusNotFound {
			t.Fatalf("deleted cluster get: %v, want a 404 *googleapi.Error", err)
		}
		if !strings.Contains(herr.Message, "Not found: projects/drover-test/locations/us-central1/clusters/fleet-a") {
			t.Errorf("404 message = %q", herr.Message)
		}
		if n := ts.ClusterCount(); n != 0 {
			t.Errorf("ClusterCount = %d after delete", n)
		}
	})
}

func want[T comparable](field string, got, wantValue T) error {
	if got != wantValue {
		return fmt.Errorf("%s = %v, want %v", field, got, wantValue)
	}
	return nil
}

// TestConcurrentMutationIsRefused checks GKE's one-operation-per-cluster rule, with a manual
// clock so that the operation cannot end while the test looks at it.
func TestConcurrentMutationIsRefused(t *testing.T) {
	clock := simcore.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ts := gke.NewTestServer(t, gke.Options{Delay: time.Minute, Clock: clock})
	svc := newService(t, ts, saEmail, project)
	ctx := t.Context()
	clusters := svc.Projects.Locations.Clusters
	pools := clusters.NodePools
	name := clusterPath("europe-west1-b", "busy")

	if _, err := clusters.Create(parent("europe-west1-b"), &container.CreateClusterRequest{Cluster: &container.Cluster{
		Name: "busy", InitialNodeCount: 3}}).Context(ctx).Do(); err != nil {
		t.Fatalf("clusters.create: %v", err)
	}
	// Even a node pool change is refused while the cluster is being created.
	_, err := pools.SetSize(name+"/nodePools/default-pool", &container.SetNodePoolSizeRequest{NodeCount: 1}).Context(ctx).Do()
	if code, status := apiStatus(err); code != http.StatusBadRequest || status != "FAILED_PRECONDITION" {
		t.Fatalf("setSize during create: %v, want 400 FAILED_PRECONDITION", err)
	}
	clock.Advance(time.Minute)

	op, err := clusters.Update(name, &container.UpdateClusterRequest{Update: &container.ClusterUpdate{DesiredMasterVersion: "1.34"}}).Context(ctx).Do()
	if err != nil {
		t.Fatalf("clusters.update: %v", err)
	}
	if op.OperationType != "UPGRADE_MASTER" {
		t.Errorf("operation type = %s, want UPGRADE_MASTER", op.OperationType)
	}
	st, ok := ts.Cluster(project, "europe-west1-b", "busy")
	if !ok || st.Cluster.Status != "RECONCILING" || st.Operation != op.Name || st.Cluster.CurrentMasterVersion != "1.33.5-gke.1162000" {
		t.Fatalf("cluster during upgrade = %+v (operation %q), want RECONCILING on the old version", st.Cluster, st.Operation)
	}

	second := []struct {
		name string
		call func() error
	}{
		{"labels", func() error {
			_, err := clusters.SetResourceLabels(name, &container.SetLabelsRequest{
				ResourceLabels: map[string]string{"a": "b"}, LabelFingerprint: st.Cluster.LabelFingerprint}).Context(ctx).Do()
			return err
		}},
		{"pool create", func() error {
			_, err := pools.Create(name, &container.CreateNodePoolRequest{NodePool: &container.NodePool{Name: "extra", InitialNodeCount: 1}}).Context(ctx).Do()
			return err
		}},
		{"delete", func() error { _, err := clusters.Delete(name).Context(ctx).Do(); return err }},
	}
	for _, tc := range second {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var herr *googleapi.Error
			if !errors.As(err, &herr) || herr.Code != http.StatusBadRequest {
				t.Fatalf("second mutation: %v, want a 400 *googleapi.Error", err)
			}
			if wantMsg := "Cluster is running incompatible operation " + op.Name + "."; herr.Message != wantMsg {
				t.Errorf("message = %q, want %q", herr.Message, wantMsg)
			}
			if _, status := apiStatus(err); status != "FAILED_PRECONDITION" || !strings.Contains(herr.Body, "CLUSTER_ALREADY_HAS_OPERATION") {
				t.Errorf("body = %s, want FAILED_PRECONDITION with reason CLUSTER_ALREADY_HAS_OPERATION", herr.Body)
			}
		})
	}

	clock.Advance(time.Minute)
	got, err := svc.Projects.Locations.Operations.Get(parent("europe-west1-b") + "/operations/" + op.Name).Context(ctx).Do()
	if err != nil || got.Status != "DONE" {
		t.Fatalf("operation after the delay = %+v, %v; want DONE", got, err)
	}
	c, err := clusters.Get(name).Context(ctx).Do()
	if err != nil || c.Status != "RUNNING" || c.CurrentMasterVersion != "1.34.1-gke.1431000" {
		t.Fatalf("cluster after upgrade = %+v, %v", c, err)
	}
	if _, err := clusters.SetResourceLabels(name, &container.SetLabelsRequest{
		ResourceLabels: map[string]string{"a": "b"}, LabelFingerprint: c.LabelFingerprint}).Context(ctx).Do(); err != nil {
		t.Fatalf("mutation after the operation ended: %v", err)
	}
}

// TestFailedOperation checks that an injected failure surfaces as GKE reports it: the
// operation is DONE with an error and a failed create leaves the cluster in ERROR.
func TestFailedOperation(t *testing.T) {
	clock := simcore.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ts := gke.NewTestServer(t, gke.Options{Delay: time.Second, Clock: clock})
	svc := newService(t, ts, saEmail, project)
	ctx := t.Context()
	clusters := svc.Projects.Locations.Clusters

	if _, err := clusters.Create(parent(region), &container.CreateClusterRequest{Cluster: &container.Cluster{
		Name: "flaky", InitialNodeCount: 1}}).Context(ctx).Do(); err != nil {
		t.Fatalf("clusters.create: %v", err)
	}
	clock.Advance(time.Second)
	if !ts.FailNextOperation(project, region, "flaky", "Insufficient regional quota to satisfy request.") {
		t.Fatal("FailNextOperation: cluster not found")
	}
	op, err := clusters.SetLogging(clusterPath(region, "flaky"), &container.SetLoggingServiceRequest{LoggingService: "none"}).Context(ctx).Do()
	if err != nil {
		t.Fatalf("setLogging: %v", err)
	}
	clock.Advance(time.Second)
	got, ok := ts.Operation(project, region, op.Name)
	if !ok || got.Status != "DONE" || got.Error == nil || got.Error.Message != "Insufficient regional quota to satisfy request." {
		t.Fatalf("failed operation = %+v", got)
	}
	c, err := clusters.Get(clusterPath(region, "flaky")).Context(ctx).Do()
	if err != nil || c.Status != "RUNNING" || c.LoggingService != "logging.googleapis.com/kubernetes" {
		t.Fatalf("cluster after a failed update = %+v, %v; want RUNNING and unchanged", c, err)
	}
}
