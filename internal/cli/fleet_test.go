package cli

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestConnected: CONNECTED follows the server's AgentDisconnected verdict, whatever window
// (--agent-disconnect-after) the server runs with, not a window of the CLI's own.
func TestConnected(t *testing.T) {
	recently := metav1.NewTime(time.Now().Add(-30 * time.Second))
	longAgo := metav1.NewTime(time.Now().Add(-time.Hour))
	ready := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: fleetv1alpha1.ConditionReady, Status: status, Reason: reason}}
	}
	for _, tc := range []struct {
		name       string
		lastSeen   *metav1.Time
		conditions []metav1.Condition
		want       bool
	}{
		{name: "never checked in", want: false},
		{name: "checked in, Ready", lastSeen: &recently, conditions: ready(metav1.ConditionTrue, fleetv1alpha1.ReasonSucceeded), want: true},
		{name: "seen an hour ago, server window longer", lastSeen: &longAgo, conditions: ready(metav1.ConditionTrue, fleetv1alpha1.ReasonSucceeded), want: true},
		{name: "seen recently, server says disconnected (short window)", lastSeen: &recently, conditions: ready(metav1.ConditionFalse, fleetv1alpha1.ReasonAgentDisconnected), want: false},
		{name: "not ready for another reason", lastSeen: &recently, conditions: ready(metav1.ConditionFalse, "NamespaceFailed"), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fleetv1alpha1.Cluster{Status: fleetv1alpha1.ClusterStatus{Agent: fleetv1alpha1.AgentStatus{LastSeen: tc.lastSeen}, Conditions: tc.conditions}}
			if got := connected(c); got != tc.want {
				t.Errorf("connected = %v, want %v", got, tc.want)
			}
		})
	}
}
