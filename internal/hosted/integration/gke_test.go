package integration

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	container "google.golang.org/api/container/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/gke"
)

// TestGKECreateUpdateEveryFieldAndDelete creates a cluster, changes every supported field one at
// a time (asserting the one API call it takes, the simulator's state and the Cluster's status),
// then deletes it.
func TestGKECreateUpdateEveryFieldAndDelete(t *testing.T) {
	t.Parallel()
	e := newGKEEnv(t)
	c := e.create(gkeCreated("life"))
	if c.Status.Phase != v1.PhaseActive || !condIs(c, hosted.CondSynced, metav1.ConditionTrue) {
		t.Fatalf("after create: phase %q conditions %+v", c.Status.Phase, c.Status.Conditions)
	}
	st := e.simCluster(t, "life").Cluster
	if !strings.HasPrefix(st.CurrentMasterVersion, "1.33.") || st.ResourceLabels["team"] != "platform" || len(st.NodePools) != 1 || st.NodePools[0].InitialNodeCount != 2 {
		t.Fatalf("simulator state after create: %+v", st)
	}
	up := c.Status.GKEStatus.UpstreamSpec
	if *up.KubernetesVersion != "1.33" || len(up.NodePools) != 1 || *up.NodePools[0].Version != "1.33" || len(up.Locations) != 3 {
		t.Fatalf("upstreamSpec after create: %+v", up)
	}
	// Every field of a created cluster is managed (non-nil), the zones GKE picked included.
	cfg := c.Spec.GKEConfig
	if cfg.LoggingService == nil || cfg.MasterAuthorizedNetworks == nil || !reflect.DeepEqual(cfg.Locations, up.Locations) ||
		cfg.MaintenanceWindow == nil || cfg.NodePools[0].Config == nil || cfg.NodePools[0].Config.MachineType == nil || cfg.NodePools[0].Management == nil {
		t.Fatalf("created cluster has unmanaged fields: %+v", cfg)
	}
	// The zones GKE picked are its default, not a change at the provider.
	if ev := e.events.find(hosted.EventAdopted); len(ev) > 0 {
		t.Errorf("provider defaults after create reported as adopted: %q", ev)
	}
	if ev := e.events.find(hosted.EventProviderDefault); len(ev) == 0 || !strings.Contains(ev[0], "gkeConfig.locations chosen by the provider at creation") {
		t.Errorf("ProviderDefault events %q, want one naming gkeConfig.locations", ev)
	}

	pool := func(name string) *container.NodePool {
		for _, np := range e.simCluster(t, "life").Cluster.NodePools {
			if np.Name == name {
				return np
			}
		}
		return nil
	}
	steps := []struct {
		name  string
		edit  func(*v1.GKEClusterConfig)
		call  string // the one mutating call expected; "" for none
		check func(t *testing.T, c *v1.Cluster)
	}{
		{"kubernetesVersion", func(c *v1.GKEClusterConfig) { c.KubernetesVersion = ptr.To("1.34") }, "clusters.updateMaster",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, strings.HasPrefix(e.simCluster(t, "life").Cluster.CurrentMasterVersion, "1.34."), true)
				wantEq(t, *c.Status.GKEStatus.UpstreamSpec.KubernetesVersion, "1.34")
			}},
		{"labels", func(c *v1.GKEClusterConfig) { c.Labels = map[string]string{"team": "infra", "env": "prod"} }, "clusters.setResourceLabels",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, e.simCluster(t, "life").Cluster.ResourceLabels, map[string]string{"team": "infra", "env": "prod"})
				wantEq(t, c.Status.GKEStatus.UpstreamSpec.Labels, map[string]string{"team": "infra", "env": "prod"})
			}},
		{"loggingService", func(c *v1.GKEClusterConfig) { c.LoggingService = ptr.To("none") }, "clusters.setLogging",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, e.simCluster(t, "life").Cluster.LoggingService, "none")
				wantEq(t, *c.Status.GKEStatus.UpstreamSpec.LoggingService, "none")
			}},
		{"monitoringService", func(c *v1.GKEClusterConfig) { c.MonitoringService = ptr.To("none") }, "clusters.setMonitoring",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, e.simCluster(t, "life").Cluster.MonitoringService, "none")
				wantEq(t, *c.Status.GKEStatus.UpstreamSpec.MonitoringService, "none")
			}},
		{"masterAuthorizedNetworks", func(c *v1.GKEClusterConfig) {
			c.MasterAuthorizedNetworks = &v1.GKEMasterAuthorizedNetworks{Enabled: ptr.To(true), CIDRBlocks: []v1.GKECIDRBlock{{DisplayName: "office", CIDRBlock: "203.0.113.0/24"}}}
		}, "clusters.update",
			func(t *testing.T, c *v1.Cluster) {
				man := e.simCluster(t, "life").Cluster.MasterAuthorizedNetworksConfig
				wantEq(t, []any{man.Enabled, len(man.CidrBlocks), man.CidrBlocks[0].CidrBlock, man.CidrBlocks[0].DisplayName}, []any{true, 1, "203.0.113.0/24", "office"})
				wantEq(t, c.Status.GKEStatus.UpstreamSpec.MasterAuthorizedNetworks.CIDRBlocks, []v1.GKECIDRBlock{{DisplayName: "office", CIDRBlock: "203.0.113.0/24"}})
			}},
		{"locations", func(c *v1.GKEClusterConfig) { c.Locations = []string{"us-central1-b", "us-central1-a"} }, "clusters.setLocations",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, sorted(e.simCluster(t, "life").Cluster.Locations), []string{"us-central1-a", "us-central1-b"})
				wantEq(t, c.Status.GKEStatus.UpstreamSpec.Locations, []string{"us-central1-a", "us-central1-b"})
			}},
		{"maintenanceWindow", func(c *v1.GKEClusterConfig) { c.MaintenanceWindow = ptr.To("03:00") }, "clusters.setMaintenancePolicy",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, e.simCluster(t, "life").Cluster.MaintenancePolicy.Window.DailyMaintenanceWindow.StartTime, "03:00")
				wantEq(t, *c.Status.GKEStatus.UpstreamSpec.MaintenanceWindow, "03:00")
			}},
		{"pool version", func(c *v1.GKEClusterConfig) { c.NodePools[0].Version = ptr.To("1.34") }, "nodePools.update",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, strings.HasPrefix(pool("pool-1").Version, "1.34."), true)
				wantEq(t, *c.Status.GKEStatus.UpstreamSpec.NodePools[0].Version, "1.34")
			}},
		{"pool node config", func(c *v1.GKEClusterConfig) {
			nc := c.NodePools[0].Config
			nc.Labels, nc.Tags, nc.ImageType = map[string]string{"tier": "web"}, []string{"web"}, ptr.To("UBUNTU_CONTAINERD")
			nc.Taints = []v1.GKENodeTaint{{Key: "dedicated", Value: "web", Effect: "NO_SCHEDULE"}}
		}, "nodePools.update",
			func(t *testing.T, c *v1.Cluster) {
				nc := pool("pool-1").Config
				wantEq(t, []any{nc.Labels, nc.Tags, nc.ImageType, len(nc.Taints), nc.Taints[0].Key, nc.Taints[0].Effect},
					[]any{map[string]string{"tier": "web"}, []string{"web"}, "UBUNTU_CONTAINERD", 1, "dedicated", "NO_SCHEDULE"})
				wantEq(t, c.Status.GKEStatus.UpstreamSpec.NodePools[0].Config.Taints, []v1.GKENodeTaint{{Key: "dedicated", Value: "web", Effect: "NO_SCHEDULE"}})
			}},
		{"pool size", func(c *v1.GKEClusterConfig) { c.NodePools[0].InitialNodeCount = ptr.To[int64](3) }, "nodePools.setSize",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, pool("pool-1").InitialNodeCount, int64(3))
				wantEq(t, *c.Status.GKEStatus.UpstreamSpec.NodePools[0].InitialNodeCount, int64(3))
			}},
		{"pool management", func(c *v1.GKEClusterConfig) { c.NodePools[0].Management.AutoRepair = ptr.To(false) }, "nodePools.setManagement",
			func(t *testing.T, c *v1.Cluster) {
				m := pool("pool-1").Management
				wantEq(t, []bool{m.AutoRepair, m.AutoUpgrade}, []bool{false, true})
			}},
		{"pool autoscaling", func(c *v1.GKEClusterConfig) {
			c.NodePools[0].Autoscaling = &v1.GKENodePoolAutoscaling{Enabled: ptr.To(true), MinNodeCount: ptr.To[int64](1), MaxNodeCount: ptr.To[int64](6)}
		}, "nodePools.setAutoscaling",
			func(t *testing.T, c *v1.Cluster) {
				a := pool("pool-1").Autoscaling
				wantEq(t, []any{a.Enabled, a.MinNodeCount, a.MaxNodeCount}, []any{true, int64(1), int64(6)})
			}},
		// With autoscaling on, the autoscaler owns the node count: no call, and the refresh
		// adopts GKE's count back into the config.
		{"pool size while autoscaled", func(c *v1.GKEClusterConfig) { c.NodePools[0].InitialNodeCount = ptr.To[int64](5) }, "",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, pool("pool-1").InitialNodeCount, int64(3))
				wantEq(t, *e.refresh("life").Spec.GKEConfig.NodePools[0].InitialNodeCount, int64(3))
				wantEq(t, e.mutations(), map[string]int64{})
			}},
		{"add pool", func(c *v1.GKEClusterConfig) {
			c.NodePools = append(c.NodePools, v1.GKENodePool{Name: "pool-2", InitialNodeCount: ptr.To[int64](1),
				Config: &v1.GKENodeConfig{MachineType: ptr.To("e2-standard-4"), DiskSizeGb: ptr.To[int64](50)}})
		}, "nodePools.create",
			func(t *testing.T, c *v1.Cluster) {
				np := pool("pool-2")
				wantEq(t, []any{np.InitialNodeCount, np.Config.MachineType, np.Config.DiskSizeGb}, []any{int64(1), "e2-standard-4", int64(50)})
				wantEq(t, len(c.Status.GKEStatus.UpstreamSpec.NodePools), 2)
			}},
		{"delete pool", func(c *v1.GKEClusterConfig) { c.NodePools = c.NodePools[:1] }, "nodePools.delete",
			func(t *testing.T, c *v1.Cluster) {
				wantEq(t, pool("pool-2") == nil, true)
				wantEq(t, len(c.Status.GKEStatus.UpstreamSpec.NodePools), 1)
			}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			e.sim.Counters().Reset()
			e.edit("life", s.edit)
			c := e.settle("life")
			if c.Status.Phase != v1.PhaseActive || !condIs(c, hosted.CondSynced, metav1.ConditionTrue) {
				t.Fatalf("phase %q conditions %+v", c.Status.Phase, c.Status.Conditions)
			}
			want := map[string]int64{}
			if s.call != "" {
				want[s.call] = 1
			}
			if got := e.mutations(); !reflect.DeepEqual(got, want) {
				t.Fatalf("mutating calls %v, want %v", got, want)
			}
			s.check(t, c)
		})
	}

	e.sim.Counters().Reset()
	if err := mgmt.Client.Delete(context.Background(), e.get("life")); err != nil {
		t.Fatal(err)
	}
	if c := e.settle("life"); c != nil {
		t.Fatalf("Cluster still exists after delete: %+v", c.Status)
	}
	if _, ok := e.sim.Cluster(gkeProject, gkeRegion, "life"); ok {
		t.Fatal("GKE cluster still exists in the simulator after delete")
	}
	wantEq(t, e.mutations(), map[string]int64{"clusters.delete": 1})
}

// TestGKEImportManagesNothingUntilEdited: an imported cluster manages nothing; editing one field
// manages only that field; console changes to unmanaged fields never produce an update call,
// console changes to the managed field are adopted.
func TestGKEImportManagesNothingUntilEdited(t *testing.T) {
	t.Parallel()
	e := newGKEEnv(t)
	e.consoleCall(t, "imp", func() error {
		_, err := e.console.Projects.Locations.Clusters.Create("projects/"+gkeProject+"/locations/"+gkeRegion, &container.CreateClusterRequest{Cluster: &container.Cluster{
			Name: "imp", ResourceLabels: map[string]string{"owner": "ops"},
			NodePools: []*container.NodePool{{Name: "default-pool", InitialNodeCount: 3}},
		}}).Context(t.Context()).Do()
		return err
	})
	e.simTime.Advance(simDelay)
	e.sim.Counters().Reset()

	c := e.create(&v1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "imp"}, Spec: v1.ClusterSpec{GKEConfig: &v1.GKEClusterConfig{
		ClusterName: "imp", ProjectID: gkeProject, Region: gkeRegion, Imported: true, CredentialSecret: "cred"}}})
	if c.Status.Phase != v1.PhaseActive {
		t.Fatalf("phase %q, conditions %+v", c.Status.Phase, c.Status.Conditions)
	}
	want := &v1.GKEClusterConfig{ClusterName: "imp", ProjectID: gkeProject, Region: gkeRegion, Imported: true, CredentialSecret: "cred"}
	if !reflect.DeepEqual(c.Spec.GKEConfig, want) {
		t.Fatalf("import changed the config (the incumbent's defaults bug): %+v", c.Spec.GKEConfig)
	}
	up := c.Status.GKEStatus.UpstreamSpec
	if !strings.HasPrefix(*up.KubernetesVersion, "1.33.") || up.Labels["owner"] != "ops" || len(up.NodePools) != 1 || *up.NodePools[0].InitialNodeCount != 3 {
		t.Fatalf("upstreamSpec: %+v", up)
	}
	wantEq(t, e.mutations(), map[string]int64{})

	// Editing labels manages labels only.
	e.edit("imp", func(c *v1.GKEClusterConfig) { c.Labels = map[string]string{"owner": "ops", "env": "dev"} })
	c = e.settle("imp")
	wantEq(t, e.simCluster(t, "imp").Cluster.ResourceLabels, map[string]string{"owner": "ops", "env": "dev"})
	wantEq(t, e.mutations(), map[string]int64{"clusters.setResourceLabels": 1})
	if cfg := c.Spec.GKEConfig; cfg.KubernetesVersion != nil || cfg.LoggingService != nil || cfg.NodePools != nil || cfg.Locations != nil {
		t.Fatalf("fields other than labels became managed: %+v", cfg)
	}

	// Console changes to unmanaged fields: shown upstream, never pushed back.
	e.consoleCall(t, "imp", func() error {
		_, err := e.console.Projects.Locations.Clusters.SetLogging(gkeClusterPath("imp"), &container.SetLoggingServiceRequest{LoggingService: "none"}).Context(t.Context()).Do()
		return err
	})
	e.simTime.Advance(simDelay)
	if !e.consoleScale(t, "imp", 5) {
		t.Fatal("could not scale in the console")
	}
	e.simTime.Advance(simDelay)
	e.sim.Counters().Reset()
	c = e.refresh("imp")
	wantEq(t, e.mutations(), map[string]int64{})
	if cfg := c.Spec.GKEConfig; cfg.LoggingService != nil || cfg.NodePools != nil {
		t.Fatalf("console changes made fields managed: %+v", cfg)
	}
	up = c.Status.GKEStatus.UpstreamSpec
	wantEq(t, []any{*up.LoggingService, *up.NodePools[0].InitialNodeCount}, []any{"none", int64(5)})

	// A console change to the managed field is adopted, not reverted.
	e.consoleTag(t, "imp", "env", "staging")
	e.simTime.Advance(simDelay)
	e.sim.Counters().Reset()
	c = e.refresh("imp")
	wantEq(t, c.Spec.GKEConfig.Labels, map[string]string{"owner": "ops", "env": "staging"})
	wantEq(t, e.mutations(), map[string]int64{})

	// Deleting an imported Cluster forgets it; the GKE cluster stays.
	if err := mgmt.Client.Delete(context.Background(), e.get("imp")); err != nil {
		t.Fatal(err)
	}
	if c := e.settle("imp"); c != nil {
		t.Fatal("imported Cluster not forgotten")
	}
	if _, ok := e.sim.Cluster(gkeProject, gkeRegion, "imp"); !ok {
		t.Fatal("deleting an imported Cluster deleted the GKE cluster")
	}
	wantEq(t, e.mutations(), map[string]int64{})
}

// hookTransport starts a console operation right after drover's first clusters.get of a
// cluster, so that drover's push meets GKE's "operation in progress" FAILED_PRECONDITION.
type hookTransport struct {
	base  http.RoundTripper
	armed atomic.Bool
	path  string
	hook  func()
}

func (h *hookTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, h.path) && h.armed.CompareAndSwap(true, false) {
		h.hook()
	}
	return resp, err
}

// TestGKEOperationInProgressRequeues: GKE refuses a mutation while another operation runs
// (400 FAILED_PRECONDITION, CLUSTER_ALREADY_HAS_OPERATION); drover waits and retries, it does
// not fail, and the change lands once the other operation is done.
func TestGKEOperationInProgressRequeues(t *testing.T) {
	t.Parallel()
	e := newGKEEnv(t)
	hook := &hookTransport{base: http.DefaultTransport, path: "/clusters/busy", hook: func() {
		if _, err := e.console.Projects.Locations.Clusters.SetMonitoring(gkeClusterPath("busy"),
			&container.SetMonitoringServiceRequest{MonitoringService: "none"}).Context(t.Context()).Do(); err != nil {
			t.Errorf("console setMonitoring: %v", err)
		}
	}}
	e.r.Limits = &hosted.Limits{Base: hook}
	e.create(gkeCreated("busy"))

	e.sim.Counters().Reset()
	e.edit("busy", func(c *v1.GKEClusterConfig) { c.Labels["env"] = "prod" })
	hook.armed.Store(true)
	res, err := e.reconcile("busy")
	if err != nil || res.RequeueAfter != e.r.PollInterval {
		t.Fatalf("operation in progress: result %+v, err %v; want a requeue after %v and no error", res, err, e.r.PollInterval)
	}
	c := e.get("busy")
	if c.Status.Phase == v1.PhaseFailed || cond(c, hosted.CondUpdating).Reason != "ProviderBusy" || cond(c, hosted.CondSynced).Reason == "ProviderError" {
		t.Fatalf("phase %q conditions %+v", c.Status.Phase, c.Status.Conditions)
	}
	// drover tried once and was refused; the console's operation is the one that ran.
	wantEq(t, e.mutations(), map[string]int64{"clusters.setResourceLabels": 1, "clusters.setMonitoring": 1})
	if _, ok := e.simCluster(t, "busy").Cluster.ResourceLabels["env"]; ok {
		t.Fatal("labels changed although GKE refused the call")
	}

	c = e.settle("busy")
	wantEq(t, e.simCluster(t, "busy").Cluster.ResourceLabels, map[string]string{"team": "platform", "env": "prod"})
	wantEq(t, *c.Spec.GKEConfig.MonitoringService, "none") // the console's change, adopted
	if !condIs(c, hosted.CondSynced, metav1.ConditionTrue) {
		t.Fatalf("not in sync: %+v", c.Status.Conditions)
	}
}

// TestGKEBadInput: bad input gives a condition with a stable reason and a message naming the
// field, and nothing is sent to GKE.
func TestGKEBadInput(t *testing.T) {
	t.Parallel()
	e := newGKEEnv(t)
	otherKey, err := e.sim.NewServiceAccountKey("stranger@other.iam.gserviceaccount.com", "other-project")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]map[string]string{
		"stranger": {gke.KeyServiceAccountJSON: string(otherKey), gke.KeyEndpoint: e.sim.URL},
		"garbled":  {gke.KeyServiceAccountJSON: `{"type":"service_account"`, gke.KeyEndpoint: e.sim.URL},
		"empty":    {gke.KeyEndpoint: e.sim.URL},
	} {
		if err := createSecret(e.ns, name, data); err != nil {
			t.Fatal(err)
		}
	}
	e.create(gkeCreated("base"))

	newCluster := func(name string, f func(*v1.GKEClusterConfig)) func() *v1.Cluster {
		return func() *v1.Cluster { c := gkeCreated(name); f(c.Spec.GKEConfig); return c }
	}
	tests := []struct {
		name     string
		cluster  func() *v1.Cluster
		existing func(*v1.GKEClusterConfig) // an edit of the existing cluster instead
		cond     string
		reason   string
		field    string
	}{
		{name: "missing version", cluster: newCluster("nover", func(c *v1.GKEClusterConfig) { c.KubernetesVersion = nil }),
			cond: hosted.CondConfigValid, reason: "MissingField", field: "gkeConfig.kubernetesVersion"},
		{name: "no node pools", cluster: newCluster("nopools", func(c *v1.GKEClusterConfig) { c.NodePools = nil }),
			cond: hosted.CondConfigValid, reason: "MissingField", field: "gkeConfig.nodePools"},
		{name: "bad region", cluster: newCluster("mars", func(c *v1.GKEClusterConfig) { c.Region = "mars" }),
			cond: hosted.CondConfigValid, reason: "InvalidLocation", field: "gkeConfig.region"},
		{name: "autoscaling min above max", cluster: newCluster("minmax", func(c *v1.GKEClusterConfig) {
			c.NodePools[0].Autoscaling = &v1.GKENodePoolAutoscaling{Enabled: ptr.To(true), MinNodeCount: ptr.To[int64](4), MaxNodeCount: ptr.To[int64](2)}
		}), cond: hosted.CondConfigValid, reason: "InvalidScaling", field: "gkeConfig.nodePools[pool-1].autoscaling.minNodeCount"},
		{name: "bad CIDR", cluster: newCluster("cidr", func(c *v1.GKEClusterConfig) {
			c.MasterAuthorizedNetworks = &v1.GKEMasterAuthorizedNetworks{CIDRBlocks: []v1.GKECIDRBlock{{CIDRBlock: "10.0.0.1/8"}}}
		}), cond: hosted.CondConfigValid, reason: "InvalidCIDR", field: "gkeConfig.masterAuthorizedNetworks.cidrBlocks[0].cidrBlock"},
		{name: "node version above master", cluster: newCluster("nodever", func(c *v1.GKEClusterConfig) { c.NodePools[0].Version = ptr.To("1.34") }),
			cond: hosted.CondConfigValid, reason: "NodeVersionTooNew", field: "gkeConfig.nodePools[pool-1].version"},
		{name: "bad label", cluster: newCluster("label", func(c *v1.GKEClusterConfig) { c.Labels["Team"] = "x" }),
			cond: hosted.CondConfigValid, reason: "InvalidLabel", field: "gkeConfig.labels[Team]"},
		{name: "credential for another project", cluster: newCluster("stranger", func(c *v1.GKEClusterConfig) { c.CredentialSecret = "stranger" }),
			cond: hosted.CondCredentials, reason: "Rejected", field: "container.clusters.get"},
		{name: "garbled key", cluster: newCluster("garbled", func(c *v1.GKEClusterConfig) { c.CredentialSecret = "garbled" }),
			cond: hosted.CondCredentials, reason: "SecretInvalid", field: "serviceAccountJSON"},
		{name: "secret without key", cluster: newCluster("empty", func(c *v1.GKEClusterConfig) { c.CredentialSecret = "empty" }),
			cond: hosted.CondCredentials, reason: "SecretIncomplete", field: "serviceAccountJSON"},
		{name: "missing secret", cluster: newCluster("absent", func(c *v1.GKEClusterConfig) { c.CredentialSecret = "absent" }),
			cond: hosted.CondCredentials, reason: "SecretNotFound", field: "gkeConfig.credentialSecret"},
		{name: "master downgrade", existing: func(c *v1.GKEClusterConfig) {
			c.KubernetesVersion, c.NodePools[0].Version = ptr.To("1.32"), ptr.To("1.32")
		}, cond: hosted.CondConfigValid, reason: "VersionDowngrade", field: "gkeConfig.kubernetesVersion"},
		{name: "master minor skip", existing: func(c *v1.GKEClusterConfig) { c.KubernetesVersion = ptr.To("1.35") },
			cond: hosted.CondConfigValid, reason: "VersionSkip", field: "gkeConfig.kubernetesVersion"},
		{name: "immutable machine type", existing: func(c *v1.GKEClusterConfig) { c.NodePools[0].Config.MachineType = ptr.To("n2-standard-8") },
			cond: hosted.CondConfigValid, reason: "ImmutableField", field: "gkeConfig.nodePools[pool-1].config.machineType"},
		{name: "immutable disk size", existing: func(c *v1.GKEClusterConfig) { c.NodePools[0].Config.DiskSizeGb = ptr.To[int64](200) },
			cond: hosted.CondConfigValid, reason: "ImmutableField", field: "gkeConfig.nodePools[pool-1].config.diskSizeGb"},
		{name: "immutable network", existing: func(c *v1.GKEClusterConfig) { c.Network = ptr.To("prod-vpc") },
			cond: hosted.CondConfigValid, reason: "ImmutableField", field: "gkeConfig.network"},
		{name: "immutable subnetwork", existing: func(c *v1.GKEClusterConfig) { c.Subnetwork = ptr.To("prod-subnet") },
			cond: hosted.CondConfigValid, reason: "ImmutableField", field: "gkeConfig.subnetwork"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.sim.Counters().Reset()
			name := "base"
			if tt.cluster != nil {
				c := tt.cluster()
				name, c.Namespace = c.Name, e.ns
				if err := mgmt.Client.Create(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			} else {
				orig := e.get("base").Spec.GKEConfig.DeepCopy()
				e.edit("base", tt.existing)
				t.Cleanup(func() { e.edit("base", func(c *v1.GKEClusterConfig) { *c = *orig }); e.settle("base") })
			}
			_, _ = e.reconcile(name)
			c := e.get(name)
			got := cond(c, tt.cond)
			if got.Status != metav1.ConditionFalse || got.Reason != tt.reason || !strings.Contains(got.Message, tt.field) {
				t.Fatalf("%s condition = %+v, want False/%s naming %s", tt.cond, got, tt.reason, tt.field)
			}
			_, _ = e.reconcile(name) // a retry sends nothing either
			if m := e.mutations(); len(m) != 0 {
				t.Fatalf("bad input sent mutating calls: %v", m)
			}
		})
	}
}

// TestGKEValidate covers what the API server's own validation keeps from ever reaching drover
// (region and zone both set, duplicate pool names), on the provider directly.
func TestGKEValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*v1.GKEClusterConfig)
		reason string
		field  string
	}{
		{"valid", func(*v1.GKEClusterConfig) {}, "", ""},
		{"region and zone", func(c *v1.GKEClusterConfig) { c.Zone = "us-central1-a" }, "RegionAndZone", "gkeConfig.zone"},
		{"neither region nor zone", func(c *v1.GKEClusterConfig) { c.Region = "" }, "MissingField", "gkeConfig.region"},
		{"zone given as region", func(c *v1.GKEClusterConfig) { c.Region = "us-central1-a" }, "InvalidLocation", "gkeConfig.region"},
		{"unknown region", func(c *v1.GKEClusterConfig) { c.Region = "europe-west99" }, "UnknownRegion", "gkeConfig.region"},
		{"zone of an unknown region", func(c *v1.GKEClusterConfig) { c.Region, c.Zone = "", "europe-west99-b" }, "UnknownRegion", "gkeConfig.zone"},
		{"zone letter", func(c *v1.GKEClusterConfig) { c.Region, c.Zone = "", "us-central1-q" }, "InvalidLocation", "gkeConfig.zone"},
		{"duplicate pools", func(c *v1.GKEClusterConfig) { c.NodePools = append(c.NodePools, c.NodePools[0]) }, "DuplicateNodePool", "gkeConfig.nodePools[pool-1].name"},
		{"zone of another region", func(c *v1.GKEClusterConfig) { c.Locations = []string{"europe-west1-b"} }, "InvalidLocation", "gkeConfig.locations[0]"},
		{"bad maintenance window", func(c *v1.GKEClusterConfig) { c.MaintenanceWindow = ptr.To("3am") }, "InvalidMaintenanceWindow", "gkeConfig.maintenanceWindow"},
		{"legacy logging", func(c *v1.GKEClusterConfig) { c.LoggingService = ptr.To("logging.googleapis.com") }, "InvalidService", "gkeConfig.loggingService"},
		{"taint without effect", func(c *v1.GKEClusterConfig) {
			c.NodePools[0].Config = &v1.GKENodeConfig{Taints: []v1.GKENodeTaint{{Key: "k"}}}
		}, "InvalidTaint", "gkeConfig.nodePools[pool-1].config.taints[0]"},
		{"imported needs no version", func(c *v1.GKEClusterConfig) { c.Imported, c.KubernetesVersion, c.NodePools = true, nil, nil }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := gkeCreated("v")
			tt.edit(c.Spec.GKEConfig)
			err := gke.Provider{}.Validate(c)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var fe *hosted.FieldError
			if !errors.As(err, &fe) || fe.Reason != tt.reason || fe.Field != tt.field {
				t.Fatalf("got %#v, want %s on %s", err, tt.reason, tt.field)
			}
		})
	}
}
