package metrics

import (
	"strings"
	"testing"
	"time"

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

func TestOldest(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	o := NewOldest("test_age_seconds", "Age of the oldest.", "provider")
	o.now = func() time.Time { return now }
	reg := prometheus.NewRegistry()
	reg.MustRegister(o)
	o.Set("a", "eks", now.Add(-10*time.Second))
	o.Set("b", "eks", now.Add(-300*time.Second))
	o.Set("b", "eks", now.Add(-20*time.Second)) // refreshed again: its older time no longer counts
	o.Set("c", "gke", now.Add(-5*time.Second))
	o.Set("d", "aks", now.Add(-time.Hour))
	o.Delete("d")
	want := `
# HELP test_age_seconds Age of the oldest.
# TYPE test_age_seconds gauge
test_age_seconds{provider="eks"} 20
test_age_seconds{provider="gke"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "test_age_seconds"); err != nil {
		t.Fatal(err)
	}
}
