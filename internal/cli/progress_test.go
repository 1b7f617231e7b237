package cli

import (
	"bytes"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

// TestMigrationProgressBar: while apply runs, a bar of finished steps is drawn at the start
// (from the saved state, so a resumed apply starts part-way) and whenever a step finishes.
func TestMigrationProgressBar(t *testing.T) {
	t.Parallel()
	step := func(i int32, phase migrationv1alpha1.StepPhase) migrationv1alpha1.StepStatus {
		return migrationv1alpha1.StepStatus{Index: i, Name: "Step", Phase: phase}
	}
	var out bytes.Buffer
	// Resumed: step 0 succeeded, step 1 skipped, steps 2-3 pending.
	p := newStepProgress(&out, []migrationv1alpha1.StepStatus{
		step(0, migrationv1alpha1.StepSucceeded), step(1, migrationv1alpha1.StepSkipped),
		step(2, migrationv1alpha1.StepPending), step(3, migrationv1alpha1.StepPending),
	})
	for _, s := range []migrationv1alpha1.StepStatus{
		step(2, migrationv1alpha1.StepRunning), // no step finished: no new bar
		step(2, migrationv1alpha1.StepApplied),
		step(2, migrationv1alpha1.StepSucceeded),
		step(3, migrationv1alpha1.StepRunning),
		step(3, migrationv1alpha1.StepSucceeded),
	} {
		p.report(s)
	}
	want := "[###############...............] 2/4 steps done\n" +
		"[######################........] 3/4 steps done\n" +
		"[##############################] 4/4 steps done\n"
	if out.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
	if got := progressBar(1, 3, 9); got != "[###......]" {
		t.Errorf("progressBar(1, 3, 9) = %q", got)
	}
	if got := progressBar(0, 0, 4); got != "[####]" {
		t.Errorf("progressBar with no steps = %q, want full", got)
	}
}

// TestBundleWaitProgress: bundle apply --wait shows a progress bar of the clusters ready.
func TestBundleWaitProgress(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	b := &fleetv1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: fleetv1alpha1.BundleSpec{
			Resources: []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}`)}},
			Targets:   []fleetv1alpha1.BundleTarget{{ClusterName: "edge"}},
		},
	}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Status.ObservedGeneration = b.Generation
	b.Status.Summary = fleetv1alpha1.BundleSummary{DesiredReady: 5, Ready: 1, Pending: 3, NotReady: 1}
	if err := mgmt.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	s, err := bundleReady(mgmt.Client, client.ObjectKeyFromObject(b))(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[####................] 1/5 clusters ready, 3 pending, 1 not ready, 0 errored"; s.line != want || s.done {
		t.Errorf("progress %q (done %v), want %q", s.line, s.done, want)
	}
}
