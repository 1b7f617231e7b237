package integration

import (
	"fmt"
	"math/rand"
	"testing"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// TestNoLostUpdate is the seed's race for every provider: a managed field (the size of pool-1)
// is changed in the console; within the refresh interval a user edits a tag in drover. The
// console's change must survive (and be adopted), and the tag must be applied. Under enforce
// the console's change is rolled back, with an event that names the field.
func TestNoLostUpdate(t *testing.T) {
	t.Parallel()
	forEachProvider(t, func(t *testing.T, h harness) {
		for _, policy := range []v1.SyncPolicy{v1.SyncPolicyAdopt, v1.SyncPolicyEnforce} {
			t.Run(string(policy), func(t *testing.T) {
				t.Parallel()
				h := harnesses[h.name()]()
				e := newEnv(t, h)
				c := h.created("race")
				c.Spec.SyncPolicy = policy
				e.create(c)

				if !h.consoleScale(t, "race", 4) { // 11:01, in the console
					t.Fatal("could not scale in the console")
				}
				e.simTime.Advance(simDelay)                                                        // the console's update completes
				e.editCluster("race", func(c *v1.Cluster) { h.setCfgTag(c, "cost-center", "42") }) // 11:03, in drover
				got := e.settle("race")

				if h.tags(t, "race")["cost-center"] != "42" {
					t.Errorf("drover's tag edit was not applied: %v", h.tags(t, "race"))
				}
				switch policy {
				case v1.SyncPolicyAdopt:
					if h.size(t, "race") != 4 {
						t.Errorf("the console's resize was lost: size %d, want 4", h.size(t, "race"))
					}
					if h.cfgSize(got) != 4 {
						t.Errorf("the console's resize was not adopted into the config: %d", h.cfgSize(got))
					}
				case v1.SyncPolicyEnforce:
					if h.size(t, "race") != 2 {
						t.Errorf("enforce: the console's resize was not rolled back: size %d", h.size(t, "race"))
					}
					if len(e.events.find("DriftReverted")) == 0 {
						t.Error("enforce: no DriftReverted event")
					}
				}
			})
		}
	})
}

// TestRandomizedInterleavings plays ≥200 seeded steps of console edits, drover edits, refreshes,
// slow updates and throttling against one cluster per provider, and checks after each settle that
// every console change survived unless drover changed the same field since the last settle, and
// that no managed field differs from upstream once idle.
func TestRandomizedInterleavings(t *testing.T) {
	t.Parallel()
	forEachProvider(t, func(t *testing.T, h harness) {
		e := newEnv(t, h)
		e.create(h.created("chaos"))
		rng := rand.New(rand.NewSource(20261129))
		keys := []string{"a", "b", "c"}
		console, drover := map[string]string{}, map[string]string{} // tag key → value written since the last settle
		var consoleSize, droverSize *int32
		lastSize := h.size(t, "chaos") // writing the size it already had is no change
		for step := 1; step <= 220; step++ {
			switch rng.Intn(6) {
			case 0:
				k, v := keys[rng.Intn(3)], fmt.Sprintf("c%d", step)
				h.consoleTag(t, "chaos", k, v)
				console[k] = v
			case 1:
				k, v := keys[rng.Intn(3)], fmt.Sprintf("d%d", step)
				e.editCluster("chaos", func(c *v1.Cluster) { h.setCfgTag(c, k, v) })
				drover[k] = v
			case 2: // a slow console update, sometimes still running at the next settle
				n := int32(1 + rng.Intn(3))
				if h.consoleScale(t, "chaos", n) {
					consoleSize = &n
					if rng.Intn(2) == 0 {
						e.simTime.Advance(simDelay)
					}
				}
			case 3:
				n := int32(1 + rng.Intn(3))
				e.editCluster("chaos", func(c *v1.Cluster) { h.setCfgSize(c, n) })
				droverSize = &n
			case 4:
				e.throttle(h, 0.3, int64(step))
			default:
				e.throttle(h, 0, 0)
				e.simTime.Advance(simDelay)
				c := e.refresh("chaos")
				tags := h.tags(t, "chaos")
				for k, v := range drover {
					if tags[k] != v {
						t.Fatalf("step %d: drover's tag %s=%s lost; provider has %q", step, k, v, tags[k])
					}
				}
				for k, v := range console {
					if _, both := drover[k]; !both && (tags[k] != v || h.cfgTags(c)[k] != v) {
						t.Fatalf("step %d: console's tag %s=%s lost: provider %q, config %q", step, k, v, tags[k], h.cfgTags(c)[k])
					}
				}
				size := h.size(t, "chaos")
				if droverSize != nil && *droverSize == lastSize {
					droverSize = nil
				}
				if droverSize != nil && size != *droverSize {
					t.Fatalf("step %d: drover's size %d lost; provider has %d", step, *droverSize, size)
				}
				if droverSize == nil && consoleSize != nil && h.cfgSize(c) != *consoleSize {
					t.Fatalf("step %d: console's size %d lost; config has %d", step, *consoleSize, h.cfgSize(c))
				}
				if fmt.Sprint(h.cfgTags(c)) != fmt.Sprint(tags) || h.cfgSize(c) != size {
					t.Fatalf("step %d: idle but config differs from the provider: tags %v vs %v, size %d vs %d", step, h.cfgTags(c), tags, h.cfgSize(c), size)
				}
				console, drover, consoleSize, droverSize = map[string]string{}, map[string]string{}, nil, nil
				lastSize = size
			}
		}
	})
}

// throttle sets the provider simulator's throttling probability.
func (e *env) throttle(h harness, p float64, seed int64) {
	if f, ok := h.(interface{ faults() *simcore.Faults }); ok {
		f.faults().Set(simcore.FaultConfig{Throttle: p, Seed: seed})
	}
}
