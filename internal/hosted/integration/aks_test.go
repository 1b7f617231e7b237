package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	aksim "github.com/droverhq/drover/pkg/cloudsim/aks"
)

// aksMutations are the ARM calls that change something.
var aksMutations = []string{"ManagedClusters.CreateOrUpdate", "ManagedClusters.UpdateTags", "ManagedClusters.Delete", "AgentPools.CreateOrUpdate", "AgentPools.Delete"}

func (h *aksHarness) mutations() map[string]int64 {
	out := map[string]int64{}
	for _, op := range aksMutations {
		if n := h.sim.Counters().Get(op); n > 0 {
			out[op] = n
		}
	}
	return out
}

func ptrStrings(in []*string) []string {
	out := []string{}
	for _, s := range in {
		out = append(out, *s)
	}
	slices.Sort(out)
	return out
}

func upPool(up *v1.AKSClusterConfig, name string) *v1.AKSNodePool {
	for i := range up.NodePools {
		if up.NodePools[i].Name == name {
			return &up.NodePools[i]
		}
	}
	return nil
}

func TestAKSCreateUpdateEveryFieldAndDelete(t *testing.T) {
	t.Parallel()
	e := newAKSEnv(t)
	c := e.create(aksCreated("life"))
	if c.Status.Phase != v1.PhaseActive || !condIs(c, hosted.CondSynced, "True") {
		t.Fatalf("after create: phase %q conditions %+v", c.Status.Phase, c.Status.Conditions)
	}
	st := e.simCluster(t, "life")
	if *st.Properties.KubernetesVersion != "1.32" || *st.Tags["team"] != "platform" || len(st.Properties.AgentPoolProfiles) != 1 || *st.Properties.AgentPoolProfiles[0].Count != 2 {
		t.Fatalf("simulator state after create: %+v", st.Properties)
	}
	up := c.Status.AKSStatus.UpstreamSpec
	if *up.KubernetesVersion != "1.32" || len(up.NodePools) != 1 || *up.NodePools[0].Mode != aks.ModeSystem || *up.NetworkPlugin != "kubenet" || *up.DNSPrefix != "life" {
		t.Fatalf("upstreamSpec after create: %+v", up)
	}
	// Every field of a created cluster is managed (non-nil), and equals upstream.
	cfg := c.Spec.AKSConfig
	if cfg.NetworkPolicy == nil || cfg.ServiceCIDR == nil || cfg.AuthorizedIPRanges == nil || cfg.PrivateCluster == nil || cfg.NodePools[0].VMSize == nil || cfg.NodePools[0].MaxSurge == nil || cfg.NodePools[0].NodeTaints == nil {
		t.Fatalf("created cluster has unmanaged fields: %+v", cfg)
	}
	if created := e.mutations(); created["ManagedClusters.CreateOrUpdate"] != 1 || len(created) != 1 {
		t.Fatalf("create made these calls: %v", created)
	}

	steps := []struct {
		name  string
		edit  func(*v1.AKSClusterConfig)
		check func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig)
	}{
		{"tags", func(c *v1.AKSClusterConfig) { c.Tags = map[string]string{"team": "infra", "env": "prod"} },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				wantEq(t, len(st.Tags), 2)
				wantEq(t, *st.Tags["env"], "prod")
				wantEq(t, up.Tags, map[string]string{"team": "infra", "env": "prod"})
			}},
		{"kubernetesVersion", func(c *v1.AKSClusterConfig) { c.KubernetesVersion = ptr.To("1.33") },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				wantEq(t, *st.Properties.CurrentKubernetesVersion, "1.33.1")
				wantEq(t, *up.KubernetesVersion, "1.33")
			}},
		{"authorizedIPRanges", func(c *v1.AKSClusterConfig) { c.AuthorizedIPRanges = []string{"203.0.113.0/24", "198.51.100.7"} },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				wantEq(t, ptrStrings(st.Properties.APIServerAccessProfile.AuthorizedIPRanges), []string{"198.51.100.7", "203.0.113.0/24"})
				wantEq(t, up.AuthorizedIPRanges, []string{"198.51.100.7", "203.0.113.0/24"})
			}},
		{"pool count", func(c *v1.AKSClusterConfig) { c.NodePools[0].Count = ptr.To[int32](3) },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				wantEq(t, *e.simPool(t, "life", aksPool).Count, int32(3))
				wantEq(t, *upPool(up, aksPool).Count, int32(3))
			}},
		{"pool labels", func(c *v1.AKSClusterConfig) { c.NodePools[0].NodeLabels = map[string]string{"tier": "web"} },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				p := e.simPool(t, "life", aksPool)
				wantEq(t, len(p.NodeLabels), 1)
				wantEq(t, *p.NodeLabels["tier"], "web")
				wantEq(t, upPool(up, aksPool).NodeLabels, map[string]string{"tier": "web"})
			}},
		{"pool taints", func(c *v1.AKSClusterConfig) { c.NodePools[0].NodeTaints = []string{"dedicated=web:NoSchedule"} },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				wantEq(t, ptrStrings(e.simPool(t, "life", aksPool).NodeTaints), []string{"dedicated=web:NoSchedule"})
				wantEq(t, upPool(up, aksPool).NodeTaints, []string{"dedicated=web:NoSchedule"})
			}},
		{"pool maxSurge", func(c *v1.AKSClusterConfig) { c.NodePools[0].MaxSurge = ptr.To("33%") },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				wantEq(t, *e.simPool(t, "life", aksPool).UpgradeSettings.MaxSurge, "33%")
				wantEq(t, *upPool(up, aksPool).MaxSurge, "33%")
			}},
		{"pool orchestratorVersion", func(c *v1.AKSClusterConfig) { c.NodePools[0].OrchestratorVersion = ptr.To("1.33") },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				wantEq(t, *e.simPool(t, "life", aksPool).CurrentOrchestratorVersion, "1.33.1")
				wantEq(t, *upPool(up, aksPool).OrchestratorVersion, "1.33")
			}},
		{"pool created", func(c *v1.AKSClusterConfig) {
			c.NodePools = append(c.NodePools, v1.AKSNodePool{Name: "user1", Mode: ptr.To(aks.ModeUser), Count: ptr.To[int32](1), VMSize: ptr.To("Standard_D4s_v3"), AvailabilityZones: []string{"1", "2"}})
		},
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				p := e.simPool(t, "life", "user1")
				wantEq(t, []any{*p.VMSize, *p.Count, ptrStrings(p.AvailabilityZones)}, []any{"Standard_D4s_v3", int32(1), []string{"1", "2"}})
				wantEq(t, *upPool(up, "user1").VMSize, "Standard_D4s_v3")
			}},
		{"pool autoscaling", func(c *v1.AKSClusterConfig) {
			p := &c.NodePools[1]
			p.EnableAutoScaling, p.MinCount, p.MaxCount = ptr.To(true), ptr.To[int32](1), ptr.To[int32](4)
		},
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				p := e.simPool(t, "life", "user1")
				wantEq(t, []int32{*p.MinCount, *p.MaxCount}, []int32{1, 4})
				wantEq(t, *p.EnableAutoScaling, true)
				wantEq(t, *upPool(up, "user1").MaxCount, int32(4))
			}},
		{"pool mode", func(c *v1.AKSClusterConfig) { c.NodePools[1].Mode = ptr.To(aks.ModeSystem) },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				wantEq(t, string(*e.simPool(t, "life", "user1").Mode), aks.ModeSystem)
				wantEq(t, *upPool(up, "user1").Mode, aks.ModeSystem)
			}},
		{"pool deleted", func(c *v1.AKSClusterConfig) { c.NodePools = c.NodePools[1:] },
			func(t *testing.T, st aksim.ClusterState, up *v1.AKSClusterConfig) {
				wantEq(t, len(st.Properties.AgentPoolProfiles), 1)
				wantEq(t, *st.Properties.AgentPoolProfiles[0].Name, "user1")
				wantEq(t, len(up.NodePools), 1)
			}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			e.edit("life", s.edit)
			c := e.settle("life")
			if c.Status.Phase != v1.PhaseActive || !condIs(c, hosted.CondSynced, "True") {
				t.Fatalf("phase %q conditions %+v", c.Status.Phase, c.Status.Conditions)
			}
			s.check(t, e.simCluster(t, "life"), c.Status.AKSStatus.UpstreamSpec)
		})
	}

	if err := mgmt.Client.Delete(context.Background(), e.get("life")); err != nil {
		t.Fatal(err)
	}
	if c := e.settle("life"); c != nil {
		t.Fatalf("Cluster still exists after delete: phase %q", c.Status.Phase)
	}
	if _, ok := e.sim.ManagedCluster(aksSub, aksRG, "life"); ok {
		t.Fatal("the AKS cluster still exists in the simulator")
	}
}

// consoleCreate creates a cluster in the console (the SDK, directly) and waits for it.
func (h *aksHarness) consoleCreate(t *testing.T, name string) {
	t.Helper()
	mc := armcontainerservice.ManagedCluster{
		Location: to.Ptr(aksLocation), Tags: map[string]*string{"owner": to.Ptr("console")},
		Properties: &armcontainerservice.ManagedClusterProperties{
			DNSPrefix: to.Ptr(name), KubernetesVersion: to.Ptr("1.32"),
			AgentPoolProfiles: []*armcontainerservice.ManagedClusterAgentPoolProfile{
				{Name: to.Ptr("system"), Mode: to.Ptr(armcontainerservice.AgentPoolModeSystem), Count: to.Ptr[int32](2)},
				{Name: to.Ptr("auto"), Mode: to.Ptr(armcontainerservice.AgentPoolModeUser), Count: to.Ptr[int32](2),
					EnableAutoScaling: to.Ptr(true), MinCount: to.Ptr[int32](1), MaxCount: to.Ptr[int32](5)},
			},
		},
	}
	if _, err := h.clusters.BeginCreateOrUpdate(context.Background(), aksRG, name, mc, nil); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(t, name)
}

func TestAKSImport(t *testing.T) {
	t.Parallel()
	e := newAKSEnv(t)
	e.consoleCreate(t, "imp")
	e.sim.Counters().Reset()
	c := e.create(&v1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "imp"}, Spec: v1.ClusterSpec{AKSConfig: &v1.AKSClusterConfig{
		ClusterName: "imp", ResourceGroup: aksRG, ResourceLocation: aksLocation, Imported: true, CredentialSecret: "cred"}}})
	if c.Status.Phase != v1.PhaseActive {
		t.Fatalf("import: phase %q conditions %+v", c.Status.Phase, c.Status.Conditions)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Fatalf("import made mutating calls: %v", m)
	}
	// Nothing is managed (no defaults written into an imported config); upstream shows it all.
	if cfg := c.Spec.AKSConfig; cfg.KubernetesVersion != nil || cfg.Tags != nil || cfg.NodePools != nil || cfg.NetworkPlugin != nil || cfg.AuthorizedIPRanges != nil {
		t.Fatalf("import wrote config fields: %+v", cfg)
	}
	up := c.Status.AKSStatus.UpstreamSpec
	if *up.KubernetesVersion != "1.32" || len(up.NodePools) != 2 || up.Tags["owner"] != "console" {
		t.Fatalf("upstreamSpec after import: %+v", up)
	}

	// Editing one field manages only that field, and pushes only it.
	e.sim.Counters().Reset()
	e.edit("imp", func(c *v1.AKSClusterConfig) { c.Tags = map[string]string{"owner": "console", "team": "a"} })
	c = e.settle("imp")
	wantEq(t, e.mutations(), map[string]int64{"ManagedClusters.UpdateTags": 1})
	wantEq(t, e.tags(t, "imp"), map[string]string{"owner": "console", "team": "a"})
	if cfg := c.Spec.AKSConfig; cfg.KubernetesVersion != nil || cfg.NodePools != nil || cfg.AuthorizedIPRanges != nil {
		t.Fatalf("editing tags managed other fields: %+v", cfg)
	}

	// Console changes to unmanaged fields never produce an update call.
	if !e.consolePool(t, "imp", "system", func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) bool {
		p.Count, p.NodeLabels = to.Ptr[int32](3), map[string]*string{"from": to.Ptr("console")}
		return true
	}) {
		t.Fatal("console could not change the pool")
	}
	e.waitIdle(t, "imp")
	e.sim.Counters().Reset()
	for range 3 {
		c = e.refresh("imp")
	}
	if m := e.mutations(); len(m) != 0 {
		t.Fatalf("console changes to unmanaged fields caused update calls: %v", m)
	}
	if p := upPool(c.Status.AKSStatus.UpstreamSpec, "system"); *p.Count != 3 || p.NodeLabels["from"] != "console" {
		t.Fatalf("upstreamSpec does not show the console's change: %+v", p)
	}
	if c.Spec.AKSConfig.NodePools != nil {
		t.Fatalf("a console change made node pools managed: %+v", c.Spec.AKSConfig.NodePools)
	}
	// Three refreshes, one GET each: the steady-state budget.
	wantEq(t, e.sim.Counters().Get("ManagedClusters.Get"), int64(3))

	// Deleting an imported Cluster forgets it; the AKS cluster stays.
	if err := mgmt.Client.Delete(context.Background(), e.get("imp")); err != nil {
		t.Fatal(err)
	}
	if c := e.settle("imp"); c != nil {
		t.Fatal("imported Cluster not forgotten")
	}
	if _, ok := e.sim.ManagedCluster(aksSub, aksRG, "imp"); !ok {
		t.Fatal("deleting an imported Cluster deleted the AKS cluster")
	}
}

// TestAKSAutoscaledPoolNoFight: with autoscaling on, the node count is the autoscaler's. Its
// changes are neither adopted nor reverted (under either policy), and a drover edit of the
// pool never sends a count.
func TestAKSAutoscaledPoolNoFight(t *testing.T) {
	t.Parallel()
	for _, policy := range []v1.SyncPolicy{v1.SyncPolicyAdopt, v1.SyncPolicyEnforce} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			e := newAKSEnv(t)
			c := aksCreated("auto")
			c.Spec.SyncPolicy = policy
			c.Spec.AKSConfig.NodePools = append(c.Spec.AKSConfig.NodePools, v1.AKSNodePool{Name: "auto", Mode: ptr.To(aks.ModeUser),
				EnableAutoScaling: ptr.To(true), MinCount: ptr.To[int32](1), MaxCount: ptr.To[int32](5), Count: ptr.To[int32](2)})
			e.create(c)

			// The autoscaler scales up, then drover refreshes many times.
			if !e.consolePool(t, "auto", "auto", func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) bool {
				p.Count = to.Ptr[int32](4)
				return true
			}) {
				t.Fatal("could not scale")
			}
			e.waitIdle(t, "auto")
			e.sim.Counters().Reset()
			var got *v1.Cluster
			for range 5 {
				got = e.refresh("auto")
			}
			if m := e.mutations(); len(m) != 0 {
				t.Fatalf("drover fought the autoscaler: %v", m)
			}
			wantEq(t, *e.simPool(t, "auto", "auto").Count, int32(4))
			wantEq(t, *aksConfigPool(got, "auto").Count, int32(2))
			wantEq(t, *upPool(got.Status.AKSStatus.UpstreamSpec, "auto").Count, int32(2))
			if !condIs(got, hosted.CondSynced, "True") || condIs(got, hosted.CondConflict, "True") {
				t.Fatalf("conditions: %+v", got.Status.Conditions)
			}

			// Editing the pool's bounds pushes them, without a count.
			e.edit("auto", func(c *v1.AKSClusterConfig) { c.NodePools[1].MaxCount = ptr.To[int32](6) })
			e.settle("auto")
			wantEq(t, e.mutations(), map[string]int64{"AgentPools.CreateOrUpdate": 1})
			p := e.simPool(t, "auto", "auto")
			wantEq(t, []int32{*p.Count, *p.MaxCount}, []int32{4, 6})
		})
	}
}

func TestAKSLastSystemPool(t *testing.T) {
	t.Parallel()
	e := newAKSEnv(t)
	c := aksCreated("sys")
	c.Spec.AKSConfig.NodePools = append(c.Spec.AKSConfig.NodePools, v1.AKSNodePool{Name: "user1", Mode: ptr.To(aks.ModeUser), Count: ptr.To[int32](1)})
	e.create(c)

	e.sim.Counters().Reset()
	e.edit("sys", func(c *v1.AKSClusterConfig) { c.NodePools = c.NodePools[1:] })
	got := e.settle("sys")
	cv := cond(got, hosted.CondConfigValid)
	if cv.Status != metav1.ConditionFalse || cv.Reason != "LastSystemPool" || !strings.Contains(cv.Message, "aksConfig.nodePools[pool1]") {
		t.Fatalf("ConfigValid: %+v", cv)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Fatalf("calls were sent: %v", m)
	}
	if e.simPool(t, "sys", aksPool) == nil {
		t.Fatal("the last System pool was deleted")
	}

	// Replacing the System pool in one edit works: the new one is created before the old goes.
	e.edit("sys", func(c *v1.AKSClusterConfig) {
		c.NodePools = append(c.NodePools, v1.AKSNodePool{Name: "sys2", Mode: ptr.To(aks.ModeSystem), Count: ptr.To[int32](1)})
	})
	got = e.settle("sys")
	if !condIs(got, hosted.CondSynced, "True") {
		t.Fatalf("conditions: %+v", got.Status.Conditions)
	}
	var names []string
	for _, p := range e.simCluster(t, "sys").Properties.AgentPoolProfiles {
		names = append(names, *p.Name)
	}
	slices.Sort(names)
	wantEq(t, names, []string{"sys2", "user1"})
}

// TestAKSBadInput: bad input gives a condition with a stable reason and a message naming the
// field, and nothing is sent to Azure.
func TestAKSBadInput(t *testing.T) {
	t.Parallel()
	e := newAKSEnv(t)

	t.Run("create", func(t *testing.T) {
		cases := []struct {
			name, field, reason string
			edit                func(*v1.AKSClusterConfig)
		}{
			{"missing dnsPrefix", "aksConfig.dnsPrefix", "MissingField", func(c *v1.AKSClusterConfig) { c.DNSPrefix = nil }},
			{"missing version", "aksConfig.kubernetesVersion", "MissingField", func(c *v1.AKSClusterConfig) { c.KubernetesVersion = nil }},
			{"bad version", "aksConfig.kubernetesVersion", "InvalidVersion", func(c *v1.AKSClusterConfig) { c.KubernetesVersion = ptr.To("v1.x") }},
			{"no System pool", "aksConfig.nodePools", "NoSystemPool", func(c *v1.AKSClusterConfig) { c.NodePools[0].Mode = ptr.To(aks.ModeUser) }},
			{"bad pool name", "aksConfig.nodePools[Pool_1].name", "InvalidPoolName", func(c *v1.AKSClusterConfig) { c.NodePools[0].Name = "Pool_1" }},
			{"unknown location", "aksConfig.resourceLocation", "UnknownLocation", func(c *v1.AKSClusterConfig) { c.ResourceLocation = "atlantis" }},
			{"min above max", "aksConfig.nodePools[pool1].minCount", "InvalidScaling", func(c *v1.AKSClusterConfig) {
				p := &c.NodePools[0]
				p.EnableAutoScaling, p.MinCount, p.MaxCount = ptr.To(true), ptr.To[int32](4), ptr.To[int32](3)
			}},
			{"count outside bounds", "aksConfig.nodePools[pool1].count", "InvalidScaling", func(c *v1.AKSClusterConfig) {
				p := &c.NodePools[0]
				p.EnableAutoScaling, p.MinCount, p.MaxCount, p.Count = ptr.To(true), ptr.To[int32](3), ptr.To[int32](5), ptr.To[int32](2)
			}},
			{"min without autoscaling", "aksConfig.nodePools[pool1].minCount", "InvalidScaling", func(c *v1.AKSClusterConfig) {
				c.NodePools[0].EnableAutoScaling, c.NodePools[0].MinCount = ptr.To(false), ptr.To[int32](1)
			}},
			{"pool newer than cluster", "aksConfig.nodePools[pool1].orchestratorVersion", "NodeVersionTooNew", func(c *v1.AKSClusterConfig) {
				c.NodePools[0].OrchestratorVersion = ptr.To("1.33")
			}},
			{"bad authorized range", "aksConfig.authorizedIPRanges[0]", "InvalidCIDR", func(c *v1.AKSClusterConfig) { c.AuthorizedIPRanges = []string{"300.1.2.0/24"} }},
			{"bad taint", "aksConfig.nodePools[pool1].nodeTaints", "InvalidTaint", func(c *v1.AKSClusterConfig) { c.NodePools[0].NodeTaints = []string{"no-effect"} }},
			{"azure policy on kubenet", "aksConfig.networkPolicy", "InvalidValue", func(c *v1.AKSClusterConfig) {
				c.NetworkPlugin, c.NetworkPolicy = ptr.To("kubenet"), ptr.To("azure")
			}},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e.sim.Counters().Reset()
				c := aksCreated("bad" + string(rune('a'+i)))
				tc.edit(c.Spec.AKSConfig)
				got := e.create(c)
				cv := cond(got, hosted.CondConfigValid)
				if cv.Status != metav1.ConditionFalse || cv.Reason != tc.reason || !strings.HasPrefix(cv.Message, tc.field+":") {
					t.Fatalf("ConfigValid = %+v, want reason %s naming %s", cv, tc.reason, tc.field)
				}
				if n := e.sim.Counters().Total(); n != 0 {
					t.Fatalf("%d calls were sent: %v", n, e.sim.Counters().Snapshot())
				}
			})
		}
	})

	t.Run("update", func(t *testing.T) {
		e.create(aksCreated("upd"))
		cases := []struct {
			name, field, reason string
			edit                func(*v1.AKSClusterConfig)
		}{
			{"downgrade", "aksConfig.kubernetesVersion", "VersionDowngrade", func(c *v1.AKSClusterConfig) {
				c.KubernetesVersion, c.NodePools[0].OrchestratorVersion = ptr.To("1.31"), ptr.To("1.31")
			}},
			{"minor skip", "aksConfig.kubernetesVersion", "VersionSkip", func(c *v1.AKSClusterConfig) { c.KubernetesVersion = ptr.To("1.34") }},
			{"pool downgrade", "aksConfig.nodePools[pool1].orchestratorVersion", "VersionDowngrade", func(c *v1.AKSClusterConfig) { c.NodePools[0].OrchestratorVersion = ptr.To("1.31") }},
			{"vmSize", "aksConfig.nodePools[pool1].vmSize", "ImmutableField", func(c *v1.AKSClusterConfig) { c.NodePools[0].VMSize = ptr.To("Standard_D8s_v3") }},
			{"osDiskSizeGB", "aksConfig.nodePools[pool1].osDiskSizeGB", "ImmutableField", func(c *v1.AKSClusterConfig) { c.NodePools[0].OSDiskSizeGB = ptr.To[int32](256) }},
			{"availabilityZones", "aksConfig.nodePools[pool1].availabilityZones", "ImmutableField", func(c *v1.AKSClusterConfig) { c.NodePools[0].AvailabilityZones = []string{"1"} }},
			{"networkPlugin", "aksConfig.networkPlugin", "ImmutableField", func(c *v1.AKSClusterConfig) { c.NetworkPlugin = ptr.To("azure") }},
			{"serviceCidr", "aksConfig.serviceCidr", "ImmutableField", func(c *v1.AKSClusterConfig) { c.ServiceCIDR = ptr.To("10.1.0.0/16") }},
			{"privateCluster", "aksConfig.privateCluster", "ImmutableField", func(c *v1.AKSClusterConfig) { c.PrivateCluster = ptr.To(true) }},
			{"dnsPrefix", "aksConfig.dnsPrefix", "ImmutableField", func(c *v1.AKSClusterConfig) { c.DNSPrefix = ptr.To("other") }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := e.get("upd").Spec.AKSConfig.DeepCopy()
				e.sim.Counters().Reset()
				e.edit("upd", tc.edit)
				got := e.settle("upd")
				cv := cond(got, hosted.CondConfigValid)
				if cv.Status != metav1.ConditionFalse || cv.Reason != tc.reason || !strings.HasPrefix(cv.Message, tc.field+":") {
					t.Fatalf("ConfigValid = %+v, want reason %s naming %s", cv, tc.reason, tc.field)
				}
				if m := e.mutations(); len(m) != 0 {
					t.Fatalf("calls were sent: %v", m)
				}
				// Reverting the edit makes the config valid again, still without a call.
				e.editCluster("upd", func(c *v1.Cluster) { c.Spec.AKSConfig = before })
				if got := e.settle("upd"); !condIs(got, hosted.CondConfigValid, "True") || !condIs(got, hosted.CondSynced, "True") {
					t.Fatalf("after revert: %+v", got.Status.Conditions)
				}
				if m := e.mutations(); len(m) != 0 {
					t.Fatalf("calls were sent after the revert: %v", m)
				}
			})
		}
	})

	t.Run("credentials", func(t *testing.T) {
		cases := []struct {
			name, reason string
			data         map[string]string
		}{
			{"missing key", "SecretIncomplete", func() map[string]string {
				d := e.secretData(aksSecret)
				delete(d, aks.KeyClientSecret)
				return d
			}()},
			{"wrong secret", "Rejected", e.secretData("wrong")},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				secret := "creds" + string(rune('a'+i))
				if err := createSecret(e.ns, secret, tc.data); err != nil {
					t.Fatal(err)
				}
				c := aksCreated("cred" + string(rune('a'+i)))
				c.Spec.AKSConfig.CredentialSecret = secret
				c.Namespace = e.ns
				if err := mgmt.Client.Create(context.Background(), c); err != nil {
					t.Fatal(err)
				}
				e.sim.Counters().Reset()
				for range 2 {
					_, _ = e.reconcile(c.Name)
				}
				got := e.get(c.Name)
				cc := cond(got, hosted.CondCredentials)
				if cc.Status != metav1.ConditionFalse || cc.Reason != tc.reason {
					t.Fatalf("CredentialsValid = %+v, want reason %s", cc, tc.reason)
				}
				if m := e.mutations(); len(m) != 0 {
					t.Fatalf("calls were sent: %v", m)
				}
			})
		}
	})
}
