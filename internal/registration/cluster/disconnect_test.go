package cluster

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestConnection checks the Ready condition and the requeue delay against a fake clock: the
// condition follows lastSeen however often (or late) the reconcile runs.
func TestConnection(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start
	r := &Reconciler{Now: func() time.Time { return now }}
	r.defaults()
	if r.AgentDisconnectAfter != 3*time.Minute {
		t.Fatalf("default disconnect window %s, want 3 heartbeat intervals (3m)", r.AgentDisconnectAfter)
	}
	c := &fleetv1alpha1.Cluster{}
	c.Status.Agent.LastSeen = &metav1.Time{Time: start}
	c.Status.Agent.Namespace = "drover-agent"
	reconcile := func() (time.Duration, *metav1.Condition) {
		SetStatus(c)
		next := r.connection(c)
		return next, meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionReady)
	}

	now = start.Add(time.Minute)
	if next, cond := reconcile(); cond.Status != metav1.ConditionTrue || next != 2*time.Minute {
		t.Fatalf("1m after a check-in: %+v, requeue %s; want Ready and a requeue at the deadline (2m)", cond, next)
	}
	now = start.Add(3 * time.Minute)
	next, cond := reconcile()
	if cond.Status != metav1.ConditionFalse || cond.Reason != fleetv1alpha1.ReasonAgentDisconnected || next != 0 {
		t.Fatalf("at the deadline: %+v, requeue %s; want AgentDisconnected and no requeue", cond, next)
	}
	if !strings.Contains(cond.Message, "2026-01-01T12:00:00Z") || !strings.Contains(cond.Message, "drover-agent-status") {
		t.Errorf("message %q lacks the last-seen time or what to check", cond.Message)
	}
	// A later pass keeps the condition (and its transition time) as it is.
	since := cond.LastTransitionTime
	now = start.Add(10 * time.Minute)
	if _, cond := reconcile(); cond.Reason != fleetv1alpha1.ReasonAgentDisconnected || !cond.LastTransitionTime.Equal(&since) {
		t.Fatalf("a later pass changed the condition: %+v", cond)
	}
	// The next heartbeat brings it back.
	c.Status.Agent.LastSeen = &metav1.Time{Time: now}
	if next, cond := reconcile(); cond.Status != metav1.ConditionTrue || cond.Reason != fleetv1alpha1.ReasonSucceeded || next != 3*time.Minute {
		t.Fatalf("after a heartbeat: %+v, requeue %s", cond, next)
	}
	// Never checked in: waiting, not disconnected.
	fresh := &fleetv1alpha1.Cluster{}
	SetStatus(fresh)
	if next := r.connection(fresh); next != 0 || meta.FindStatusCondition(fresh.Status.Conditions, fleetv1alpha1.ConditionReady).Reason != fleetv1alpha1.ReasonWaitCheckIn {
		t.Fatalf("a cluster that never checked in: %+v", fresh.Status.Conditions)
	}
}

func TestSoonest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b, want time.Duration }{{0, 0, 0}, {0, 2, 2}, {3, 0, 3}, {3, 2, 2}, {1, 2, 1}} {
		if got := soonest(tc.a, tc.b); got != tc.want {
			t.Errorf("soonest(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}
