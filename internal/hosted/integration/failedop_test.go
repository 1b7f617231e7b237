package integration

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// TestFailedOperationIsRetriedNotUndone: an update drover started fails at the provider. The
// user's change must not be "adopted back" from the unchanged upstream; drover says what failed
// and pushes the field again.
func TestFailedOperationIsRetriedNotUndone(t *testing.T) {
	t.Run("aks", testAKSFailedOperation)
	t.Run("gke", testGKEFailedOperation)
}

func testAKSFailedOperation(t *testing.T) {
	t.Parallel()
	e := newAKSEnv(t)
	e.create(aksCreated("flaky"))
	if err := e.sim.FailNextOperation(aksSub, aksRG, "flaky", "QuotaExceeded", "Operation could not be completed as it results in exceeding approved quota"); err != nil {
		t.Fatal(err)
	}
	e.edit("flaky", func(c *v1.AKSClusterConfig) { c.KubernetesVersion = ptr.To("1.33") })
	if _, err := e.reconcile("flaky"); err != nil { // starts the cluster PUT that will fail
		t.Fatal(err)
	}
	e.env.simTime.Advance(simDelay)
	if _, err := e.reconcile("flaky"); err != nil { // sees the failure, pushes again
		t.Fatal(err)
	}
	c := e.get("flaky")
	if got := *c.Spec.AKSConfig.KubernetesVersion; got != "1.33" {
		t.Fatalf("the failed change was undone in the config: kubernetesVersion %q", got)
	}
	if ev := e.events.find("OperationFailed"); len(ev) == 0 || !strings.Contains(ev[0], "kubernetesVersion") {
		t.Fatalf("no OperationFailed event naming the field: %v", ev)
	}
	c = e.settle("flaky")
	if got := *c.Status.AKSStatus.UpstreamSpec.KubernetesVersion; got != "1.33" {
		t.Fatalf("after retry the cluster runs %q", got)
	}
}

func testGKEFailedOperation(t *testing.T) {
	t.Parallel()
	e := newGKEEnv(t)
	e.create(gkeCreated("flaky"))
	if !e.sim.FailNextOperation(gkeProject, gkeRegion, "flaky", "Insufficient regional quota to satisfy request") {
		t.Fatal("cluster not found in the simulator")
	}
	e.edit("flaky", func(c *v1.GKEClusterConfig) { c.MonitoringService = ptr.To("none") })
	if _, err := e.reconcile("flaky"); err != nil { // starts the operation that will fail
		t.Fatal(err)
	}
	e.simTime.Advance(simDelay)
	if _, err := e.reconcile("flaky"); err != nil { // sees the failure, pushes again
		t.Fatal(err)
	}
	c := e.get("flaky")
	if got := *c.Spec.GKEConfig.MonitoringService; got != "none" {
		t.Fatalf("the failed change was undone in the config: monitoringService %q", got)
	}
	if cond := cond(c, hosted.CondSynced); cond.Reason != "OperationFailed" && !strings.Contains(e.events.String(), "Insufficient regional quota") {
		t.Fatalf("failure not reported: Synced %+v, events %s", cond, e.events.String())
	}
	if ev := e.events.find("OperationFailed"); len(ev) == 0 || !strings.Contains(ev[0], "monitoringService") || !strings.Contains(ev[0], "Insufficient regional quota") {
		t.Fatalf("no OperationFailed event naming the field and the provider's message: %v", ev)
	}
	c = e.settle("flaky")
	if got := e.simCluster(t, "flaky").Cluster.MonitoringService; got != "none" || *c.Spec.GKEConfig.MonitoringService != "none" {
		t.Fatalf("after retry: GKE has %q, config %q", got, *c.Spec.GKEConfig.MonitoringService)
	}
}
