package integration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// TestRetryFailingTheSameWayWritesNothing: a provider error is reported by its code and the
// provider's message, not the SDK's error with its per-call request ID, so a retry that fails
// the same way leaves the stored status as it is.
func TestRetryFailingTheSameWayWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEKSEnv(t)
	e.r.Providers = []hosted.Provider{eks.Provider{RetryMaxAttempts: 1}} // fail fast, no SDK retries
	e.create(created("flaky"))
	e.faults().Set(simcore.FaultConfig{ServerError: 1, Operations: []string{"DescribeCluster"}})
	e.clock.Step(2 * refresh)

	if _, err := e.reconcile("flaky"); err == nil {
		t.Fatal("a failing DescribeCluster did not fail the pass")
	}
	first := e.get("flaky")
	got := cond(first, hosted.CondSynced)
	if got.Status != metav1.ConditionFalse || got.Reason != "ProviderError" || !strings.Contains(got.Message, "ServerException") || !strings.Contains(got.Message, "Observe") {
		t.Fatalf("Synced = %+v, want False/ProviderError naming the operation and the error code", got)
	}
	if strings.Contains(strings.ToLower(got.Message), "requestid") {
		t.Fatalf("the condition carries a request ID: %q", got.Message)
	}
	for range 2 {
		if _, err := e.reconcile("flaky"); err == nil {
			t.Fatal("the retry did not fail")
		}
		if again := e.get("flaky"); again.ResourceVersion != first.ResourceVersion {
			t.Fatalf("a retry that failed the same way rewrote the Cluster:\n%q\n%q", got.Message, cond(again, hosted.CondSynced).Message)
		}
	}

	e.faults().Set(simcore.FaultConfig{})
	if c := e.settle("flaky"); !condIs(c, hosted.CondSynced, metav1.ConditionTrue) || c.Status.FailureMessage != "" {
		t.Fatalf("after recovery: Synced %+v, failureMessage %q", cond(c, hosted.CondSynced), c.Status.FailureMessage)
	}
}
