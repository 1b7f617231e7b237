package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClusterReads: an imported cluster that leaves the version unmanaged shows the version read
// from the provider; a configured version wins; location and imported per provider.
func TestClusterReads(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name              string
		c                 Cluster
		location, version string
		imported          bool
	}{
		{name: "eks configured", c: Cluster{Spec: ClusterSpec{EKSConfig: &EKSClusterConfig{Region: "us-west-2", KubernetesVersion: s("1.32")}},
			Status: ClusterStatus{EKSStatus: &EKSStatus{UpstreamSpec: &EKSClusterConfig{KubernetesVersion: s("1.31")}}}},
			location: "us-west-2", version: "1.32"},
		{name: "eks imported, version unmanaged", c: Cluster{Spec: ClusterSpec{EKSConfig: &EKSClusterConfig{Region: "eu-west-1", Imported: true}},
			Status: ClusterStatus{EKSStatus: &EKSStatus{UpstreamSpec: &EKSClusterConfig{KubernetesVersion: s("1.31")}}}},
			location: "eu-west-1", version: "1.31", imported: true},
		{name: "aks not read yet", c: Cluster{Spec: ClusterSpec{AKSConfig: &AKSClusterConfig{ResourceLocation: "westeurope", Imported: true}}},
			location: "westeurope", imported: true},
		{name: "gke zonal", c: Cluster{Spec: ClusterSpec{GKEConfig: &GKEClusterConfig{Zone: "us-central1-a", KubernetesVersion: s("1.33")}}},
			location: "us-central1-a", version: "1.33"},
		{name: "no provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Location(); got != tc.location {
				t.Errorf("Location = %q, want %q", got, tc.location)
			}
			if got := tc.c.KubernetesVersion(); got != tc.version {
				t.Errorf("KubernetesVersion = %q, want %q", got, tc.version)
			}
			if got := tc.c.Imported(); got != tc.imported {
				t.Errorf("Imported = %v, want %v", got, tc.imported)
			}
		})
	}
}

// TestFleetPlace: a hosted cluster's place in the fleet from its status.fleet conditions.
func TestFleetPlace(t *testing.T) {
	cond := func(typ string, ok bool, reason string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason}
	}
	for _, tc := range []struct {
		name  string
		fleet *FleetStatus
		want  FleetPlace
	}{
		{"not looked at", nil, FleetPlaceUnknown},
		{"no Joined yet", &FleetStatus{}, FleetPlaceUnknown},
		{"agent ready", &FleetStatus{Conditions: []metav1.Condition{cond(ConditionJoined, true, ReasonJoined), cond(ConditionAgentReady, true, ReasonAgentCheckedIn)}}, FleetPlaceAgentReady},
		{"joined, agent not yet", &FleetStatus{Conditions: []metav1.Condition{cond(ConditionJoined, true, ReasonJoined), cond(ConditionAgentReady, false, ReasonWaitingForAgent)}}, FleetPlaceJoined},
		{"not active yet", &FleetStatus{Conditions: []metav1.Condition{cond(ConditionJoined, false, ReasonWaitingForCluster)}}, FleetPlaceWaiting},
		{"leaving", &FleetStatus{Conditions: []metav1.Condition{cond(ConditionJoined, false, ReasonLeaving)}}, FleetPlaceLeaving},
		{"opted out", &FleetStatus{Conditions: []metav1.Condition{cond(ConditionJoined, false, ReasonJoinDisabled)}}, FleetPlaceOut},
		{"access entry missing", &FleetStatus{Conditions: []metav1.Condition{cond(ConditionJoined, false, ReasonAccessEntryMissing)}}, FleetPlaceNotJoined},
		{"unreachable, stale AgentReady", &FleetStatus{Conditions: []metav1.Condition{cond(ConditionJoined, false, ReasonUnreachable), cond(ConditionAgentReady, true, ReasonAgentCheckedIn)}}, FleetPlaceNotJoined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{Status: ClusterStatus{Fleet: tc.fleet}}
			if got, _ := c.FleetPlace(); got != tc.want {
				t.Errorf("FleetPlace() = %q, want %q", got, tc.want)
			}
		})
	}
}
