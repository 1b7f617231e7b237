package cli

import (
	"strings"
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

// TestFleetGetRegisteredWith: fleet get names the token a cluster is registered with (the one
// a registration with another token needs an admin's allowance to replace).
func TestFleetGetRegisteredWith(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc, ns := mgmtKubeconfig(t), mgmt.Namespace(t)
	tok := &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-token"},
		Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}}}
	if err := mgmt.Client.Create(ctx, tok); err != nil {
		t.Fatal(err)
	}
	for name, uid := range map[string]string{"edge": string(tok.UID), "old": "0b5d7c52-0000-0000-0000-000000000000"} {
		c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{fleetv1alpha1.RegistrationTokenAnnotation: uid}}}
		if err := mgmt.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"edge": "token edge-token", "old": "a token since deleted (UID 0b5d7c52-0000-0000-0000-000000000000)"} {
		out, errOut, err := drover(ctx, "fleet", "get", name, "--kubeconfig", kc, "-n", ns)
		if err != nil || !strings.Contains(out, "Registered with:") || !strings.Contains(out, want) {
			t.Errorf("fleet get %s: %v\n%s%s\nwant Registered with: %s", name, err, out, errOut, want)
		}
	}
}
