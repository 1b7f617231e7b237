package aks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// Fields AKS cannot change after creation.
var (
	immutableCluster = []string{"dnsPrefix", "networkPlugin", "networkPolicy", "podCidr", "serviceCidr", "dnsServiceIP", "loadBalancerSku", "outboundType", "privateCluster"}
	immutablePool    = []string{"vmSize", "osDiskSizeGB", "availabilityZones", "maxPods"}
)

func typed(tree map[string]any) (*v1.AKSClusterConfig, error) {
	cfg := &v1.AKSClusterConfig{}
	return cfg, hosted.FromTree(tree, cfg)
}

// CheckPush implements hosted.Session: refuse what AKS would refuse, before sending anything.
func (s *session) CheckPush(push []merge.Change, effective, upstream map[string]any) error {
	eff, err := typed(effective)
	if err != nil {
		return err
	}
	up, err := typed(upstream)
	if err != nil {
		return err
	}
	effVersion, _ := parseVersion(ptr.Deref(eff.KubernetesVersion, ""))
	pools := false
	for _, ch := range push {
		top := ch.Path.Top()
		switch {
		case top == "kubernetesVersion":
			want, ok := parseVersion(ptr.Deref(eff.KubernetesVersion, ""))
			have, okUp := parseVersion(ptr.Deref(up.KubernetesVersion, ""))
			if !ok || !okUp {
				continue
			}
			if have.newerThan(want) {
				return bad(top, v1.ReasonVersionDowngrade, "AKS cannot downgrade: the cluster runs %s, the config asks for %s; set %s or later", *up.KubernetesVersion, *eff.KubernetesVersion, *up.KubernetesVersion)
			}
			if want.major != have.major || want.minor > have.minor+1 {
				return bad(top, v1.ReasonVersionSkip, "AKS upgrades one minor version at a time: the cluster runs %s, so set %d.%d first, then %s", *up.KubernetesVersion, have.major, have.minor+1, *eff.KubernetesVersion)
			}
		case slices.Contains(immutableCluster, top):
			return bad(top, v1.ReasonImmutableField, "AKS cannot change %s of an existing cluster (it has %s); revert the change or create a new cluster", top, show(upstream[top]))
		case top == "nodePools" && len(ch.Path) >= 2:
			pools = true
			name := ch.Path[1].Key
			f := "nodePools[" + name + "]"
			np, existing := configPool(eff, name), configPool(up, name)
			switch {
			case np == nil: // deletion: see the System pool check below
			case existing == nil || len(ch.Path) == 2: // creation
				if err := checkPoolVersion(f, np, eff, effVersion); err != nil {
					return err
				}
			case len(ch.Path) >= 3 && slices.Contains(immutablePool, ch.Path[2].Field):
				field := ch.Path[2].Field
				return bad(f+"."+field, v1.ReasonImmutableField, "AKS cannot change %s of an existing node pool (it has %s); revert the change, or create a new pool and delete this one", field, show(poolValue(upstream, name, field)))
			case len(ch.Path) >= 3 && ch.Path[2].Field == "orchestratorVersion":
				nv, ok := parseVersion(ptr.Deref(np.OrchestratorVersion, ""))
				ov, okOld := parseVersion(ptr.Deref(existing.OrchestratorVersion, ""))
				if ok && okOld && ov.newerThan(nv) {
					return bad(f+".orchestratorVersion", v1.ReasonVersionDowngrade, "AKS cannot downgrade node pool %s from %s to %s", name, *existing.OrchestratorVersion, *np.OrchestratorVersion)
				}
				if err := checkPoolVersion(f, np, eff, effVersion); err != nil {
					return err
				}
			}
			if np != nil {
				if err := checkScaling(f, np); err != nil {
					return err
				}
			}
		}
	}
	if pools && eff.NodePools != nil && !slices.ContainsFunc(eff.NodePools, func(p v1.AKSNodePool) bool { return ptr.Deref(p.Mode, "") == ModeSystem }) {
		// Name the System pool that would go: deleted, or switched to User.
		victim := ""
		for _, p := range up.NodePools {
			if ptr.Deref(p.Mode, "") == ModeSystem {
				victim = p.Name
				break
			}
		}
		return lastSystemPool(victim)
	}
	return nil
}

func checkPoolVersion(f string, np *v1.AKSNodePool, eff *v1.AKSClusterConfig, cluster version) error {
	nv, ok := parseVersion(ptr.Deref(np.OrchestratorVersion, ""))
	if ok && nv.newerThan(cluster) {
		return bad(f+".orchestratorVersion", v1.ReasonNodeVersionTooNew, "node pool version %s is newer than the cluster's %s: upgrade the cluster first", *np.OrchestratorVersion, ptr.Deref(eff.KubernetesVersion, ""))
	}
	return nil
}

func checkScaling(f string, np *v1.AKSNodePool) error {
	if ptr.Deref(np.EnableAutoScaling, false) {
		switch {
		case np.MinCount == nil:
			return bad(f+".minCount", v1.ReasonMissingField, "required when enableAutoScaling is true")
		case np.MaxCount == nil:
			return bad(f+".maxCount", v1.ReasonMissingField, "required when enableAutoScaling is true")
		case *np.MinCount > *np.MaxCount:
			return bad(f+".minCount", v1.ReasonInvalidScaling, "minCount %d is larger than maxCount %d", *np.MinCount, *np.MaxCount)
		}
		return nil
	}
	if np.MinCount != nil {
		return bad(f+".minCount", v1.ReasonInvalidScaling, "set only with enableAutoScaling true; set it to null, or turn autoscaling on")
	}
	if np.MaxCount != nil {
		return bad(f+".maxCount", v1.ReasonInvalidScaling, "set only with enableAutoScaling true; set it to null, or turn autoscaling on")
	}
	return nil
}

func poolValue(tree map[string]any, name, field string) any {
	v, _ := schema.Get(tree, merge.Path{{Field: "nodePools"}, {Key: name}, {Field: field}})
	return v
}

func show(v any) string { return fmt.Sprint(v) }

// Push implements hosted.Session. It starts at most one ARM long-running operation per pass,
// never waiting for it (the next GET shows its progress), in the order AKS accepts them:
// the cluster (tags alone by PATCH; version and authorized IP ranges, with any tag change, by
// one PUT of the cluster as read with only those fields changed), then node pools by name:
// deletions, creations, updates — keeping a System pool at every step.
func (s *session) Push(ctx context.Context, _ *v1.Cluster, push []merge.Change, effective, _ map[string]any) ([]merge.Change, *hosted.Started, error) {
	eff, err := typed(effective)
	if err != nil {
		return nil, nil, err
	}
	rg, name := s.cfg.ResourceGroup, s.cfg.ClusterName
	var gone []merge.Change
	start := func(op string, handled []merge.Change, err error) ([]merge.Change, *hosted.Started, error) {
		if err != nil {
			return nil, nil, classify(op, err)
		}
		handled = append(handled, gone...)
		return handled, &hosted.Started{ID: operationID(op), What: fmt.Sprintf("%s on AKS cluster %s (%s)", op, name, merge.Describe(handled))}, nil
	}

	// Every write is a read-modify-write of what Observe read, so it carries the eTag read
	// (If-Match): a change made meanwhile elsewhere fails it with 412 instead of being overwritten,
	// and the next pass re-reads and merges again.
	tags := merge.Under(push, "tags")
	clusterPut := append(merge.Under(push, "kubernetesVersion"), merge.Under(push, "authorizedIPRanges")...)
	if len(clusterPut) > 0 {
		mc := s.clusterBody(eff)
		_, err := s.clusters.BeginCreateOrUpdate(ctx, rg, name, mc, &armcontainerservice.ManagedClustersClientBeginCreateOrUpdateOptions{IfMatch: s.mc.ETag})
		return start("ManagedClusters.CreateOrUpdate", append(clusterPut, tags...), err)
	}
	if len(tags) > 0 {
		_, err := s.clusters.BeginUpdateTags(ctx, rg, name, armcontainerservice.TagsObject{Tags: toPtrMap(orEmpty(eff.Tags))}, &armcontainerservice.ManagedClustersClientBeginUpdateTagsOptions{IfMatch: s.mc.ETag})
		return start("ManagedClusters.UpdateTags", tags, err)
	}

	byPool := map[string][]merge.Change{}
	var order []string
	for _, ch := range merge.Under(push, "nodePools") {
		if len(ch.Path) < 2 {
			continue
		}
		n := ch.Path[1].Key
		if _, ok := byPool[n]; !ok {
			order = append(order, n)
		}
		byPool[n] = append(byPool[n], ch)
	}
	if len(order) == 0 {
		return nil, nil, nil
	}
	systemUp := 0
	upMode := map[string]string{}
	for _, p := range s.mc.Properties.AgentPoolProfiles {
		if p == nil || p.Name == nil || ptr.Deref(p.ProvisioningState, "") == stateDeleting {
			continue
		}
		upMode[*p.Name] = string(ptr.Deref(p.Mode, ""))
		if upMode[*p.Name] == ModeSystem {
			systemUp++
		}
	}
	// Rank each pool's work: safe deletions, creations, updates, then whatever would remove
	// the last System pool that exists right now (by then another one exists).
	type work struct {
		pool string
		rank int
	}
	var todo []work
	for _, n := range order {
		np := configPool(eff, n)
		_, exists := upMode[n]
		lastSystem := upMode[n] == ModeSystem && systemUp <= 1
		switch {
		case np == nil && !exists:
			gone = append(gone, byPool[n]...) // already gone: nothing to do
		case np == nil:
			todo = append(todo, work{n, rankIf(lastSystem, 3, 0)})
		case !exists:
			todo = append(todo, work{n, 1})
		default:
			todo = append(todo, work{n, rankIf(lastSystem && ptr.Deref(np.Mode, ModeSystem) != ModeSystem, 3, 2)})
		}
	}
	if len(todo) == 0 {
		return gone, nil, nil
	}
	slices.SortStableFunc(todo, func(a, b work) int { return a.rank - b.rank })
	n := todo[0].pool
	np := configPool(eff, n)
	if np == nil {
		_, err := s.pools.BeginDelete(ctx, rg, name, n, nil)
		if isNotFound(err) {
			err = nil
		}
		return start("AgentPools.Delete "+n, byPool[n], err)
	}
	var base *armcontainerservice.ManagedClusterAgentPoolProfileProperties
	// A new pool must not exist yet (If-None-Match), an existing one must be as read (If-Match).
	opts := &armcontainerservice.AgentPoolsClientBeginCreateOrUpdateOptions{IfNoneMatch: to.Ptr("*")}
	if _, exists := upMode[n]; exists {
		base = &armcontainerservice.ManagedClusterAgentPoolProfileProperties{}
		if err := convert(s.profile(n), base); err != nil {
			return nil, nil, err
		}
		opts = &armcontainerservice.AgentPoolsClientBeginCreateOrUpdateOptions{IfMatch: s.profile(n).ETag}
	}
	_, err = s.pools.BeginCreateOrUpdate(ctx, rg, name, n, armcontainerservice.AgentPool{Properties: poolBody(base, np)}, opts)
	return start("AgentPools.CreateOrUpdate "+n, byPool[n], err)
}

func rankIf(cond bool, yes, no int) int {
	if cond {
		return yes
	}
	return no
}

func (s *session) profile(name string) *armcontainerservice.ManagedClusterAgentPoolProfile {
	for _, p := range s.mc.Properties.AgentPoolProfiles {
		if p != nil && ptr.Deref(p.Name, "") == name {
			return p
		}
	}
	return nil
}

// clusterBody is the cluster as Observe read it with the managed cluster-level fields set from
// the effective config. Agent pools are left out: a cluster PUT without agentPoolProfiles leaves
// them alone, whereas echoing them back would reset a count the autoscaler changed meanwhile.
func (s *session) clusterBody(eff *v1.AKSClusterConfig) armcontainerservice.ManagedCluster {
	mc := *s.mc
	props := *mc.Properties
	mc.Properties = &props
	props.AgentPoolProfiles = nil
	props.ProvisioningState, props.PowerState, props.CurrentKubernetesVersion = nil, nil, nil
	props.Fqdn, props.PrivateFQDN, props.AzurePortalFQDN, props.MaxAgentPools, props.ResourceUID = nil, nil, nil, nil, nil
	mc.Tags = toPtrMap(orEmpty(eff.Tags))
	if eff.KubernetesVersion != nil {
		props.KubernetesVersion = eff.KubernetesVersion
	}
	ap := &armcontainerservice.ManagedClusterAPIServerAccessProfile{}
	if props.APIServerAccessProfile != nil {
		*ap = *props.APIServerAccessProfile
	}
	if eff.AuthorizedIPRanges != nil {
		ap.AuthorizedIPRanges = toPtrSlice(eff.AuthorizedIPRanges)
	}
	props.APIServerAccessProfile = ap
	return mc
}

// poolBody is the body of an agent pool PUT: for an existing pool, the pool as read with the
// mutable fields set from the effective config (a pool PUT replaces labels, taints and
// autoscaling settings wholesale); for a new pool, the config's fields. With autoscaling on the
// count is never sent: it is the autoscaler's.
func poolBody(base *armcontainerservice.ManagedClusterAgentPoolProfileProperties, np *v1.AKSNodePool) *armcontainerservice.ManagedClusterAgentPoolProfileProperties {
	p := base
	if p == nil {
		p = &armcontainerservice.ManagedClusterAgentPoolProfileProperties{
			VMSize:            nonEmpty(np.VMSize),
			OSDiskSizeGB:      np.OSDiskSizeGB,
			AvailabilityZones: toPtrSlice(np.AvailabilityZones),
			MaxPods:           np.MaxPods,
			Type:              to.Ptr(armcontainerservice.AgentPoolTypeVirtualMachineScaleSets),
			OSType:            to.Ptr(armcontainerservice.OSTypeLinux),
		}
		if len(np.AvailabilityZones) == 0 {
			p.AvailabilityZones = nil
		}
	} else {
		p.ProvisioningState, p.PowerState, p.CurrentOrchestratorVersion, p.NodeImageVersion = nil, nil, nil, nil
	}
	p.Mode = enumPtr[armcontainerservice.AgentPoolMode](np.Mode)
	if np.OrchestratorVersion != nil && *np.OrchestratorVersion != "" {
		p.OrchestratorVersion = np.OrchestratorVersion
	}
	auto := ptr.Deref(np.EnableAutoScaling, false)
	p.EnableAutoScaling = to.Ptr(auto)
	p.MinCount, p.MaxCount, p.Count = nil, nil, nil
	if auto {
		p.MinCount, p.MaxCount = np.MinCount, np.MaxCount
		if base == nil {
			p.Count = np.Count // the starting size of a new pool
		}
	} else {
		p.Count = np.Count
	}
	p.NodeLabels = toPtrMap(np.NodeLabels)
	p.NodeTaints = toPtrSlice(np.NodeTaints)
	if len(np.NodeTaints) == 0 {
		p.NodeTaints = nil
	}
	if np.MaxSurge != nil && *np.MaxSurge != "" {
		us := &armcontainerservice.AgentPoolUpgradeSettings{}
		if p.UpgradeSettings != nil {
			*us = *p.UpgradeSettings
		}
		us.MaxSurge = np.MaxSurge
		p.UpgradeSettings = us
	}
	return p
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}

// operationID names a started operation by what it changes: "aks:cluster:<n>" or
// "aks:pool/<name>:<n>". ARM shows an operation's fate in the target's provisioningState, which
// Observe reads anyway, so following it costs no extra call.
func operationID(op string) string {
	target := "cluster"
	if verb, pool, ok := strings.Cut(op, " "); ok && strings.HasPrefix(verb, "AgentPools.") {
		target = "pool/" + pool
		if verb == "AgentPools.Delete" {
			target = "deleted-pool/" + pool
		}
	}
	return target + ":" + strconv.FormatInt(time.Now().UnixNano(), 36)
}
