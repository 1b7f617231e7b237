package integration

import (
	"testing"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// TestStatusShowsPushedValues: after a push the provider reports done, the status (and so
// `drover cluster get`) shows the pushed values, not the read from before the push. A user who
// added a tag through drover saw Synced=True yet "differs: (absent)" until the next refresh.
func TestStatusShowsPushedValues(t *testing.T) {
	t.Parallel()
	forEachProvider(t, func(t *testing.T, h harness) {
		e := newEnv(t, h)
		e.create(h.created("pushed"))
		e.editCluster("pushed", func(c *v1.Cluster) { h.setCfgTag(c, "added", "by-drover") })
		c := e.settle("pushed")
		if got := h.tags(t, "pushed")["added"]; got != "by-drover" {
			t.Fatalf("the tag did not reach the provider: %v", h.tags(t, "pushed"))
		}
		p := h.provider()
		up, err := p.Upstream(c)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := hosted.View(p, c, up)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if row.Drift {
				t.Errorf("%s: status says the provider has %s, config %s, after a push that is done (Synced %+v)", row.Path, row.Upstream, row.Value, cond(c, hosted.CondSynced))
			}
		}
	})
}
