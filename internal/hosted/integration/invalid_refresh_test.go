package integration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// TestInvalidConfigKeepsRefreshing: a config drover refuses (an immutable field edited on a live
// cluster, or a value Validate rejects) must not freeze the cluster: drover keeps re-reading it
// on schedule, adopts console changes and refreshes the status, and sends nothing meanwhile.
func TestInvalidConfigKeepsRefreshing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		edit   func(*v1.EKSClusterConfig)
		reason string
	}{
		{"immutable field on a live cluster", func(c *v1.EKSClusterConfig) { c.NodeGroups[0].InstanceType = ptr.To("m6i.xlarge") }, "ImmutableField"},
		{"config refused by validation", func(c *v1.EKSClusterConfig) { c.NodeGroups[0].DesiredSize = ptr.To[int32](9) }, "InvalidScaling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEKSEnv(t)
			orig := e.create(created("frozen")).Spec.EKSConfig.NodeGroups
			e.edit("frozen", tc.edit)

			res, err := e.reconcile("frozen")
			if err != nil {
				t.Fatal(err)
			}
			c := e.get("frozen")
			if got := cond(c, hosted.CondConfigValid); got.Status != metav1.ConditionFalse || got.Reason != tc.reason {
				t.Fatalf("ConfigValid = %+v, want False/%s", got, tc.reason)
			}
			if res.RequeueAfter <= 0 || res.RequeueAfter > refresh*11/10 {
				t.Fatalf("RequeueAfter = %v while the config is invalid, want the refresh interval (%v): without it the cluster is never refreshed again", res.RequeueAfter, refresh)
			}
			before := c.Status.LastRefreshTime.Time
			e.console.tag(t, e.simCluster("frozen").ARN, map[string]string{"console": "added"})
			mutating := e.sim.Counters().Snapshot()
			e.clock.Step(res.RequeueAfter)
			if res, err = e.reconcile("frozen"); err != nil {
				t.Fatal(err)
			}
			c = e.get("frozen")
			if c.Spec.EKSConfig.Tags["console"] != "added" {
				t.Errorf("console tag not adopted while the config is invalid: %v", c.Spec.EKSConfig.Tags)
			}
			if c.Status.EKSStatus.UpstreamSpec.Tags["console"] != "added" {
				t.Errorf("status.eksStatus.upstreamSpec not refreshed: %v", c.Status.EKSStatus.UpstreamSpec.Tags)
			}
			if !c.Status.LastRefreshTime.After(before) {
				t.Errorf("lastRefreshTime not advanced: %v", c.Status.LastRefreshTime)
			}
			if res.RequeueAfter <= 0 {
				t.Errorf("no further refresh scheduled: %+v", res)
			}
			if got := cond(c, hosted.CondConfigValid); got.Status != metav1.ConditionFalse || got.Reason != tc.reason {
				t.Errorf("ConfigValid = %+v after the refresh, want it still False/%s", got, tc.reason)
			}
			if !condIs(c, hosted.CondSynced, metav1.ConditionFalse) {
				t.Errorf("Synced = %+v, want False while nothing can be pushed", cond(c, hosted.CondSynced))
			}
			after := e.sim.Counters().Snapshot()
			for op, n := range after {
				if !strings.HasPrefix(op, "Describe") && !strings.HasPrefix(op, "List") && n != mutating[op] {
					t.Errorf("%s called while the config is invalid", op)
				}
			}
			if ev := e.events.find("InvalidConfig"); len(ev) != 1 {
				t.Errorf("want one InvalidConfig event for one finding, got %d: %v", len(ev), ev)
			}

			// Fixed, it syncs again.
			e.edit("frozen", func(c *v1.EKSClusterConfig) { c.NodeGroups = orig })
			if c = e.settle("frozen"); !condIs(c, hosted.CondConfigValid, metav1.ConditionTrue) || !condIs(c, hosted.CondSynced, metav1.ConditionTrue) {
				t.Fatalf("after the fix: ConfigValid %+v Synced %+v", cond(c, hosted.CondConfigValid), cond(c, hosted.CondSynced))
			}
		})
	}
}
