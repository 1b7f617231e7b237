package aks_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

func TestLifecycle(t *testing.T) {
	ctx := t.Context()
	sim := newSim(t, aks.Options{})
	c := newSDK(t, sim, subID, secret, nil)

	created := createCluster(ctx, t, c, "lifecycle", clusterBody("1.31.6"))
	p := created.Properties
	if got := deref(p.ProvisioningState); got != "Succeeded" {
		t.Fatalf("provisioningState after create = %q, want Succeeded", got)
	}
	if deref(p.KubernetesVersion) != "1.31.6" || deref(p.CurrentKubernetesVersion) != "1.31.6" {
		t.Fatalf("versions = %q/%q, want 1.31.6", deref(p.KubernetesVersion), deref(p.CurrentKubernetesVersion))
	}
	if !strings.HasPrefix(deref(p.Fqdn), "drover-") || deref(p.NodeResourceGroup) != "MC_"+rg+"_lifecycle_"+location {
		t.Errorf("fqdn %q nodeResourceGroup %q", deref(p.Fqdn), deref(p.NodeResourceGroup))
	}
	if np := p.NetworkProfile; deref(np.NetworkPlugin) != "azure" || deref(np.NetworkPolicy) != "calico" ||
		deref(np.ServiceCidr) == "" || deref(np.DNSServiceIP) == "" || deref(np.LoadBalancerSKU) != "standard" || deref(np.OutboundType) != "loadBalancer" {
		t.Errorf("networkProfile = %+v", *np)
	}
	if deref(created.Identity.Type) != "SystemAssigned" || deref(created.Identity.TenantID) != tenantID || deref(p.ServicePrincipalProfile.ClientID) != "msi" {
		t.Errorf("identity = %+v, servicePrincipalProfile = %+v", *created.Identity, *p.ServicePrincipalProfile)
	}
	if deref(created.ID) != "/subscriptions/"+subID+"/resourcegroups/"+rg+"/providers/Microsoft.ContainerService/managedClusters/lifecycle" ||
		deref(created.Name) != "lifecycle" || deref(created.Type) != "Microsoft.ContainerService/ManagedClusters" {
		t.Errorf("id/name/type = %q %q %q", deref(created.ID), deref(created.Name), deref(created.Type))
	}
	sys := findPool(created, "system")
	if sys == nil || deref(sys.ProvisioningState) != "Succeeded" || deref(sys.CurrentOrchestratorVersion) != "1.31.6" ||
		deref(sys.PowerState.Code) != "Running" || deref(sys.Type) != "VirtualMachineScaleSets" || deref(sys.MaxPods) != 30 {
		t.Fatalf("system pool = %+v", sys)
	}

	t.Run("cluster fields", func(t *testing.T) {
		tests := []struct {
			name   string
			change func(*armcontainerservice.ManagedCluster)
			check  func(armcontainerservice.ManagedCluster) error
		}{
			{
				name:   "kubernetesVersion upgrade",
				change: func(mc *armcontainerservice.ManagedCluster) { mc.Properties.KubernetesVersion = to.Ptr("1.32.3") },
				check: func(mc armcontainerservice.ManagedCluster) error {
					if deref(mc.Properties.CurrentKubernetesVersion) != "1.32.3" {
						return fmt.Errorf("currentKubernetesVersion = %q", deref(mc.Properties.CurrentKubernetesVersion))
					}
					if v := deref(findPool(mc, "system").CurrentOrchestratorVersion); v != "1.31.6" {
						return fmt.Errorf("pool version moved with the control plane to %q", v)
					}
					return nil
				},
			},
			{
				name: "authorizedIPRanges",
				change: func(mc *armcontainerservice.ManagedCluster) {
					mc.Properties.APIServerAccessProfile = &armcontainerservice.ManagedClusterAPIServerAccessProfile{
						AuthorizedIPRanges: []*string{to.Ptr("203.0.113.0/24"), to.Ptr("198.51.100.7")},
					}
				},
				check: func(mc armcontainerservice.ManagedCluster) error {
					got := derefSlice(mc.Properties.APIServerAccessProfile.AuthorizedIPRanges)
					if !slices.Equal(got, []string{"203.0.113.0/24", "198.51.100.7"}) {
						return fmt.Errorf("authorizedIPRanges = %v", got)
					}
					return nil
				},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res := updateCluster(ctx, t, c, "lifecycle", tt.change)
				got, err := c.clusters.Get(ctx, rg, "lifecycle", nil)
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				for _, mc := range []armcontainerservice.ManagedCluster{res, got.ManagedCluster} {
					if s := deref(mc.Properties.ProvisioningState); s != "Succeeded" {
						t.Fatalf("provisioningState = %q", s)
					}
					if err := tt.check(mc); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	})

	t.Run("tags", func(t *testing.T) {
		p, err := c.clusters.BeginUpdateTags(ctx, rg, "lifecycle", armcontainerservice.TagsObject{
			Tags: map[string]*string{"env": to.Ptr("prod"), "team": to.Ptr("platform")},
		}, nil)
		if err != nil {
			t.Fatalf("BeginUpdateTags: %v", err)
		}
		res, err := p.PollUntilDone(ctx, poll)
		if err != nil {
			t.Fatalf("PollUntilDone(tags): %v", err)
		}
		want := map[string]string{"env": "prod", "team": "platform"}
		if got := derefMap(res.Tags); !maps.Equal(got, want) {
			t.Fatalf("tags = %v, want %v", got, want)
		}
	})

	t.Run("pool fields", func(t *testing.T) {
		tests := []struct {
			name   string
			pool   string
			change func(*armcontainerservice.ManagedClusterAgentPoolProfileProperties)
			check  func(*armcontainerservice.ManagedClusterAgentPoolProfileProperties) error
		}{
			{
				name: "create", pool: "user1",
				change: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) {
					p.Count, p.VMSize, p.Mode = to.Ptr[int32](2), to.Ptr("Standard_D4s_v3"), to.Ptr(armcontainerservice.AgentPoolModeUser)
					p.AvailabilityZones = []*string{to.Ptr("1"), to.Ptr("2")}
				},
				check: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) error {
					if deref(p.Count) != 2 || deref(p.VMSize) != "Standard_D4s_v3" || deref(p.Mode) != "User" ||
						deref(p.CurrentOrchestratorVersion) != "1.32.3" || len(p.AvailabilityZones) != 2 {
						return fmt.Errorf("pool = %+v", *p)
					}
					return nil
				},
			},
			{
				name: "count", pool: "user1",
				change: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) { p.Count = to.Ptr[int32](3) },
				check: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) error {
					if deref(p.Count) != 3 {
						return fmt.Errorf("count = %d", deref(p.Count))
					}
					return nil
				},
			},
			{
				name: "autoscaling", pool: "user1",
				change: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) {
					p.EnableAutoScaling, p.MinCount, p.MaxCount = to.Ptr(true), to.Ptr[int32](1), to.Ptr[int32](5)
				},
				check: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) error {
					if !deref(p.EnableAutoScaling) || deref(p.MinCount) != 1 || deref(p.MaxCount) != 5 || deref(p.Count) != 3 {
						return fmt.Errorf("autoscaling = %v %d..%d count %d", deref(p.EnableAutoScaling), deref(p.MinCount), deref(p.MaxCount), deref(p.Count))
					}
					return nil
				},
			},
			{
				name: "node labels", pool: "user1",
				change: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) {
					p.NodeLabels = map[string]*string{"workload": to.Ptr("batch")}
				},
				check: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) error {
					if got := derefMap(p.NodeLabels); !maps.Equal(got, map[string]string{"workload": "batch"}) {
						return fmt.Errorf("nodeLabels = %v", got)
					}
					return nil
				},
			},
			{
				name: "node taints", pool: "user1",
				change: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) {
					p.NodeTaints = []*string{to.Ptr("dedicated=batch:NoSchedule")}
				},
				check: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) error {
					if got := derefSlice(p.NodeTaints); !slices.Equal(got, []string{"dedicated=batch:NoSchedule"}) {
						return fmt.Errorf("nodeTaints = %v", got)
					}
					return nil
				},
			},
			{
				name: "orchestratorVersion", pool: "system",
				change: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) {
					p.OrchestratorVersion = to.Ptr("1.32.3")
				},
				check: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) error {
					if deref(p.OrchestratorVersion) != "1.32.3" || deref(p.CurrentOrchestratorVersion) != "1.32.3" {
						return fmt.Errorf("version = %q/%q", deref(p.OrchestratorVersion), deref(p.CurrentOrchestratorVersion))
					}
					return nil
				},
			},
			{
				name: "mode to System", pool: "user1",
				change: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) {
					p.Mode = to.Ptr(armcontainerservice.AgentPoolModeSystem)
				},
				check: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) error {
					if deref(p.Mode) != "System" {
						return fmt.Errorf("mode = %q", deref(p.Mode))
					}
					return nil
				},
			},
			{
				name: "mode to User", pool: "system",
				change: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) {
					p.Mode = to.Ptr(armcontainerservice.AgentPoolModeUser)
				},
				check: func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) error {
					if deref(p.Mode) != "User" {
						return fmt.Errorf("mode = %q", deref(p.Mode))
					}
					return nil
				},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res, err := putPool(ctx, c, "lifecycle", tt.pool, tt.change)
				if err != nil {
					t.Fatalf("put pool %s: %v", tt.pool, err)
				}
				got, err := c.pools.Get(ctx, rg, "lifecycle", tt.pool, nil)
				if err != nil {
					t.Fatalf("Get pool: %v", err)
				}
				cl, err := c.clusters.Get(ctx, rg, "lifecycle", nil)
				if err != nil {
					t.Fatalf("Get cluster: %v", err)
				}
				inCluster := findPool(cl.ManagedCluster, tt.pool)
				for _, p := range []*armcontainerservice.ManagedClusterAgentPoolProfileProperties{res.Properties, got.Properties, profileProps(t, inCluster)} {
					if s := deref(p.ProvisioningState); s != "Succeeded" {
						t.Fatalf("provisioningState = %q", s)
					}
					if err := tt.check(p); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	})

	t.Run("list pools", func(t *testing.T) {
		var names []string
		for pager := c.pools.NewListPager(rg, "lifecycle", nil); pager.More(); {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatalf("list pools: %v", err)
			}
			for _, p := range page.Value {
				names = append(names, deref(p.Name))
			}
		}
		if !slices.Equal(names, []string{"system", "user1"}) {
			t.Fatalf("pools = %v", names)
		}
	})

	t.Run("admin kubeconfig", func(t *testing.T) {
		res, err := c.clusters.ListClusterAdminCredentials(ctx, rg, "lifecycle", nil)
		if err != nil {
			t.Fatalf("ListClusterAdminCredentials: %v", err)
		}
		if len(res.Kubeconfigs) != 1 || deref(res.Kubeconfigs[0].Name) != "clusterAdmin" {
			t.Fatalf("kubeconfigs = %+v", res.Kubeconfigs)
		}
		kc := string(res.Kubeconfigs[0].Value)
		if !strings.Contains(kc, "server: https://"+deref(created.Properties.Fqdn)+":443") || !strings.Contains(kc, "certificate-authority-data: ") {
			t.Fatalf("kubeconfig:\n%s", kc)
		}
	})

	t.Run("delete pool then cluster", func(t *testing.T) {
		dp, err := c.pools.BeginDelete(ctx, rg, "lifecycle", "system", nil)
		if err != nil {
			t.Fatalf("BeginDelete pool: %v", err)
		}
		if _, err := dp.PollUntilDone(ctx, poll); err != nil {
			t.Fatalf("PollUntilDone(delete pool): %v", err)
		}
		if _, err := c.pools.Get(ctx, rg, "lifecycle", "system", nil); errorCode(err) != "ResourceNotFound" || statusCode(err) != 404 {
			t.Fatalf("Get deleted pool: err = %v", err)
		}
		dc, err := c.clusters.BeginDelete(ctx, rg, "lifecycle", nil)
		if err != nil {
			t.Fatalf("BeginDelete cluster: %v", err)
		}
		if _, err := dc.PollUntilDone(ctx, poll); err != nil {
			t.Fatalf("PollUntilDone(delete cluster): %v", err)
		}
		if _, err := c.clusters.Get(ctx, rg, "lifecycle", nil); errorCode(err) != "ResourceNotFound" || statusCode(err) != 404 {
			t.Fatalf("Get deleted cluster: err = %v", err)
		}
		if n := sim.ClusterCount(); n != 0 {
			t.Fatalf("ClusterCount = %d", n)
		}
	})

	for _, op := range []string{"Token", "ManagedClusters.CreateOrUpdate", "ManagedClusters.Get", "ManagedClusters.UpdateTags",
		"ManagedClusters.Delete", "AgentPools.CreateOrUpdate", "AgentPools.Get", "AgentPools.Delete", "AgentPools.List", "Operations.Get"} {
		if sim.Counters().Get(op) == 0 {
			t.Errorf("counter %s = 0; counters %v", op, sim.Counters().Snapshot())
		}
	}
}

// TestInProgressAndConflicts holds operations open with a manual clock to observe the
// in-progress states and the 409 a second mutation gets.
func TestInProgressAndConflicts(t *testing.T) {
	ctx := t.Context()
	clock := simcore.NewManualClock(time.Now())
	const delay = time.Minute
	sim := newSim(t, aks.Options{Delay: delay, Clock: clock})
	c := newSDK(t, sim, subID, secret, nil)

	cp, err := c.clusters.BeginCreateOrUpdate(ctx, rg, "busy", clusterBody("1.31.6"), nil)
	if err != nil {
		t.Fatalf("BeginCreateOrUpdate: %v", err)
	}
	st, _ := sim.ManagedCluster(subID, rg, "busy")
	if s := deref(st.Properties.ProvisioningState); s != "Creating" {
		t.Fatalf("provisioningState while creating = %q", s)
	}
	if _, err := cp.Poll(ctx); err != nil || cp.Done() {
		t.Fatalf("poll while creating: done=%v err=%v", cp.Done(), err)
	}
	clock.Advance(delay)
	if _, err := cp.PollUntilDone(ctx, poll); err != nil {
		t.Fatalf("PollUntilDone(create): %v", err)
	}

	// An upgrade in progress.
	got, err := c.clusters.Get(ctx, rg, "busy", nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	mc := got.ManagedCluster
	mc.Properties.KubernetesVersion = to.Ptr("1.32.2")
	up, err := c.clusters.BeginCreateOrUpdate(ctx, rg, "busy", mc, nil)
	if err != nil {
		t.Fatalf("BeginCreateOrUpdate(upgrade): %v", err)
	}
	got, err = c.clusters.Get(ctx, rg, "busy", nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if s, cur := deref(got.Properties.ProvisioningState), deref(got.Properties.CurrentKubernetesVersion); s != "Upgrading" || cur != "1.31.6" {
		t.Fatalf("during upgrade: provisioningState %q currentKubernetesVersion %q, want Upgrading 1.31.6", s, cur)
	}

	conflicts := []struct {
		name string
		do   func() error
	}{
		{"update tags", func() error {
			_, err := c.clusters.BeginUpdateTags(ctx, rg, "busy", armcontainerservice.TagsObject{Tags: map[string]*string{"a": to.Ptr("b")}}, nil)
			return err
		}},
		{"cluster put", func() error {
			_, err := c.clusters.BeginCreateOrUpdate(ctx, rg, "busy", mc, nil)
			return err
		}},
		{"pool put", func() error {
			_, err := c.pools.BeginCreateOrUpdate(ctx, rg, "busy", "extra", armcontainerservice.AgentPool{
				Properties: &armcontainerservice.ManagedClusterAgentPoolProfileProperties{Count: to.Ptr[int32](1)}}, nil)
			return err
		}},
		{"pool delete", func() error {
			_, err := c.pools.BeginDelete(ctx, rg, "busy", "system", nil)
			return err
		}},
	}
	for _, tt := range conflicts {
		t.Run("cluster busy/"+tt.name, func(t *testing.T) {
			err := tt.do()
			if statusCode(err) != 409 || errorCode(err) != "OperationNotAllowed" || !strings.Contains(err.Error(), "in progress upgrade managed cluster operation") {
				t.Fatalf("err = %v, want 409 OperationNotAllowed", err)
			}
		})
	}
	clock.Advance(delay)
	res, err := up.PollUntilDone(ctx, poll)
	if err != nil {
		t.Fatalf("PollUntilDone(upgrade): %v", err)
	}
	if s, cur := deref(res.Properties.ProvisioningState), deref(res.Properties.CurrentKubernetesVersion); s != "Succeeded" || cur != "1.32.2" {
		t.Fatalf("after upgrade: %q %q", s, cur)
	}

	// A pool scale in progress: the pool shows Scaling, the cluster stays Succeeded.
	pp, err := c.pools.BeginCreateOrUpdate(ctx, rg, "busy", "system", armcontainerservice.AgentPool{
		Properties: &armcontainerservice.ManagedClusterAgentPoolProfileProperties{Count: to.Ptr[int32](4), Mode: to.Ptr(armcontainerservice.AgentPoolModeSystem)}}, nil)
	if err != nil {
		t.Fatalf("BeginCreateOrUpdate(pool scale): %v", err)
	}
	got, err = c.clusters.Get(ctx, rg, "busy", nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if s, ps := deref(got.Properties.ProvisioningState), deref(findPool(got.ManagedCluster, "system").ProvisioningState); s != "Succeeded" || ps != "Scaling" {
		t.Fatalf("during scale: cluster %q pool %q, want Succeeded/Scaling", s, ps)
	}
	_, err = c.pools.BeginCreateOrUpdate(ctx, rg, "busy", "system", armcontainerservice.AgentPool{
		Properties: &armcontainerservice.ManagedClusterAgentPoolProfileProperties{Count: to.Ptr[int32](5)}}, nil)
	if statusCode(err) != 409 || !strings.Contains(err.Error(), "Another agentpool operation (system - Scaling) is in progress") {
		t.Fatalf("second pool mutation: err = %v, want 409", err)
	}
	_, err = c.clusters.BeginUpdateTags(ctx, rg, "busy", armcontainerservice.TagsObject{}, nil)
	if statusCode(err) != 409 {
		t.Fatalf("cluster mutation while a pool scales: err = %v, want 409", err)
	}
	clock.Advance(delay)
	if _, err := pp.PollUntilDone(ctx, poll); err != nil {
		t.Fatalf("PollUntilDone(pool scale): %v", err)
	}

	// A delete supersedes a running update; the update's poller ends Canceled.
	tp, err := c.clusters.BeginUpdateTags(ctx, rg, "busy", armcontainerservice.TagsObject{Tags: map[string]*string{"x": to.Ptr("y")}}, nil)
	if err != nil {
		t.Fatalf("BeginUpdateTags: %v", err)
	}
	dp, err := c.clusters.BeginDelete(ctx, rg, "busy", nil)
	if err != nil {
		t.Fatalf("BeginDelete during update: %v", err)
	}
	if _, err := tp.PollUntilDone(ctx, poll); errorCode(err) != "OperationCanceled" {
		t.Fatalf("superseded update: err = %v, want OperationCanceled", err)
	}
	got, err = c.clusters.Get(ctx, rg, "busy", nil)
	if err != nil || deref(got.Properties.ProvisioningState) != "Deleting" {
		t.Fatalf("during delete: %v %v", deref(got.Properties.ProvisioningState), err)
	}
	clock.Advance(delay)
	if _, err := dp.PollUntilDone(ctx, poll); err != nil {
		t.Fatalf("PollUntilDone(delete): %v", err)
	}
	if _, err := c.clusters.Get(ctx, rg, "busy", nil); statusCode(err) != 404 {
		t.Fatalf("Get after delete: %v", err)
	}
}

func TestFailNextOperation(t *testing.T) {
	ctx := t.Context()
	sim := newSim(t, aks.Options{})
	c := newSDK(t, sim, subID, secret, nil)
	createCluster(ctx, t, c, "flaky", clusterBody("1.31.6"))
	if err := sim.FailNextOperation(subID, rg, "flaky", "UpgradeFailed", "drain timed out"); err != nil {
		t.Fatal(err)
	}
	got, err := c.clusters.Get(ctx, rg, "flaky", nil)
	if err != nil {
		t.Fatal(err)
	}
	got.Properties.KubernetesVersion = to.Ptr("1.32.3")
	p, err := c.clusters.BeginCreateOrUpdate(ctx, rg, "flaky", got.ManagedCluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, poll); errorCode(err) != "UpgradeFailed" {
		t.Fatalf("PollUntilDone: err = %v, want UpgradeFailed", err)
	}
	st, ok := sim.ManagedCluster(subID, rg, "flaky")
	if !ok || deref(st.Properties.ProvisioningState) != "Failed" || deref(st.Properties.CurrentKubernetesVersion) != "1.31.6" || deref(st.Properties.KubernetesVersion) != "1.32.3" {
		t.Fatalf("after failed upgrade: %v %q %q", ok, deref(st.Properties.ProvisioningState), deref(st.Properties.CurrentKubernetesVersion))
	}
	// A Failed cluster accepts a retry, which succeeds.
	res := updateCluster(ctx, t, c, "flaky", func(*armcontainerservice.ManagedCluster) {})
	if deref(res.Properties.ProvisioningState) != "Succeeded" || deref(res.Properties.CurrentKubernetesVersion) != "1.32.3" {
		t.Fatalf("retry: %q %q", deref(res.Properties.ProvisioningState), deref(res.Properties.CurrentKubernetesVersion))
	}
}

func TestListPaging(t *testing.T) {
	ctx := t.Context()
	sim := newSim(t, aks.Options{ListPageSize: 2})
	c := newSDK(t, sim, subID, secret, nil)
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("page%d", i)
		if _, err := c.clusters.BeginCreateOrUpdate(ctx, rg, name, clusterBody("1.31.6"), nil); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		want = append(want, name)
	}
	if _, err := c.clusters.BeginCreateOrUpdate(ctx, "other-rg", "elsewhere", clusterBody("1.31.6"), nil); err != nil {
		t.Fatalf("create elsewhere: %v", err)
	}

	var byRG []string
	for pager := c.clusters.NewListByResourceGroupPager(rg, nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListByResourceGroup: %v", err)
		}
		for _, mc := range page.Value {
			byRG = append(byRG, deref(mc.Name))
		}
	}
	if !slices.Equal(byRG, want) {
		t.Fatalf("by resource group = %v, want %v", byRG, want)
	}
	n := 0
	for pager := c.clusters.NewListPager(nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		n += len(page.Value)
	}
	if n != 6 {
		t.Fatalf("subscription list has %d clusters, want 6", n)
	}
	if got := sim.Counters().Get("ManagedClusters.ListByResourceGroup"); got != 3 {
		t.Fatalf("ListByResourceGroup pages = %d, want 3", got)
	}
}

func derefMap(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = deref(v)
	}
	return out
}

// TestPollRetryAfter: with PollRetryAfter set, azcore's poller follows retry-after-ms instead
// of its polling frequency (here an hour), so the operation completes in milliseconds.
func TestPollRetryAfter(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sim := newSim(t, aks.Options{PollRetryAfter: 5 * time.Millisecond, Delay: 20 * time.Millisecond})
	c := newSDK(t, sim, subID, secret, nil)
	p, err := c.clusters.BeginCreateOrUpdate(ctx, rg, "ra", clusterBody("1.31.6"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Hour}); err != nil {
		t.Fatalf("PollUntilDone: %v", err)
	}
}

// TestConcurrentClients runs independent lifecycles in parallel (for the race detector).
func TestConcurrentClients(t *testing.T) {
	sim := newSim(t, aks.Options{Delay: 10 * time.Millisecond})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			ctx := t.Context()
			c := newSDK(t, sim, subID, secret, nil)
			name := fmt.Sprintf("par%d", i)
			p, err := c.clusters.BeginCreateOrUpdate(ctx, rg, name, clusterBody("1.31.6"), nil)
			if err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
			if _, err := p.PollUntilDone(ctx, poll); err != nil {
				t.Errorf("poll %s: %v", name, err)
				return
			}
			for pager := c.clusters.NewListByResourceGroupPager(rg, nil); pager.More(); {
				if _, err := pager.NextPage(ctx); err != nil {
					t.Errorf("list: %v", err)
					return
				}
			}
			d, err := c.clusters.BeginDelete(ctx, rg, name, nil)
			if err != nil {
				t.Errorf("delete %s: %v", name, err)
				return
			}
			if _, err := d.PollUntilDone(ctx, poll); err != nil {
				t.Errorf("poll delete %s: %v", name, err)
			}
		})
	}
	wg.Wait()
	if n := sim.ClusterCount(); n != 0 {
		t.Fatalf("ClusterCount = %d after deleting everything", n)
	}
}
