package gke

import (
	"context"
	"fmt"
	"slices"

	container "google.golang.org/api/container/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// Fields GKE cannot change after creation (drover's contract: a new pool, not a rolling
// migration, is how machine type and disk change).
var (
	immutableCluster  = []string{"network", "subnetwork"}
	immutablePoolConf = []string{"machineType", "diskSizeGb", "diskType", "preemptible", "serviceAccount", "oauthScopes"}
)

func typed(tree map[string]any) (*v1.GKEClusterConfig, error) {
	cfg := &v1.GKEClusterConfig{}
	return cfg, hosted.FromTree(tree, cfg)
}

func pool(cfg *v1.GKEClusterConfig, name string) *v1.GKENodePool {
	for i := range cfg.NodePools {
		if cfg.NodePools[i].Name == name {
			return &cfg.NodePools[i]
		}
	}
	return nil
}

func minorOf(v *string) int {
	pv, _ := parseVersion(ptr.Deref(v, ""))
	return pv.minor
}

// CheckPush implements hosted.Session: refuse what GKE would refuse, before sending anything.
func (s *session) CheckPush(push []merge.Change, effective, upstream map[string]any) error {
	eff, err := typed(effective)
	if err != nil {
		return err
	}
	up, err := typed(upstream)
	if err != nil {
		return err
	}
	bad := func(field, reason, format string, args ...any) error {
		return &hosted.FieldError{Field: "gkeConfig." + field, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	for _, ch := range push {
		top := ch.Path.Top()
		switch {
		case top == "kubernetesVersion":
			want, have := minorOf(eff.KubernetesVersion), minorOf(up.KubernetesVersion)
			if want < have {
				return bad(top, v1.ReasonVersionDowngrade, "GKE cannot downgrade the master across minor versions: it runs %s, the config asks for %s; set 1.%d or later", ptr.Deref(up.KubernetesVersion, ""), ptr.Deref(eff.KubernetesVersion, ""), have)
			}
			if want > have+1 {
				return bad(top, v1.ReasonVersionSkip, "GKE upgrades the master one minor version at a time: it runs %s, so set 1.%d first, then %s", ptr.Deref(up.KubernetesVersion, ""), have+1, ptr.Deref(eff.KubernetesVersion, ""))
			}
		case slices.Contains(immutableCluster, top):
			return bad(top, v1.ReasonImmutableField, "GKE cannot change %s after creation (the cluster has %v); revert the change or create a new cluster", top, ch.Upstream)
		case top == "locations" && len(eff.Locations) == 0:
			return bad(top, v1.ReasonInvalidLocation, "a cluster needs at least one node location (a zone of region %s)", regionOf(location(s.cfg)))
		case top == "nodePools" && len(ch.Path) >= 2:
			name := ch.Path[1].Key
			f := fmt.Sprintf("nodePools[%s]", name)
			np, existing := pool(eff, name), pool(up, name)
			switch {
			case np == nil: // deletion
				if len(eff.NodePools) == 0 {
					return bad("nodePools", v1.ReasonLastNodePool, "deleting node pool %s would leave the cluster without node pools; GKE Standard clusters need at least one", name)
				}
			case existing == nil: // creation
				if np.Version != nil && minorOf(np.Version) > minorOf(eff.KubernetesVersion) {
					return bad(f+".version", v1.ReasonNodeVersionTooNew, "node pool version %s is newer than the master's %s: upgrade the master first", *np.Version, ptr.Deref(eff.KubernetesVersion, ""))
				}
			case len(ch.Path) >= 4 && ch.Path[2].Field == "config" && slices.Contains(immutablePoolConf, ch.Path[3].Field):
				field := ch.Path[3].Field
				return bad(f+".config."+field, v1.ReasonImmutableField, "drover does not change %s of an existing node pool (it has %v): create a new node pool with the new value and delete this one", field, ch.Upstream)
			case len(ch.Path) >= 3 && ch.Path[2].Field == "version":
				nv, ov, cv := minorOf(np.Version), minorOf(existing.Version), minorOf(eff.KubernetesVersion)
				if nv < ov {
					return bad(f+".version", v1.ReasonVersionDowngrade, "GKE cannot downgrade node pool %s from %s to %s", name, ptr.Deref(existing.Version, ""), ptr.Deref(np.Version, ""))
				}
				if nv > cv {
					return bad(f+".version", v1.ReasonNodeVersionTooNew, "node pool version %s is newer than the master's %s: upgrade the master first", ptr.Deref(np.Version, ""), ptr.Deref(eff.KubernetesVersion, ""))
				}
			}
		}
	}
	return nil
}

// Push implements hosted.Session. Every GKE mutation is a long-running operation and GKE runs
// one per cluster, so each pass starts at most one, in this order: master version, logging,
// monitoring, master authorized networks, locations, resource labels, maintenance window, then
// node pools (deletions, creations, then per pool: version and node config, size, autoscaling,
// management). The rest is pushed in later passes, once the operation is done.
func (s *session) Push(ctx context.Context, _ *v1.Cluster, push []merge.Change, effective, _ map[string]any) ([]merge.Change, *hosted.Started, error) {
	eff, err := typed(effective)
	if err != nil {
		return nil, nil, err
	}
	name := s.clusterName()
	var done []merge.Change

	// With autoscaling on, the autoscaler owns the node count: a size change is settled without
	// a call (the next refresh adopts what the autoscaler did), never fought.
	for _, ch := range merge.Under(push, "nodePools") {
		if len(ch.Path) == 3 && ch.Path[2].Field == "initialNodeCount" {
			if np := pool(eff, ch.Path[1].Key); np != nil && autoscaled(np) && s.poolStatus[np.Name] != "" {
				done = append(done, ch)
			}
		}
	}

	start := func(method string, handled []merge.Change, op *container.Operation, err error) ([]merge.Change, *hosted.Started, error) {
		if err != nil {
			return done, nil, classify(method, err)
		}
		return append(done, handled...), &hosted.Started{ID: op.Name, What: fmt.Sprintf("%s on GKE cluster %s (%s)", method, s.cfg.ClusterName, merge.Describe(handled))}, nil
	}

	if ch := merge.Under(push, "kubernetesVersion"); len(ch) > 0 {
		op, err := s.api.UpdateMaster(ctx, name, &container.UpdateMasterRequest{MasterVersion: ptr.Deref(eff.KubernetesVersion, "")})
		return start("clusters.updateMaster", ch, op, err)
	}
	if ch := merge.Under(push, "loggingService"); len(ch) > 0 {
		op, err := s.api.SetLogging(ctx, name, &container.SetLoggingServiceRequest{LoggingService: ptr.Deref(eff.LoggingService, "")})
		return start("clusters.setLogging", ch, op, err)
	}
	if ch := merge.Under(push, "monitoringService"); len(ch) > 0 {
		op, err := s.api.SetMonitoring(ctx, name, &container.SetMonitoringServiceRequest{MonitoringService: ptr.Deref(eff.MonitoringService, "")})
		return start("clusters.setMonitoring", ch, op, err)
	}
	if ch := merge.Under(push, "masterAuthorizedNetworks"); len(ch) > 0 {
		man := authorizedNetworks(eff.MasterAuthorizedNetworks)
		if man == nil {
			man = &container.MasterAuthorizedNetworksConfig{ForceSendFields: []string{"Enabled"}}
		}
		op, err := s.api.UpdateCluster(ctx, name, &container.UpdateClusterRequest{Update: &container.ClusterUpdate{DesiredMasterAuthorizedNetworksConfig: man}})
		return start("clusters.update", ch, op, err)
	}
	if ch := merge.Under(push, "locations"); len(ch) > 0 {
		op, err := s.api.SetLocations(ctx, name, &container.SetLocationsRequest{Locations: eff.Locations})
		return start("clusters.setLocations", ch, op, err)
	}
	if ch := merge.Under(push, "labels"); len(ch) > 0 {
		op, err := s.api.SetResourceLabels(ctx, name, &container.SetLabelsRequest{ResourceLabels: orEmpty(eff.Labels), LabelFingerprint: s.labelFingerprint})
		return start("clusters.setResourceLabels", ch, op, err)
	}
	if ch := merge.Under(push, "maintenanceWindow"); len(ch) > 0 {
		mp := maintenancePolicy(ptr.To(ptr.Deref(eff.MaintenanceWindow, "")), s.maintenanceRV)
		op, err := s.api.SetMaintenancePolicy(ctx, name, &container.SetMaintenancePolicyRequest{MaintenancePolicy: mp})
		return start("clusters.setMaintenancePolicy", ch, op, err)
	}

	byPool := map[string][]merge.Change{}
	var order []string
	for _, ch := range merge.Under(push, "nodePools") {
		if len(ch.Path) < 2 || merge.Has(done, ch.Path) {
			continue
		}
		n := ch.Path[1].Key
		if _, ok := byPool[n]; !ok {
			order = append(order, n)
		}
		byPool[n] = append(byPool[n], ch)
	}
	// Deletions first (they free quota and names), then creations, then updates.
	for _, n := range order {
		if pool(eff, n) == nil {
			op, err := s.api.DeleteNodePool(ctx, s.poolName(n))
			if isNotFound(err) {
				return append(done, byPool[n]...), nil, nil
			}
			return start("nodePools.delete "+n, byPool[n], op, err)
		}
	}
	for _, n := range order {
		if _, exists := s.poolStatus[n]; !exists {
			want := pool(eff, n)
			np := nodePool(want)
			if want.InitialNodeCount == nil && !autoscaled(want) {
				np.InitialNodeCount = DefaultNodeCount
			}
			op, err := s.api.CreateNodePool(ctx, name, &container.CreateNodePoolRequest{NodePool: np})
			return start("nodePools.create "+n, byPool[n], op, err)
		}
	}
	for _, n := range order {
		np := pool(eff, n)
		var update, size, scaling, mgmt []merge.Change
		for _, ch := range byPool[n] {
			if len(ch.Path) < 3 {
				continue
			}
			switch ch.Path[2].Field {
			case "version", "config":
				update = append(update, ch)
			case "initialNodeCount":
				size = append(size, ch)
			case "autoscaling":
				scaling = append(scaling, ch)
			case "management":
				mgmt = append(mgmt, ch)
			}
		}
		if len(update) > 0 {
			op, err := s.api.UpdateNodePool(ctx, s.poolName(n), updateRequest(np, update))
			return start("nodePools.update "+n, update, op, err)
		}
		if len(size) > 0 && !autoscaled(np) {
			op, err := s.api.SetNodePoolSize(ctx, s.poolName(n), &container.SetNodePoolSizeRequest{NodeCount: ptr.Deref(np.InitialNodeCount, 0), ForceSendFields: []string{"NodeCount"}})
			return start("nodePools.setSize "+n, size, op, err)
		}
		if len(scaling) > 0 {
			a := np.Autoscaling
			req := &container.SetNodePoolAutoscalingRequest{Autoscaling: &container.NodePoolAutoscaling{
				Enabled: ptr.Deref(a.Enabled, false), MinNodeCount: ptr.Deref(a.MinNodeCount, 0), MaxNodeCount: ptr.Deref(a.MaxNodeCount, 0),
				ForceSendFields: []string{"Enabled"},
			}}
			op, err := s.api.SetNodePoolAutoscaling(ctx, s.poolName(n), req)
			return start("nodePools.setAutoscaling "+n, scaling, op, err)
		}
		if len(mgmt) > 0 {
			m := np.Management
			req := &container.SetNodePoolManagementRequest{Management: &container.NodeManagement{
				AutoRepair: ptr.Deref(m.AutoRepair, false), AutoUpgrade: ptr.Deref(m.AutoUpgrade, false),
				ForceSendFields: []string{"AutoRepair", "AutoUpgrade"},
			}}
			op, err := s.api.SetNodePoolManagement(ctx, s.poolName(n), req)
			return start("nodePools.setManagement "+n, mgmt, op, err)
		}
	}
	return done, nil, nil
}

// updateRequest is one nodePools.update for the pool's version and mutable node config: the
// version (with the image type GKE requires alongside it), image type, labels, taints and
// network tags, each sent whole.
func updateRequest(np *v1.GKENodePool, changes []merge.Change) *container.UpdateNodePoolRequest {
	req := &container.UpdateNodePoolRequest{}
	nc := np.Config
	if nc == nil {
		nc = &v1.GKENodeConfig{}
	}
	for _, ch := range changes {
		switch {
		case ch.Path[2].Field == "version":
			req.NodeVersion = ptr.Deref(np.Version, "-")
			req.ImageType = ptr.Deref(nc.ImageType, "")
		case len(ch.Path) < 4:
		case ch.Path[3].Field == "imageType":
			req.ImageType = ptr.Deref(nc.ImageType, "")
		case ch.Path[3].Field == "labels":
			req.Labels = &container.NodeLabels{Labels: orEmpty(nc.Labels), ForceSendFields: []string{"Labels"}}
		case ch.Path[3].Field == "taints":
			req.Taints = &container.NodeTaints{Taints: taints(nc.Taints), ForceSendFields: []string{"Taints"}}
		case ch.Path[3].Field == "tags":
			req.Tags = &container.NetworkTags{Tags: nonNil(nc.Tags), ForceSendFields: []string{"Tags"}}
		}
	}
	return req
}

func autoscaled(np *v1.GKENodePool) bool {
	return np.Autoscaling != nil && ptr.Deref(np.Autoscaling.Enabled, false)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
