package integration

import (
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// Updates started by others: the console (a direct SDK call) starts an update while drover has
// a change of its own to push. drover must see the update although it did not start it, push
// nothing while it runs, not report the cluster in sync, and adopt its result afterwards.

// wantWaitingForExternal checks the status of a pass that found someone else's update running.
func wantWaitingForExternal(t *testing.T, c *v1.Cluster) {
	t.Helper()
	if c.Status.Phase != v1.PhaseUpdating {
		t.Errorf("phase %q, want %q while the console's update runs", c.Status.Phase, v1.PhaseUpdating)
	}
	if got := cond(c, hosted.CondSynced); got.Status != metav1.ConditionFalse || got.Reason != v1.ReasonExternalUpdate {
		t.Errorf("Synced = %s/%s %q, want False/%s", got.Status, got.Reason, got.Message, v1.ReasonExternalUpdate)
	}
	if got := cond(c, hosted.CondUpdating); got.Status != metav1.ConditionTrue {
		t.Errorf("Updating = %s/%s, want True", got.Status, got.Reason)
	}
}

// TestEKSClusterUpdateStartedElsewhere: EKS reports ACTIVE for a while after accepting an update;
// only ListUpdates/DescribeUpdate show the console's update then.
func TestEKSClusterUpdateStartedElsewhere(t *testing.T) {
	t.Parallel()
	e := newEKSEnvWith(t, &eksHarness{statusLag: 3 * simDelay})
	e.create(created("shared"))

	e.console.setLogging(t, "shared", types.LogTypeAudit)
	e.edit("shared", func(c *v1.EKSClusterConfig) { c.KubernetesVersion = ptr.To("1.33") })
	if st := e.simCluster("shared"); st.Status != "ACTIVE" {
		t.Fatalf("precondition: EKS should still report ACTIVE, got %s", st.Status)
	}
	before := e.sim.Counters().Snapshot()
	if _, err := e.reconcile("shared"); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.Counters().Snapshot()["UpdateClusterVersion"] - before["UpdateClusterVersion"]; n != 0 {
		t.Fatalf("drover sent UpdateClusterVersion %d time(s) while the console's update ran", n)
	}
	wantWaitingForExternal(t, e.get("shared"))

	// The console's update ends: drover adopts its result, then pushes its own change.
	c := e.settle("shared")
	if !slices.Contains(c.Spec.EKSConfig.LoggingTypes, "audit") {
		t.Errorf("the console's logging change was not adopted: %v", c.Spec.EKSConfig.LoggingTypes)
	}
	if st := e.simCluster("shared"); st.Version != "1.33" || !slices.Contains(st.LoggingTypes, "audit") {
		t.Errorf("EKS: version %s logging %v, want 1.33 with audit", st.Version, st.LoggingTypes)
	}
	if !condIs(c, hosted.CondSynced, metav1.ConditionTrue) {
		t.Errorf("Synced = %+v after both updates", cond(c, hosted.CondSynced))
	}
}

// TestEKSNodeGroupUpdateStartedElsewhere: the same for a node group scaled in the console.
func TestEKSNodeGroupUpdateStartedElsewhere(t *testing.T) {
	t.Parallel()
	e := newEKSEnvWith(t, &eksHarness{statusLag: 3 * simDelay})
	e.create(created("pools"))

	e.console.scale(t, "pools", "ng-1", 3)
	e.edit("pools", func(c *v1.EKSClusterConfig) { c.NodeGroups[0].Labels = map[string]string{"pool": "two"} })
	if ng := e.simCluster("pools").Nodegroups[0]; ng.Status != "ACTIVE" || ng.DesiredSize != 2 {
		t.Fatalf("precondition: the node group should still report ACTIVE with 2 nodes, got %s %d", ng.Status, ng.DesiredSize)
	}
	before := e.sim.Counters().Snapshot()
	if _, err := e.reconcile("pools"); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.Counters().Snapshot()["UpdateNodegroupConfig"] - before["UpdateNodegroupConfig"]; n != 0 {
		t.Fatalf("drover sent UpdateNodegroupConfig %d time(s) while the console's update ran", n)
	}
	wantWaitingForExternal(t, e.get("pools"))

	c := e.settle("pools")
	ng := c.Spec.EKSConfig.NodeGroups[0]
	if ptr.Deref(ng.DesiredSize, 0) != 3 || ng.Labels["pool"] != "two" {
		t.Errorf("config: desiredSize %d labels %v, want the console's 3 and drover's label", ptr.Deref(ng.DesiredSize, 0), ng.Labels)
	}
	if sim := e.simCluster("pools").Nodegroups[0]; sim.DesiredSize != 3 || sim.Labels["pool"] != "two" {
		t.Errorf("EKS: desiredSize %d labels %v, want 3 and pool=two", sim.DesiredSize, sim.Labels)
	}
}

// onFirst runs f once, when the AKS simulator receives the first request of operation op, before
// handling it: "the console" changing the cluster between drover's GET and its PUT.
func (h *aksHarness) onFirst(t *testing.T, op string, f func()) {
	var done atomic.Bool // not sync.Once: f's own calls come through the hook too
	h.sim.SetRequestHook(func(got string, _ *http.Request) {
		if got == op && done.CompareAndSwap(false, true) {
			f()
		}
	})
	t.Cleanup(func() { h.sim.SetRequestHook(nil) })
}

// TestAKSClusterPutIsConditional: the console adds a tag (and its operation completes) between
// drover's GET and its cluster PUT. A PUT of the cluster as read would drop that tag; with
// If-Match it fails 412, and the next pass re-reads, adopts the tag and pushes again.
func TestAKSClusterPutIsConditional(t *testing.T) {
	t.Parallel()
	e := newAKSEnv(t)
	e.create(aksCreated("rmw"))
	e.edit("rmw", func(c *v1.AKSClusterConfig) { c.KubernetesVersion = ptr.To("1.33") })
	e.onFirst(t, "ManagedClusters.CreateOrUpdate", func() {
		e.consoleTag(t, "rmw", "console", "yes")
		e.waitIdle(t, "rmw")
	})
	res, err := e.reconcile("rmw")
	if err != nil {
		t.Fatalf("a stale PUT is no failure: %v", err)
	}
	if got := e.tags(t, "rmw"); got["console"] != "yes" {
		t.Fatalf("drover's PUT overwrote the tag the console added meanwhile: tags %v", got)
	}
	wantChangedSinceRead(t, e.get("rmw"), res)

	c := e.settle("rmw")
	if c.Spec.AKSConfig.Tags["console"] != "yes" {
		t.Errorf("the console's tag was not adopted: %v", c.Spec.AKSConfig.Tags)
	}
	st := e.waitIdle(t, "rmw")
	if v := ptr.Deref(st.Properties.KubernetesVersion, ""); v != "1.33" || e.tags(t, "rmw")["console"] != "yes" {
		t.Errorf("AKS: version %s tags %v, want 1.33 with the console's tag", v, e.tags(t, "rmw"))
	}
}

// wantChangedSinceRead checks how a pass whose write failed with 412 (If-Match: the eTag read
// is stale) reports it: not a failure and not "busy", but Synced=False ChangedSinceRead saying
// what happened and that drover retries; the pass requeues.
func wantChangedSinceRead(t *testing.T, c *v1.Cluster, res reconcile.Result) {
	t.Helper()
	if c.Status.FailureMessage != "" {
		t.Errorf("412 reported as a failure: failureMessage %q", c.Status.FailureMessage)
	}
	const msg = "The cluster was changed at the provider by someone else since drover read it, so the provider refused drover's write (precondition failed: the eTag no longer matches). drover re-reads it, keeps that change and pushes again on the next pass."
	if got := cond(c, hosted.CondSynced); got.Status != metav1.ConditionFalse || got.Reason != v1.ReasonChangedSinceRead || got.Message != msg {
		t.Errorf("Synced = %s/%s %q, want False/%s %q", got.Status, got.Reason, got.Message, v1.ReasonChangedSinceRead, msg)
	}
	if got := cond(c, hosted.CondUpdating); got.Reason == v1.ReasonProviderBusy {
		t.Errorf("412 reported as a busy provider: Updating %s/%s %q", got.Status, got.Reason, got.Message)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("result %+v: want a requeue to re-read and push again", res)
	}
}

// TestAKSPoolPutIsConditional: the console scales the pool between drover's GET and its pool PUT
// (which carries the count as read).
func TestAKSPoolPutIsConditional(t *testing.T) {
	t.Parallel()
	e := newAKSEnv(t)
	e.create(aksCreated("rmwpool"))
	e.edit("rmwpool", func(c *v1.AKSClusterConfig) { c.NodePools[0].NodeLabels = map[string]string{"pool": "two"} })
	e.onFirst(t, "AgentPools.CreateOrUpdate", func() {
		if !e.consoleScale(t, "rmwpool", 3) {
			t.Error("console: could not scale the pool")
		}
		e.waitIdle(t, "rmwpool")
	})
	res, err := e.reconcile("rmwpool")
	if err != nil {
		t.Fatalf("a stale PUT is no failure: %v", err)
	}
	if n := e.size(t, "rmwpool"); n != 3 {
		t.Fatalf("drover's pool PUT undid the console's scaling: count %d, want 3", n)
	}
	wantChangedSinceRead(t, e.get("rmwpool"), res)

	c := e.settle("rmwpool")
	p := aksConfigPool(c, aksPool)
	if ptr.Deref(p.Count, 0) != 3 || p.NodeLabels["pool"] != "two" {
		t.Errorf("config: count %d labels %v, want the console's 3 and drover's label", ptr.Deref(p.Count, 0), p.NodeLabels)
	}
	e.waitIdle(t, "rmwpool")
	if sp := e.simPool(t, "rmwpool", aksPool); ptr.Deref(sp.Count, 0) != 3 || ptr.Deref(sp.NodeLabels["pool"], "") != "two" {
		t.Errorf("AKS: count %d labels %v, want 3 and pool=two", ptr.Deref(sp.Count, 0), sp.NodeLabels)
	}
}

// TestGKEOperationStartedElsewhere: the console resizes the pool; GKE keeps showing the cluster
// RUNNING for a while, and only operations.list shows the operation.
func TestGKEOperationStartedElsewhere(t *testing.T) {
	t.Parallel()
	e := newGKEEnvWith(t, &gkeHarness{statusLag: 3 * simDelay, opsMaxAge: -1})
	e.create(gkeCreated("shared"))

	if !e.consoleScale(t, "shared", 4) {
		t.Fatal("console: could not resize the pool")
	}
	e.edit("shared", func(c *v1.GKEClusterConfig) { c.Labels = map[string]string{"team": "platform", "env": "prod"} })
	if st := e.simCluster(t, "shared"); st.Cluster.Status != "RUNNING" || st.Operation == "" {
		t.Fatalf("precondition: GKE should show RUNNING with an operation, got %s %q", st.Cluster.Status, st.Operation)
	}
	e.sim.Counters().Reset()
	if _, err := e.reconcile("shared"); err != nil {
		t.Fatal(err)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Fatalf("drover sent %v while the console's operation ran", m)
	}
	wantWaitingForExternal(t, e.get("shared"))

	c := e.settle("shared")
	if n := ptr.Deref(c.Spec.GKEConfig.NodePools[0].InitialNodeCount, 0); n != 4 || c.Spec.GKEConfig.Labels["env"] != "prod" {
		t.Errorf("config: size %d labels %v, want the console's 4 and drover's label", n, c.Spec.GKEConfig.Labels)
	}
	if got := e.tags(t, "shared"); got["env"] != "prod" || e.size(t, "shared") != 4 {
		t.Errorf("GKE: labels %v size %d, want env=prod and 4", got, e.size(t, "shared"))
	}
}

// TestGKEOperationsListedOncePerLocation: looking for operations started elsewhere costs one
// operations.list per location and OperationsMaxAge, however many clusters the location has.
func TestGKEOperationsListedOncePerLocation(t *testing.T) {
	t.Parallel()
	e := newGKEEnvWith(t, &gkeHarness{opsMaxAge: time.Hour})
	e.sim.Counters().Reset()
	e.create(gkeCreated("one"))
	e.create(gkeCreated("two"))
	e.refresh("one")
	e.refresh("two")
	if n := e.sim.Counters().Get("operations.list"); n != 1 {
		t.Fatalf("operations.list called %d times for two clusters of one location, want 1", n)
	}
}
