package cli

import (
	"bytes"
	"testing"

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
