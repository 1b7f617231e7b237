package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestBundleWaitNoTargets: `bundle apply --wait` does not call a Bundle that targets no cluster
// (a mistyped --cluster) deployed: it fails, saying how to check the targets; one that failed to
// apply where nothing is in progress any more fails naming a cluster and why; a Bundle ready on
// its clusters is done, one still in progress is waited for.
func TestBundleWaitNoTargets(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	failedOn := []fleetv1alpha1.NonReadyCluster{{Name: "edge-2", State: "ErrApplied", Message: `namespaces "web" not found`}}
	for _, tc := range []struct {
		name                      string
		desired, errored, pending int
		done, fails               bool
		want                      string
	}{
		{name: "none", done: false, fails: true, want: "targets no registered cluster"},
		{name: "two", desired: 2, done: true},
		// Failed where nothing is in progress any more: said now, not at --timeout.
		{name: "errored", desired: 2, errored: 1, fails: true, want: `1 of 2 clusters failed to apply it: edge-2: namespaces "web" not found`},
		{name: "errored-and-pending", desired: 3, errored: 1, pending: 1},
	} {
		b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name}}
		if err := mgmt.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		b.Status.ObservedGeneration = b.Generation
		b.Status.Summary.DesiredReady, b.Status.Summary.Ready = tc.desired, tc.desired-tc.errored-tc.pending
		b.Status.Summary.ErrApplied, b.Status.Summary.Pending = tc.errored, tc.pending
		ready := metav1.ConditionTrue
		if tc.errored+tc.pending > 0 {
			ready, b.Status.Summary.NonReadyClusters = metav1.ConditionFalse, failedOn
		}
		b.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ConditionReady, Status: ready, Reason: "Succeeded",
			ObservedGeneration: b.Generation, LastTransitionTime: metav1.Now()}}
		if err := mgmt.Client.Status().Update(ctx, b); err != nil {
			t.Fatal(err)
		}
		s, err := bundleReady(mgmt.Client, client.ObjectKeyFromObject(b))(ctx)
		if err != nil || s.done != tc.done || (s.failed != nil) != tc.fails {
			t.Errorf("%s: done %t, failed %v (%v); want done %t, failing %t", tc.name, s.done, s.failed, err, tc.done, tc.fails)
		}
		if tc.fails && (s.failed == nil || !strings.Contains(s.failed.Error(), tc.want)) {
			t.Errorf("%s: failure %v, want it to say %q", tc.name, s.failed, tc.want)
		}
		if tc.desired == 0 && strings.Contains(s.line, "#") {
			t.Errorf("%s: progress %q: a Bundle on no cluster drew progress", tc.name, s.line)
		}
	}
}

// TestGitRepoWaitFailedBundle: `gitrepo add --wait` says why a Bundle is not ready in its
// progress line and ends (exit 3) when one failed to apply with nothing in progress.
func TestGitRepoWaitFailedBundle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"}, Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps.git"}}
	if err := mgmt.Client.Create(ctx, gr); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	gr.Status.Commit = "0123456789abcdef"
	gr.Status.Summary = fleetv1alpha1.GitRepoSummary{Bundles: 1}
	gr.Status.Bundles = []fleetv1alpha1.GitRepoBundle{{Name: "apps-web", Path: "web", DesiredReady: 2, Message: "edge-2: namespaces \"web\" not found"}}
	gr.Status.Conditions = []metav1.Condition{
		{Type: fleetv1alpha1.ConditionSynced, Status: metav1.ConditionTrue, Reason: "Synced", ObservedGeneration: gr.Generation, LastTransitionTime: now},
		{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "BundlesNotReady", ObservedGeneration: gr.Generation, LastTransitionTime: now}}
	if err := mgmt.Client.Status().Update(ctx, gr); err != nil {
		t.Fatal(err)
	}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps-web", Labels: map[string]string{fleetv1alpha1.GitRepoNameLabel: "apps"}}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	check := func(wantFailed bool) {
		t.Helper()
		s, err := gitRepoReady(mgmt.Client, client.ObjectKeyFromObject(gr))(ctx)
		if err != nil || !strings.Contains(s.line, `(web: edge-2: namespaces "web" not found)`) || (s.failed != nil) != wantFailed {
			t.Errorf("line %q, failed %v (%v); want the Bundle's message, failing %t", s.line, s.failed, err, wantFailed)
		}
		if wantFailed && (s.failed == nil || !strings.Contains(s.failed.Error(), "bundle apps-web: 1 of 2 clusters failed to apply it")) {
			t.Errorf("failure %v does not name the Bundle and its clusters", s.failed)
		}
	}
	check(false) // its Bundle has not reported yet
	b.Status.ObservedGeneration = b.Generation
	b.Status.Summary = fleetv1alpha1.BundleSummary{DesiredReady: 2, Ready: 1, ErrApplied: 1,
		NonReadyClusters: []fleetv1alpha1.NonReadyCluster{{Name: "edge-2", State: "ErrApplied", Message: `namespaces "web" not found`}}}
	if err := mgmt.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	check(true)
}

// TestGitRepoWaitNowhere: `gitrepo add --wait` does not call a GitRepo deployed when one of its
// paths targets no cluster (targets matching nothing; a fleet.yaml's overrideTargets, doNotDeploy
// or paused): it fails naming the path and where to look.
func TestGitRepoWaitNowhere(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"}, Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps.git"}}
	if err := mgmt.Client.Create(ctx, gr); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	gr.Status.Commit = "0123456789abcdef"
	gr.Status.Summary = fleetv1alpha1.GitRepoSummary{Bundles: 2, ReadyBundles: 2}
	gr.Status.Bundles = []fleetv1alpha1.GitRepoBundle{{Name: "apps-web", Path: "web", Ready: 2, DesiredReady: 2}, {Name: "apps-paused", Path: "paused"}}
	gr.Status.Conditions = []metav1.Condition{
		{Type: fleetv1alpha1.ConditionSynced, Status: metav1.ConditionTrue, Reason: "Synced", ObservedGeneration: gr.Generation, LastTransitionTime: now},
		{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Succeeded", ObservedGeneration: gr.Generation, LastTransitionTime: now}}
	if err := mgmt.Client.Status().Update(ctx, gr); err != nil {
		t.Fatal(err)
	}
	s, err := gitRepoReady(mgmt.Client, client.ObjectKeyFromObject(gr))(ctx)
	if err != nil || s.done || s.failed == nil || !strings.Contains(s.failed.Error(), "path paused (Bundle apps-paused) targets no registered cluster") ||
		!strings.Contains(s.failed.Error(), "drover gitrepo get apps -n "+ns) {
		t.Errorf("done %v, failed %v (%v); want a failure naming the path", s.done, s.failed, err)
	}
}

// TestWaitInterrupted: Ctrl-C during --wait says that only the wait stopped (the request was
// made), not a bare "context canceled".
func TestWaitInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	err := waitUntil(ctx, &bytes.Buffer{}, "bundle web", time.Minute, func(context.Context) (state, error) {
		cancel()
		return state{line: "deleting"}, nil
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped waiting for bundle web") || !strings.Contains(err.Error(), "last: deleting") {
		t.Fatalf("interrupted wait: %v", err)
	}
}
