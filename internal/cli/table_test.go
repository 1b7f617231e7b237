package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
)

// objNames is the namespace/name of each item, in order.
func objNames[T client.Object](items []T) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.GetNamespace()+"/"+it.GetName())
	}
	return out
}

// TestSortList: --sort-by orders like kubectl get --sort-by: numbers by value, timestamps by
// time, text lexically, objects without the field first, ties by namespace and name; the
// default order is namespace, then name.
func TestSortList(t *testing.T) {
	t.Parallel()
	at := func(h int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC)) }
	cl := func(ns, name, phase string, created metav1.Time) *v1.Cluster {
		return &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created}, Status: v1.ClusterStatus{Phase: v1.Phase(phase)}}
	}
	clusters := func() []*v1.Cluster {
		return []*v1.Cluster{
			cl("b", "x", "creating", at(3)),
			cl("a", "z", "active", at(9)),
			cl("a", "y", "", at(10)),
			cl("a", "w", "error", at(1)),
		}
	}
	bundle := func(name string, ready int) *fleetv1alpha1.Bundle {
		b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
		b.Status.Summary.Ready = ready
		return b
	}
	tests := []struct {
		name   string
		sortBy string
		want   []string
	}{
		{"default order", "", []string{"a/w", "a/y", "a/z", "b/x"}},
		{"string, missing first", ".status.phase", []string{"a/y", "a/z", "b/x", "a/w"}},
		{"braces", "{.status.phase}", []string{"a/y", "a/z", "b/x", "a/w"}},
		{"relaxed, no dot", "status.phase", []string{"a/y", "a/z", "b/x", "a/w"}},
		{"timestamp", ".metadata.creationTimestamp", []string{"a/w", "b/x", "a/z", "a/y"}},
		// A field no item has is an error: TestSortByMissingField.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := clusters()
			if err := sortList(items, tt.sortBy); err != nil {
				t.Fatal(err)
			}
			if got := objNames(items); !slices.Equal(got, tt.want) {
				t.Errorf("--sort-by %q: %v, want %v", tt.sortBy, got, tt.want)
			}
		})
	}
	t.Run("numbers by value", func(t *testing.T) {
		items := []*fleetv1alpha1.Bundle{bundle("ten", 10), bundle("nine", 9), bundle("two", 2), bundle("also-two", 2)}
		if err := sortList(items, ".status.summary.ready"); err != nil {
			t.Fatal(err)
		}
		if got, want := objNames(items), []string{"a/also-two", "a/two", "a/nine", "a/ten"}; !slices.Equal(got, want) {
			t.Errorf("%v, want %v", got, want)
		}
	})
}

// TestTable: the one table renderer of list, get -o table and list -w: AGE after the default
// columns (before the wide ones), --show-labels' LABELS last, --no-headers, NAMESPACE with -A,
// and later rows lined up under the first table.
func TestTable(t *testing.T) {
	old := now
	now = func() time.Time { return goldenNow }
	t.Cleanup(func() { now = old })
	created := metav1.NewTime(goldenNow.Add(-(3*time.Hour + 20*time.Minute)))
	items := []*v1.Cluster{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod", CreationTimestamp: created, Labels: map[string]string{"tier": "gold", "env": "prod"}},
			Status: v1.ClusterStatus{Phase: v1.PhaseActive}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new"}, Status: v1.ClusterStatus{Phase: v1.PhaseCreating}},
	}
	cols := []column[*v1.Cluster]{
		{name: "NAME", cell: func(c *v1.Cluster) string { return c.Name }},
		{name: "PHASE", cell: func(c *v1.Cluster) string { return string(c.Status.Phase) }},
		{name: "POLICY", wide: true, cell: func(*v1.Cluster) string { return "-" }},
	}
	tests := []struct {
		name          string
		o             output
		withNamespace bool
		want          string
	}{
		{"default", output{}, false, "" +
			"NAME   PHASE      AGE\n" +
			"prod   active     3h20m\n" +
			"new    creating   <unknown>\n"},
		{"wide", output{format: "wide"}, false, "" +
			"NAME   PHASE      AGE         POLICY\n" +
			"prod   active     3h20m       -\n" +
			"new    creating   <unknown>   -\n"},
		{"no headers", output{noHeaders: true}, false, "" +
			"prod   active     3h20m\n" +
			"new    creating   <unknown>\n"},
		{"show labels", output{showLabels: true}, true, "" +
			"NAMESPACE   NAME   PHASE      AGE         LABELS\n" +
			"team-a      prod   active     3h20m       env=prod,tier=gold\n" +
			"team-a      new    creating   <unknown>   <none>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := printTable(&b, &tt.o, items, cols, tt.withNamespace); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tt.want)
			}
		})
	}
	t.Run("watch rows", func(t *testing.T) {
		var b strings.Builder
		tb := newTable(&output{noHeaders: true}, cols, false, true)
		if err := tb.print(&b, watch.Added, items[0]); err != nil {
			t.Fatal(err)
		}
		wider := items[1].DeepCopy()
		wider.Name = "a-much-longer-name"
		for _, c := range []*v1.Cluster{items[1], wider, items[1]} {
			if err := tb.print(&b, watch.Modified, c); err != nil {
				t.Fatal(err)
			}
		}
		// Each row is printed as it comes: a column grows for a wider cell, and stays grown.
		want := "" +
			"ADDED      prod   active   3h20m\n" +
			"MODIFIED   new    creating   <unknown>\n" +
			"MODIFIED   a-much-longer-name   creating   <unknown>\n" +
			"MODIFIED   new                  creating   <unknown>\n"
		if b.String() != want {
			t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
		}
	})
}

// TestSortByUsage: a --sort-by that is no field path is a usage error naming the flag, before
// drover connects to anything (no kubeconfig here), in every list mode.
func TestSortByUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
	}{
		{"unclosed brace", []string{"cluster", "list", "--sort-by", "{.metadata.name"}},
		{"nested braces", []string{"fleet", "list", "--sort-by", "{{.metadata.name}}"}},
		{"bad index", []string{"bundle", "list", "--sort-by", ".status.conditions[x"}},
		{"with -o json", []string{"gitrepo", "list", "-o", "json", "--sort-by", "{.metadata.name"}},
		{"with -w", []string{"token", "list", "-w", "--sort-by", "{.metadata.name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := drover(t.Context(), tt.args...)
			if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--sort-by") {
				t.Errorf("drover %s: %v (exit %d), want a usage error naming --sort-by", strings.Join(tt.args, " "), err, ExitCode(err))
			}
		})
	}
}
