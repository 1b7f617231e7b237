package integration

import (
	"testing"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
)

func TestGKEDebug(t *testing.T) {
	h := &gkeHarness{}
	e := newEnv(t, h)
	c := h.created("race")
	c.Spec.SyncPolicy = v1.SyncPolicyEnforce
	e.create(c)
	h.consoleScale(t, "race", 4)
	e.simTime.Advance(simDelay)
	e.editCluster("race", func(c *v1.Cluster) { h.setCfgTag(c, "cost-center", "42") })
	for i := 0; i < 5; i++ {
		res, err := e.reconcile("race")
		got := e.get("race")
		t.Logf("res %v err %v phase %s conds %+v pending %v", res, err, got.Status.Phase, got.Status.Conditions, got.Status.PendingOperations)
		t.Logf("counters %v", h.sim.Counters().Snapshot())
		e.simTime.Advance(simDelay)
	}
	t.Log(e.events.events)
}
