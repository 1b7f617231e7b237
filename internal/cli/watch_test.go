package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/test/envtest"
)

// startDrover runs the command line in-process until the test ends, returning its live stdout
// and stderr.
func startDrover(t *testing.T, args ...string) (out, errOut *envtest.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	out, errOut = &envtest.SyncBuffer{}, &envtest.SyncBuffer{}
	cmd := NewRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Errorf("drover %s: %v", strings.Join(args, " "), err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return out, errOut
}

// rows counts out's lines whose first fields are want.
func rows(out string, want ...string) int {
	n := 0
	for l := range strings.Lines(out) {
		if f := strings.Fields(l); len(f) >= len(want) && strings.Join(f[:len(want)], " ") == strings.Join(want, " ") {
			n++
		}
	}
	return n
}

// TestListWatch: `list -w` prints the list, then each change once, across the watches the API
// server ends (every second here) and drover reopens where the last one stopped; --watch-only
// skips the list; -o name prints names; the watch flags' misuse is a usage error.
func TestListWatch(t *testing.T) {
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	watchTimeout = ptr.To[int64](1)
	t.Cleanup(func() { watchTimeout = nil })
	create := func(name string) *fleetv1alpha1.Bundle {
		t.Helper()
		b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := mgmt.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := create("a")
	create("a-bundle-with-a-long-name")

	out, _ := startDrover(t, "bundle", "list", "-w", "--output-watch-events", "--kubeconfig", kc, "-n", ns)
	lines := func(b *envtest.SyncBuffer, want int, fields ...string) func() error {
		return func() error {
			if n := rows(b.String(), fields...); n != want {
				return fmt.Errorf("%d lines %q, want %d, in:\n%s", n, strings.Join(fields, " "), want, b.String())
			}
			return nil
		}
	}
	envtest.Eventually(t, 30*time.Second, lines(out, 1, "EVENT", "NAME"))
	envtest.Eventually(t, 30*time.Second, lines(out, 1, "ADDED", "a"))
	envtest.Eventually(t, 30*time.Second, lines(out, 1, "ADDED", "a-bundle-with-a-long-name"))
	// The first list is one aligned table, as `list` prints it.
	cols := map[int]bool{}
	for l := range strings.Lines(out.String()) {
		cols[strings.Index(l, "READY")+strings.Index(l, "0/0")+1] = true
	}
	if len(cols) != 1 {
		t.Errorf("the listed rows are not aligned with their header:\n%s", out.String())
	}
	empty, emptyErr := startDrover(t, "gitrepo", "list", "-w", "--kubeconfig", kc, "-n", ns)
	envtest.Eventually(t, 30*time.Second, func() error {
		if !strings.Contains(emptyErr.String(), "No gitrepos found in namespace "+ns) {
			return fmt.Errorf("stderr of an empty list: %q", emptyErr.String())
		}
		return nil
	})
	only, _ := startDrover(t, "bundle", "list", "--watch-only", "-o", "name", "--kubeconfig", kc, "-n", ns)
	asYAML, _ := startDrover(t, "bundle", "list", "-w", "-o", "yaml", "--kubeconfig", kc, "-n", ns)

	// Let the API server end the first watches, so the next changes come through reopened ones.
	opened := watchesOpened.Load()
	envtest.Eventually(t, 30*time.Second, func() error {
		if n := watchesOpened.Load(); n < opened+3 {
			return fmt.Errorf("%d watches reopened", n-opened)
		}
		return nil
	})
	b := create("b")
	envtest.Eventually(t, 30*time.Second, lines(out, 1, "ADDED", "b"))
	envtest.Eventually(t, 30*time.Second, lines(only, 1, "bundle.fleet.drover.io/b"))
	patch := client.MergeFrom(a.DeepCopy())
	a.Spec.Rollout.Paused = true
	if err := mgmt.Client.Patch(ctx, a, patch); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, lines(out, 1, "MODIFIED", "a"))
	if err := mgmt.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, lines(out, 1, "DELETED", "b"))
	g := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"}, Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps.git"}}
	if err := mgmt.Client.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	// The first row of a list that was empty comes with the header.
	envtest.Eventually(t, 30*time.Second, lines(empty, 1, "NAME"))
	envtest.Eventually(t, 30*time.Second, lines(empty, 1, "apps"))

	// Later rows line up under the first table, as kubectl's watch rows do.
	third := map[int]bool{}
	for l := range strings.Lines(out.String()) {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		third[strings.Index(l, " "+f[2])] = true
	}
	if len(third) != 1 {
		t.Errorf("watch rows are not aligned with the first table:\n%s", out.String())
	}
	// A YAML stream is one document per object, separated as kubectl separates them.
	envtest.Eventually(t, 30*time.Second, func() error {
		if n := strings.Count(asYAML.String(), "\n---\n"); n < 3 {
			return fmt.Errorf("%d document separators in:\n%s", n, asYAML.String())
		}
		return nil
	})

	// Nothing was printed twice, and --watch-only did not list a.
	for _, l := range [][]string{{"ADDED", "a"}, {"ADDED", "b"}, {"MODIFIED", "a"}, {"EVENT", "NAME"}} {
		if n := rows(out.String(), l...); n != 1 {
			t.Errorf("%d lines %q in:\n%s", n, strings.Join(l, " "), out.String())
		}
	}
	// --watch-only prints a once: its change, not the list from before it. (b's deletion, its
	// second line, comes after a's change: then both are in.)
	envtest.Eventually(t, 30*time.Second, lines(only, 2, "bundle.fleet.drover.io/b"))
	if n := rows(only.String(), "bundle.fleet.drover.io/a"); n != 1 {
		t.Errorf("--watch-only printed a %d times, want 1 (its change):\n%s", n, only.String())
	}

	for _, args := range [][]string{{"bundle", "list", "--output-watch-events"}, {"bundle", "list", "-w", "--output-watch-events", "-o", "name"}} {
		_, _, err := drover(ctx, append(args, "--kubeconfig", kc, "-n", ns)...)
		if err == nil || !strings.Contains(err.Error(), "--output-watch-events") || ExitCode(err) != 2 {
			t.Errorf("drover %s: %v (exit %d), want a usage error naming --output-watch-events", strings.Join(args, " "), err, ExitCode(err))
		}
	}
}

// TestWatchExpiredListsAgain: a watch whose resourceVersion has been compacted away (410 Gone)
// lists again, prints what is there and resumes from the new list.
func TestWatchExpiredListsAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	if err := mgmt.Client.Create(ctx, &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(mgmt.Config, client.Options{Scheme: mgmt.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	out := &strings.Builder{}
	lw := &listWatch[*fleetv1alpha1.Bundle]{c: c, opts: []client.ListOption{client.InNamespace(ns)}, out: out, errOut: out, o: &output{format: "name"},
		newList: func() client.ObjectList { return &fleetv1alpha1.BundleList{} },
		items:   func(l client.ObjectList) []*fleetv1alpha1.Bundle { return ptrs(l.(*fleetv1alpha1.BundleList).Items) }}
	w := watch.NewFake()
	go w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (2)"})
	rv, err := lw.follow(ctx, w, "1")
	if err != nil || rv == "" || rv == "1" {
		t.Errorf("follow after 410: resourceVersion %q, %v; want the new list's", rv, err)
	}
	if !strings.Contains(out.String(), "bundle.fleet.drover.io/web") {
		t.Errorf("the new list was not printed: %q", out.String())
	}
}

// TestListWatchTableFlags: list -w honours the table flags as list does: --no-headers prints no
// header, neither for the first table nor for the first row of a list that was empty;
// --sort-by orders the first table; --show-labels ends every row with the labels.
func TestListWatchTableFlags(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	for name, rank := range map[string]string{"a": "2", "b": "1"} {
		b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"rank": rank}}}
		if err := mgmt.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	bundles, _ := startDrover(t, "bundle", "list", "-w", "--no-headers", "--show-labels", "--sort-by", "{.metadata.labels.rank}", "--kubeconfig", kc, "-n", ns)
	gitRepos, gitRepoErr := startDrover(t, "gitrepo", "list", "-w", "--no-headers", "--kubeconfig", kc, "-n", ns)
	envtest.Eventually(t, 30*time.Second, func() error {
		if !strings.Contains(gitRepoErr.String(), "No gitrepos found") {
			return fmt.Errorf("stderr of an empty list: %q", gitRepoErr.String())
		}
		return nil
	})
	// c comes after the first table, as a change: wait for the table.
	envtest.Eventually(t, 30*time.Second, func() error {
		if n := rows(bundles.String(), "a") + rows(bundles.String(), "b"); n != 2 {
			return fmt.Errorf("%d of the 2 bundles listed:\n%s", n, bundles.String())
		}
		return nil
	})
	g := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"}, Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps.git"}}
	if err := mgmt.Client.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	c := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		out   *envtest.SyncBuffer
		lines []string // the first field of each line, in order
		last  []string // the last field of each line
	}{
		{"sorted, labelled, no header", bundles, []string{"b", "a", "c"}, []string{"rank=1", "rank=2", "<none>"}},
		{"empty list, no header", gitRepos, []string{"apps"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var first, last []string
			envtest.Eventually(t, 30*time.Second, func() error {
				first, last = nil, nil
				for l := range strings.Lines(tt.out.String()) {
					f := strings.Fields(l)
					first, last = append(first, f[0]), append(last, f[len(f)-1])
				}
				if len(first) < len(tt.lines) {
					return fmt.Errorf("%d lines, want %d:\n%s", len(first), len(tt.lines), tt.out.String())
				}
				return nil
			})
			if !slices.Equal(first, tt.lines) {
				t.Errorf("lines %v, want %v (no header):\n%s", first, tt.lines, tt.out.String())
			}
			if tt.last != nil && !slices.Equal(last, tt.last) {
				t.Errorf("last column %v, want the labels %v:\n%s", last, tt.last, tt.out.String())
			}
		})
	}
}
