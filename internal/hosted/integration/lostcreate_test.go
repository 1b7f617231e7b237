package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// TestCreateOutcomeLost: the provider accepted a create but drover never learned it — the
// response was lost, or drover stopped right after sending it. The next pass must take the
// cluster as its own (it was recorded as being created before the call), not refuse it as
// someone else's (AlreadyExists) and leave it unmanaged; a create the provider refused as
// invalid leaves no phase behind.
func TestCreateOutcomeLost(t *testing.T) {
	t.Parallel()
	forEachProvider(t, func(t *testing.T, h harness) {
		for _, tc := range []struct {
			name  string
			after func() (*hosted.Started, error)
		}{
			{"response lost", func() (*hosted.Started, error) {
				return nil, errors.New("read tcp 127.0.0.1:443: connection reset by peer")
			}},
			{"drover stopped", func() (*hosted.Started, error) { panic(errStopped) }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				e.r.Providers = []hosted.Provider{&lostCreate{Provider: h.provider(), after: tc.after}}
				c := h.created("shop")
				c.Namespace = e.ns
				if err := mgmt.Client.Create(context.Background(), c); err != nil {
					t.Fatal(err)
				}
				func() {
					defer func() {
						if r := recover(); r != nil {
							if err, ok := r.(error); !ok || !errors.Is(err, errStopped) {
								panic(r)
							}
						}
					}()
					_, _ = e.reconcile("shop")
				}()
				if c := e.get("shop"); c.Status.Phase != v1.PhaseCreating {
					t.Errorf("after the lost create: phase %q; want creating, recorded before the call", c.Status.Phase)
				}
				e.r.Providers = []hosted.Provider{h.provider()}
				got := e.settle("shop")
				if got.Status.Phase != v1.PhaseActive {
					t.Fatalf("phase %q, Ready %+v; want the created cluster active", got.Status.Phase, cond(got, hosted.CondReady))
				}
				if strings.Contains(e.events.String(), v1.ReasonAlreadyExists) {
					t.Errorf("its own cluster was refused: %s", e.events)
				}
				if tags := h.tags(t, "shop"); tags["team"] != "platform" {
					t.Errorf("provider tags %v", tags)
				}
			})
		}
		t.Run("refused as invalid", func(t *testing.T) {
			e := newEnv(t, h)
			e.r.Providers = []hosted.Provider{&lostCreate{Provider: h.provider(), refuse: true}}
			c := h.created("shop")
			c.Namespace = e.ns
			if err := mgmt.Client.Create(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			_, _ = e.reconcile("shop")
			got := e.get("shop")
			if got.Status.Phase != "" || !condIs(got, hosted.CondConfigValid, "False") {
				t.Fatalf("phase %q, ConfigValid %+v; want no phase and the refusal", got.Status.Phase, cond(got, hosted.CondConfigValid))
			}
		})
	})
}

var errStopped = errors.New("drover stopped")

// lostCreate is a provider whose sessions send the create, then lose its outcome (after), or
// refuse it as invalid without sending it.
type lostCreate struct {
	hosted.Provider
	after  func() (*hosted.Started, error)
	refuse bool
}

func (p *lostCreate) Connect(ctx context.Context, c *v1.Cluster, secret *corev1.Secret, tr hosted.Transport) (hosted.Session, error) {
	s, err := p.Provider.Connect(ctx, c, secret, tr)
	if err != nil {
		return nil, err
	}
	return &lostCreateSession{Session: s, p: p}, nil
}

type lostCreateSession struct {
	hosted.Session
	p *lostCreate
}

func (s *lostCreateSession) Create(ctx context.Context, c *v1.Cluster, config map[string]any) (*hosted.Started, error) {
	if s.p.refuse {
		return nil, &hosted.FieldError{Field: "config", Reason: "RejectedByProvider", Message: "the provider refused the config"}
	}
	if _, err := s.Session.Create(ctx, c, config); err != nil {
		return nil, err
	}
	return s.p.after()
}
