package integration

import (
	"context"
	"fmt"
	"github.com/droverhq/drover/internal/metrics/metricstest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// bundleEvent waits for an Event with reason about the Bundle name in the workspace.
func bundleEvent(t *testing.T, name, reason string) eventsv1.Event {
	t.Helper()
	var ev eventsv1.Event
	eventually(t, 60*time.Second, func() error {
		var list eventsv1.EventList
		if err := mgmt.Client.List(t.Context(), &list, client.InNamespace(ws)); err != nil {
			return err
		}
		i := slices.IndexFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Kind == "Bundle" && e.Regarding.Name == name && e.Reason == reason
		})
		if i < 0 {
			return fmt.Errorf("no %s event about Bundle %s among %d events", reason, name, len(list.Items))
		}
		ev = list.Items[i]
		return nil
	})
	return ev
}

// metric reads a metric as drover server serves it.
var metric = metricstest.Value

// TestRolloutHalted: a new version that fails to apply on the first cluster it reaches halts a
// rollout with maxUnavailable 1: the Bundle is Ready=False with reason RolloutHalted, a Warning
// Event says so (once), the other cluster keeps the previous version, and the metrics count the
// Bundle not ready and a BundleDeployment out of date.
func TestRolloutHalted(t *testing.T) {
	ctx := t.Context()
	halted := map[string]string{"reason": fleetv1alpha1.EventRolloutHalted}
	before := metric(t, "drover_bundle_events_total", halted)
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "halt"},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: "default",
			Resources: raw(t, configMap("", "halt", map[string]string{"v": "1"})),
			Targets:   []fleetv1alpha1.BundleTarget{{ClusterName: fullName}, {ClusterName: plainName}},
			Rollout:   fleetv1alpha1.BundleRollout{MaxUnavailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1}}}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), b) })
	get := func() *fleetv1alpha1.Bundle {
		got := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	eventually(t, 60*time.Second, func() error {
		if s := get().Status.Summary; s.Ready != 2 {
			return fmt.Errorf("summary %+v, want 2 ready", s)
		}
		return nil
	})
	// Version 2 holds a ConfigMap whose name the API server rejects.
	patchBundle(t, b, func(b *fleetv1alpha1.Bundle) {
		b.Spec.Resources = raw(t, configMap("", "halt", map[string]string{"v": "2"}), configMap("", "Not_A_Valid_Name", nil))
	})
	var got *fleetv1alpha1.Bundle
	eventually(t, 60*time.Second, func() error {
		got = get()
		if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady); c == nil || c.Reason != fleetv1alpha1.EventRolloutHalted {
			return fmt.Errorf("Ready %+v, want reason RolloutHalted (summary %+v)", c, got.Status.Summary)
		}
		return nil
	})
	if s := got.Status.Summary; s.ErrApplied != 1 || s.OutOfDate != 1 {
		t.Errorf("summary %+v, want one cluster failed and one held", s)
	}
	ev := bundleEvent(t, b.Name, fleetv1alpha1.EventRolloutHalted)
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "maxUnavailable") {
		t.Errorf("event %s %q", ev.Type, ev.Note)
	}
	if got := metric(t, "drover_bundle_events_total", halted); got < before+1 {
		t.Errorf("drover_bundle_events_total{reason=RolloutHalted} = %v, want at least %v", got, before+1)
	}
	if got := metric(t, "drover_bundles", map[string]string{"state": "not_ready", "reason": fleetv1alpha1.EventRolloutHalted}); got < 1 {
		t.Errorf("drover_bundles{state=not_ready,reason=RolloutHalted} = %v, want at least 1", got)
	}
	if got := metric(t, "drover_bundle_deployments", map[string]string{"state": "out_of_date"}); got < 1 {
		t.Errorf("drover_bundle_deployments{state=out_of_date} = %v, want at least 1", got)
	}
}
