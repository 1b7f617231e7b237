package cluster

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

func TestCredentialCondition(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{RequestTokenTTL: 10 * time.Second, RenewalTokenTTL: 100 * time.Second, Now: func() time.Time { return now }}
	tests := []struct {
		name       string
		seenAgo    time.Duration
		imported   bool
		wantReason string
		wantNext   time.Duration
		wantInMsg  string
	}{
		{"checked in recently", 4 * time.Second, false, fleetv1alpha1.ReasonCredentialCurrent, 6 * time.Second, ""},
		{"away 3x the request token's life", 30 * time.Second, false, fleetv1alpha1.ReasonCredentialExpired, 20 * time.Second, "renewal identity"},
		{"away past the renewal identity's guaranteed life, agent-initiated", 60 * time.Second, false, fleetv1alpha1.ReasonRenewalExpired, 0, "helm upgrade"},
		{"away past the renewal identity's guaranteed life, imported", 60 * time.Second, true, fleetv1alpha1.ReasonRenewalExpired, 0, "drover deploys a new bootstrap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &fleetv1alpha1.Cluster{}
			c.Status.Agent.LastSeen = &metav1.Time{Time: now.Add(-tc.seenAgo)}
			if tc.imported {
				c.Spec.KubeConfigSecret = "kc"
			}
			next := r.credentialCondition(c)
			cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionAgentCredential)
			if cond == nil || cond.Reason != tc.wantReason {
				t.Fatalf("condition %+v, want reason %s", cond, tc.wantReason)
			}
			if next != tc.wantNext {
				t.Errorf("next check in %s, want %s", next, tc.wantNext)
			}
			if !strings.Contains(cond.Message, tc.wantInMsg) {
				t.Errorf("message %q lacks %q", cond.Message, tc.wantInMsg)
			}
		})
	}

	t.Run("a re-registration is not overwritten while current", func(t *testing.T) {
		c := &fleetv1alpha1.Cluster{}
		c.Status.Agent.LastSeen = &metav1.Time{Time: now}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionAgentCredential, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonReregistered, Message: "m"})
		r.credentialCondition(c)
		if cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionAgentCredential); cond.Reason != fleetv1alpha1.ReasonReregistered {
			t.Errorf("reason %s, want %s kept", cond.Reason, fleetv1alpha1.ReasonReregistered)
		}
	})
	t.Run("back after expiry: re-registered", func(t *testing.T) {
		c := &fleetv1alpha1.Cluster{}
		c.Status.Agent.LastSeen = &metav1.Time{Time: now}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionAgentCredential, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonCredentialExpired, Message: "m"})
		r.credentialCondition(c)
		if cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionAgentCredential); cond.Reason != fleetv1alpha1.ReasonReregistered {
			t.Errorf("reason %s, want %s", cond.Reason, fleetv1alpha1.ReasonReregistered)
		}
	})
	t.Run("never checked in: no condition", func(t *testing.T) {
		c := &fleetv1alpha1.Cluster{}
		if next := r.credentialCondition(c); next != 0 || len(c.Status.Conditions) != 0 {
			t.Errorf("next %s, conditions %+v", next, c.Status.Conditions)
		}
	})
}
