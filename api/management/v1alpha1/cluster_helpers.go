package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Provider-neutral reads of a Cluster, shared by the CLI and the dashboard.

// Location is the cluster's region (EKS), location (AKS) or region or zone (GKE); "" if unset.
func (c *Cluster) Location() string {
	switch {
	case c.Spec.EKSConfig != nil:
		return c.Spec.EKSConfig.Region
	case c.Spec.AKSConfig != nil:
		return c.Spec.AKSConfig.ResourceLocation
	case c.Spec.GKEConfig != nil:
		return c.Spec.GKEConfig.Region + c.Spec.GKEConfig.Zone
	}
	return ""
}

// KubernetesVersion is the configured Kubernetes version, else the one last read from the
// provider (an imported cluster usually leaves it unmanaged); "" if neither is known.
func (c *Cluster) KubernetesVersion() string {
	var v *string
	switch s := &c.Status; {
	case c.Spec.EKSConfig != nil:
		v = c.Spec.EKSConfig.KubernetesVersion
		if v == nil && s.EKSStatus != nil && s.EKSStatus.UpstreamSpec != nil {
			v = s.EKSStatus.UpstreamSpec.KubernetesVersion
		}
	case c.Spec.AKSConfig != nil:
		v = c.Spec.AKSConfig.KubernetesVersion
		if v == nil && s.AKSStatus != nil && s.AKSStatus.UpstreamSpec != nil {
			v = s.AKSStatus.UpstreamSpec.KubernetesVersion
		}
	case c.Spec.GKEConfig != nil:
		v = c.Spec.GKEConfig.KubernetesVersion
		if v == nil && s.GKEStatus != nil && s.GKEStatus.UpstreamSpec != nil {
			v = s.GKEStatus.UpstreamSpec.KubernetesVersion
		}
	}
	if v == nil {
		return ""
	}
	return *v
}

// Imported reports whether the cluster was imported (drover did not create it).
func (c *Cluster) Imported() bool {
	switch {
	case c.Spec.EKSConfig != nil:
		return c.Spec.EKSConfig.Imported
	case c.Spec.AKSConfig != nil:
		return c.Spec.AKSConfig.Imported
	case c.Spec.GKEConfig != nil:
		return c.Spec.GKEConfig.Imported
	}
	return false
}

// FleetPlace is where a hosted cluster is in the fleet, from status.fleet.
type FleetPlace string

// Places in the fleet.
const (
	// FleetPlaceUnknown: the join controller has not looked at the cluster yet.
	FleetPlaceUnknown FleetPlace = ""
	// FleetPlaceAgentReady: joined, and the agent checked in.
	FleetPlaceAgentReady FleetPlace = "agent_ready"
	// FleetPlaceJoined: joined (kubeconfig Secret and fleet Cluster in place); the agent has not
	// checked in yet.
	FleetPlaceJoined FleetPlace = "joined"
	// FleetPlaceWaiting: the cluster is not active yet.
	FleetPlaceWaiting FleetPlace = "waiting"
	// FleetPlaceNotJoined: the join failed; the Joined condition's reason and message say why
	// and what to do.
	FleetPlaceNotJoined FleetPlace = "not_joined"
	// FleetPlaceLeaving: the agent and fleet Cluster are being removed.
	FleetPlaceLeaving FleetPlace = "leaving"
	// FleetPlaceOut: the cluster does not join (spec.fleet.join false, or the server's default).
	FleetPlaceOut FleetPlace = "out"
)

// FleetPlace returns the cluster's place in the fleet and its Joined condition (nil with
// FleetPlaceUnknown).
func (c *Cluster) FleetPlace() (FleetPlace, *metav1.Condition) {
	if c.Status.Fleet == nil {
		return FleetPlaceUnknown, nil
	}
	return FleetPlaceOf(c.Status.Fleet.Conditions)
}

// FleetPlaceOf is FleetPlace for status.fleet's conditions.
func FleetPlaceOf(conds []metav1.Condition) (FleetPlace, *metav1.Condition) {
	joined := meta.FindStatusCondition(conds, ConditionJoined)
	switch {
	case joined == nil:
		return FleetPlaceUnknown, nil
	case joined.Status == metav1.ConditionTrue && meta.IsStatusConditionTrue(conds, ConditionAgentReady):
		return FleetPlaceAgentReady, joined
	case joined.Status == metav1.ConditionTrue:
		return FleetPlaceJoined, joined
	}
	switch joined.Reason {
	case ReasonWaitingForCluster:
		return FleetPlaceWaiting, joined
	case ReasonLeaving:
		return FleetPlaceLeaving, joined
	case ReasonJoinDisabled:
		return FleetPlaceOut, joined
	}
	return FleetPlaceNotJoined, joined
}
