package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTracker(t *testing.T) {
	t.Parallel()
	tr := NewTracker("test_objects", "Objects by state.", "state")
	reg := prometheus.NewRegistry()
	reg.MustRegister(tr)
	tr.Set("a", "connected")
	tr.Set("b", "connected")
	tr.Set("c", "waiting")
	tr.Set("c", "connected") // moved: no stale "waiting"
	tr.Set("d", "disconnected")
	tr.Delete("d")
	tr.SetCounts("e", map[string]int{"ready": 0})
	want := `
# HELP test_objects Objects by state.
# TYPE test_objects gauge
test_objects{state="connected"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "test_objects"); err != nil {
		t.Fatal(err)
	}
}
