package bundle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

type eventLog []string

func (l *eventLog) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	*l = append(*l, eventtype+" "+reason+" "+fmt.Sprintf(note, args...))
}

// TestNotReadyEventAfterGrace: workloads not ready during a rollout are no Warning; still not
// ready after NotReadyGrace they are, once per not-ready spell, and the Bundle is looked at
// again when the grace ends.
func TestNotReadyEventAfterGrace(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	now := t0.Add(30 * time.Second)
	log := &eventLog{}
	r := &Reconciler{NotReadyGrace: 2 * time.Minute, Recorder: log, now: func() time.Time { return now }, started: t0.Add(-time.Hour)}
	bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{UID: "u1", Labels: map[string]string{fleetv1alpha1.ClusterLabel: "edge"}}}
	bd.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonResourcesNotReady, LastTransitionTime: metav1.NewTime(t0)}}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "web"}}
	b.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "NotReady"}}
	b.Status.Summary.NonReadyClusters = []fleetv1alpha1.NonReadyCluster{{Name: "edge", State: StateNotReady, Message: "Deployment web/web: 0/1 replicas available"}}
	before := b.DeepCopy()

	if recheck := r.record(b, before, []*fleetv1alpha1.BundleDeployment{bd}); len(*log) != 0 || recheck != 90*time.Second {
		t.Fatalf("within the grace: events %q, recheck %s; want none, 1m30s", *log, recheck)
	}
	now = t0.Add(3 * time.Minute)
	r.record(b, before, []*fleetv1alpha1.BundleDeployment{bd})
	if len(*log) != 1 || !strings.Contains((*log)[0], "Warning ResourcesNotReady Cluster edge: not ready for 3m") || !strings.Contains((*log)[0], "0/1 replicas") {
		t.Fatalf("after the grace: events %q, want one ResourcesNotReady Warning", *log)
	}
	r.record(b, before, []*fleetv1alpha1.BundleDeployment{bd})
	if len(*log) != 1 {
		t.Errorf("the same spell announced again: %q", *log)
	}
	// Ready again, then not ready: a new spell, announced after its grace.
	bd.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(10 * time.Minute))
	now = t0.Add(13 * time.Minute)
	r.record(b, before, []*fleetv1alpha1.BundleDeployment{bd})
	if len(*log) != 2 {
		t.Errorf("a new not-ready spell: events %q, want a second one", *log)
	}
}
