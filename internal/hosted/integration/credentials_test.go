package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/internal/hosted"
)

// wrongSecretValue is what a rotation gone wrong put in the credential Secret. Long enough for
// the secret scan to look for it everywhere drover writes.
const wrongSecretValue = "WRONG-rotated-credential-value-0001"

// setCredentials replaces the data of the credential Secret "cred", as kubectl patch would.
func (e *env) setCredentials(data map[string]string) {
	e.t.Helper()
	s := &corev1.Secret{}
	if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "cred"}, s); err != nil {
		e.t.Fatal(err)
	}
	s.Data, s.StringData = nil, data
	if err := mgmt.Client.Update(context.Background(), s); err != nil {
		e.t.Fatal(err)
	}
}

// TestRejectedCredentialsAreReported: when a live cluster's credential Secret is rotated to a
// value the provider rejects, drover says so where an operator looks — CredentialsValid=False
// naming the Secret and the key to fix in one stable line (the provider's code and first line,
// no SDK dump with per-call trace IDs), Synced=Unknown (it cannot compare with the provider),
// one Warning Event per finding, the drover_hosted_credentials gauge — and a retry that fails
// the same way writes nothing. Fixing the Secret restores CredentialsValid and Synced.
func TestRejectedCredentialsAreReported(t *testing.T) {
	t.Parallel()
	forEachProvider(t, func(t *testing.T, h harness) {
		e := newEnv(t, h)
		c := h.created("rotated")
		c.Namespace = e.ns
		if err := mgmt.Client.Create(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		if got := e.settle("rotated"); !condIs(got, hosted.CondSynced, metav1.ConditionTrue) {
			t.Fatalf("not in sync before the rotation: %+v", got.Status.Conditions)
		}
		lastRead := e.get("rotated").Status.LastRefreshTime.UTC().Format("2006-01-02T15:04:05Z")

		wrong, key := h.credentialData(t, true)
		e.setCredentials(wrong)
		e.clock.Step(refresh + refresh/5)
		if _, err := e.reconcile("rotated"); err == nil {
			t.Fatal("a pass with rejected credentials did not fail (no backoff)")
		}
		first := e.get("rotated")
		secret := e.ns + "/cred"
		t.Logf("CredentialsValid: %s\nSynced: %s\nEvents: %q", cond(first, hosted.CondCredentials).Message, cond(first, hosted.CondSynced).Message, e.events.find(hosted.EventCredentialsRejected))
		t.Run("CredentialsValid", func(t *testing.T) {
			cv := cond(first, hosted.CondCredentials)
			if cv.Status != metav1.ConditionFalse || cv.Reason != "Rejected" {
				t.Fatalf("CredentialsValid = %+v, want False/Rejected", cv)
			}
			for _, want := range []string{"Secret " + secret, "key " + key} {
				if !strings.Contains(cv.Message, want) {
					t.Errorf("CredentialsValid message does not name %q: %q", want, cv.Message)
				}
			}
			checkStableLine(t, cv.Message)
		})
		t.Run("Synced", func(t *testing.T) {
			sc := cond(first, hosted.CondSynced)
			if sc.Status != metav1.ConditionUnknown || sc.Reason != "CredentialsRejected" {
				t.Fatalf("Synced = %+v, want Unknown/CredentialsRejected while the provider cannot be read", sc)
			}
			if !strings.Contains(sc.Message, "since") || !strings.Contains(sc.Message, lastRead) || !strings.Contains(sc.Message, secret) {
				t.Errorf("Synced message does not say since when (%s) and why: %q", lastRead, sc.Message)
			}
			checkStableLine(t, sc.Message)
		})
		t.Run("Event", func(t *testing.T) {
			ev := e.events.find(hosted.EventCredentialsRejected)
			if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ") || !strings.Contains(ev[0], secret) || !strings.Contains(ev[0], "key "+key) {
				t.Fatalf("want one Warning CredentialsRejected Event naming Secret %s and key %s, got %q", secret, key, ev)
			}
		})
		t.Run("metric", func(t *testing.T) {
			if got := metric(t, "drover_hosted_credentials", map[string]string{"provider": h.name(), "state": hosted.CredentialsRejected, "reason": "Rejected"}); got < 1 {
				t.Errorf("drover_hosted_credentials{provider=%s,state=rejected,reason=Rejected} = %v, want at least 1", h.name(), got)
			}
		})

		// Retries that fail the same way (new trace IDs and timestamps at the provider) write
		// nothing and record no further Event.
		for range 2 {
			e.simTime.Advance(simDelay)
			e.clock.Step(refresh)
			if _, err := e.reconcile("rotated"); err == nil {
				t.Fatal("the retry did not fail")
			}
			if again := e.get("rotated"); again.ResourceVersion != first.ResourceVersion {
				t.Fatalf("a retry that failed the same way rewrote the Cluster:\n%q\n%q", cond(first, hosted.CondCredentials).Message, cond(again, hosted.CondCredentials).Message)
			}
		}
		if ev := e.events.find(hosted.EventCredentialsRejected); len(ev) != 1 {
			t.Errorf("retries recorded more Events: %q", ev)
		}

		good, _ := h.credentialData(t, false)
		e.setCredentials(good)
		e.clock.Step(refresh)
		fixed := e.settle("rotated")
		if !condIs(fixed, hosted.CondCredentials, metav1.ConditionTrue) || !condIs(fixed, hosted.CondSynced, metav1.ConditionTrue) {
			t.Fatalf("after the fix: CredentialsValid %+v, Synced %+v", cond(fixed, hosted.CondCredentials), cond(fixed, hosted.CondSynced))
		}
	})
}

// checkStableLine fails on a condition message that carries the SDK's dump of the call or
// anything that changes from one call to the next.
func checkStableLine(t *testing.T, msg string) {
	t.Helper()
	for _, bad := range []string{"\n", `\n`, "RESPONSE ", "POST ", "Trace ID", "Correlation ID", "Timestamp", "RequestID", "request id", "..", wrongSecretValue} {
		if strings.Contains(msg, bad) {
			t.Errorf("message carries %q: %q", bad, msg)
		}
	}
}
