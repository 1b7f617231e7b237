package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// TestRetryAfterHonoured: AKS answers every call 429 with a Retry-After of two minutes, longer
// than the Azure SDK waits. drover calls again no sooner than that (a requeue, not an error the
// controller's own backoff would retry within milliseconds) and says so in a stable message;
// the cluster to create is not ready from its first pass.
func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	h := &aksHarness{throttleRetryAfter: 2 * time.Minute}
	e := &aksEnv{env: newEnv(t, h), aksHarness: h}
	h.sim.Faults().Set(simcore.FaultConfig{Throttle: 1})
	c := aksCreated("busy")
	c.Namespace = e.ns
	if err := mgmt.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for i := range 2 {
		res, err := e.reconcile("busy")
		if err != nil {
			t.Fatalf("pass %d returned %v: the controller's backoff would retry long before the provider's Retry-After", i, err)
		}
		if res.RequeueAfter < 2*time.Minute {
			t.Fatalf("pass %d requeued after %s; want no sooner than the provider's Retry-After of 2m", i, res.RequeueAfter)
		}
		got := e.get("busy")
		sc := cond(got, hosted.CondSynced)
		if sc.Status != metav1.ConditionFalse || sc.Reason != v1.ReasonThrottled || !strings.Contains(sc.Message, "Retry-After of 2m") {
			t.Fatalf("Synced %+v; want False/Throttled naming the Retry-After of 2m", sc)
		}
		msgs = append(msgs, sc.Message)
		if rc := cond(got, hosted.CondReady); got.Status.Phase != "" || rc.Status != metav1.ConditionFalse || rc.Reason != v1.ReasonCreating {
			t.Fatalf("phase %q, Ready %+v; want no phase yet and Ready=False/Creating", got.Status.Phase, rc)
		}
	}
	if msgs[0] != msgs[1] {
		t.Errorf("the Throttled message changes between passes: %q, %q", msgs[0], msgs[1])
	}
}

// TestNotReadyFromTheStart: a cluster to create whose first read is throttled, and a cluster
// whose delete fails, are not reported Ready=True (nor left without a Ready condition): Ready is
// False with reason Creating, or Deleting, from the start of the operation.
func TestNotReadyFromTheStart(t *testing.T) {
	t.Parallel()
	forEachProvider(t, func(t *testing.T, h harness) {
		t.Run("create throttled", func(t *testing.T) {
			e := newEnv(t, h)
			e.r.Providers = []hosted.Provider{&failingObserve{Provider: h.provider(), err: fmt.Errorf("%w: Rate exceeded", hosted.ErrThrottled)}}
			c := h.created("shop")
			c.Namespace = e.ns
			if err := mgmt.Client.Create(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			_, _ = e.reconcile("shop")
			got := e.get("shop")
			if rc := cond(got, hosted.CondReady); rc.Status != metav1.ConditionFalse || rc.Reason != v1.ReasonCreating {
				t.Errorf("Ready %+v; want False/Creating", rc)
			}
			if sc := cond(got, hosted.CondSynced); sc.Reason != v1.ReasonThrottled {
				t.Errorf("Synced %+v; want Throttled", sc)
			}
			if got.Status.Phase != "" {
				t.Errorf("phase %q; want none until the provider says the cluster does not exist", got.Status.Phase)
			}
		})
		t.Run("delete failing", func(t *testing.T) {
			e := newEnv(t, h)
			e.create(h.created("shop"))
			if err := mgmt.Client.Delete(context.Background(), e.get("shop")); err != nil {
				t.Fatal(err)
			}
			e.r.Providers = []hosted.Provider{&failingObserve{Provider: h.provider(), err: errors.New("read tcp 127.0.0.1:443: connection reset by peer")}}
			if _, err := e.reconcile("shop"); err == nil {
				t.Fatal("the failing delete's pass returned no error")
			}
			got := e.get("shop")
			if rc := cond(got, hosted.CondReady); got.Status.Phase != v1.PhaseDeleting || rc.Status != metav1.ConditionFalse || rc.Reason != v1.ReasonDeleting {
				t.Errorf("phase %q, Ready %+v; want deleting and Ready=False/Deleting", got.Status.Phase, rc)
			}
		})
	})
}

// failingObserve is a provider whose sessions' Observe fails with err.
type failingObserve struct {
	hosted.Provider
	err error
}

func (p *failingObserve) Connect(ctx context.Context, c *v1.Cluster, secret *corev1.Secret, tr hosted.Transport) (hosted.Session, error) {
	s, err := p.Provider.Connect(ctx, c, secret, tr)
	if err != nil {
		return nil, err
	}
	return &failingObserveSession{Session: s, err: p.err}, nil
}

type failingObserveSession struct {
	hosted.Session
	err error
}

func (s *failingObserveSession) Observe(context.Context, *v1.Cluster) (*hosted.Observation, error) {
	return nil, s.err
}
