package integration

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// touchBeforePatch is the management client of a pass during which someone else writes the
// Cluster: before the pass's first spec write, touch changes the Cluster's metadata (as the join
// controller adding its finalizer, or a user's annotation, do), so that write meets a conflict.
type touchBeforePatch struct {
	client.Client
	once  sync.Once
	touch func()
}

func (c *touchBeforePatch) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.once.Do(c.touch)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// TestAdoptionAfterConflict: a pass that finds a console change to adopt, but whose spec write
// meets a newer Cluster (only its metadata changed, so no new generation), runs again at once
// and adopts the change; it does not record a refresh it did not complete (Synced=True, the
// next read a whole refresh interval away) and leave the change unadopted until then.
func TestAdoptionAfterConflict(t *testing.T) {
	t.Parallel()
	forEachProvider(t, func(t *testing.T, h harness) {
		e := newEnv(t, h)
		e.create(h.created("touched"))
		if !h.consoleScale(t, "touched", 4) {
			t.Fatal("could not scale in the console")
		}
		e.simTime.Advance(simDelay) // the console's update completes
		e.clock.Step(refresh + refresh/5)

		touching := &touchBeforePatch{Client: mgmt.Client, touch: func() {
			e.editCluster("touched", func(c *v1.Cluster) {
				if c.Annotations == nil {
					c.Annotations = map[string]string{}
				}
				c.Annotations["example.com/touched"] = "yes"
			})
		}}
		e.r.Client = touching
		_, err := e.reconcile("touched")
		e.r.Client = mgmt.Client
		if err != nil {
			t.Fatalf("the pass that met the conflict: %v", err)
		}
		if got := h.cfgSize(e.get("touched")); got == 4 {
			t.Fatal("the pass adopted despite the conflict: the test did not make one")
		}
		// The pass runs again (after conflictRetry), with no time passing for drover.
		got := e.settle("touched")
		if h.cfgSize(got) != 4 {
			t.Errorf("the console's resize was not adopted by the pass after the conflict: config size %d, want 4", h.cfgSize(got))
		}
		if h.size(t, "touched") != 4 {
			t.Errorf("the console's resize was lost: size %d, want 4", h.size(t, "touched"))
		}
		if condIs(got, hosted.CondSynced, "False") {
			t.Errorf("Synced=False after the adoption: %+v", got.Status.Conditions)
		}
	})
}

// TestConflictConditionEveryProvider: a tag (label) changed in the console and in drover since
// the last sync sets Conflict=True naming the field and both values, drover's value is applied,
// and the condition stays True through later passes until the config changes again, for every
// provider: GKE's labels and AKS's tags are long-running updates, EKS's are synchronous.
func TestConflictConditionEveryProvider(t *testing.T) {
	t.Parallel()
	forEachProvider(t, func(t *testing.T, h harness) {
		e := newEnv(t, h)
		e.create(h.created("both"))
		h.consoleTag(t, "both", "team", "console")
		e.simTime.Advance(simDelay)
		e.editCluster("both", func(c *v1.Cluster) { h.setCfgTag(c, "team", "drover") })
		if _, err := e.reconcile("both"); err != nil {
			t.Fatal(err)
		}
		// While a long-running update applies what drover sent, Synced says so (not "0 fields to push").
		if s := cond(e.get("both"), hosted.CondSynced); s.Reason == "Pushing" && !strings.Contains(s.Message, "the provider is applying it") {
			t.Errorf("Synced while the provider applies drover's change: %+v", s)
		}
		got := e.settle("both")
		if tags := h.tags(t, "both"); tags["team"] != "drover" {
			t.Fatalf("provider's team = %q, want drover's value", tags["team"])
		}
		c := cond(got, hosted.CondConflict)
		if c.Status != "True" || !strings.Contains(c.Message, "[team]") || !strings.Contains(c.Message, `"console"`) || !strings.Contains(c.Message, `"drover"`) {
			t.Fatalf("Conflict condition %+v, want True naming the field and both values (events: %s)", c, e.events)
		}
		// drover cluster get marks the field's row with both values.
		out, err := runCLI(t, "cluster", "get", "both", "--kubeconfig", kubeconfigFile(t), "-n", e.ns)
		if err != nil || !regexp.MustCompile(`(?m)^\w+Config\.\w+\[team\] .*conflict: provider had "console", drover's "drover" applied$`).MatchString(out) {
			t.Errorf("cluster get does not mark the conflicting field: %v\n%s", err, out)
		}
		e.clock.Step(refresh + refresh/5)
		if got = e.settle("both"); !condIs(got, hosted.CondConflict, "True") {
			t.Errorf("Conflict cleared by a refresh: %+v", cond(got, hosted.CondConflict))
		}
	})
}
