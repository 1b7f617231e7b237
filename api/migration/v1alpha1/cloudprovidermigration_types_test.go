package v1alpha1

import "testing"

// TestStepsDone: a finished migration has all its steps done (succeeded or skipped), where the
// index of its current step would say one fewer; running, failed and pending steps are not done.
func TestStepsDone(t *testing.T) {
	phases := func(ps ...StepPhase) *CloudProviderMigration {
		m := &CloudProviderMigration{}
		for i, p := range ps {
			m.Status.Steps = append(m.Status.Steps, StepStatus{Index: int32(i), Phase: p})
		}
		m.Status.CurrentStep = int32(len(ps) - 1)
		return m
	}
	for _, tc := range []struct {
		name string
		m    *CloudProviderMigration
		want int
	}{
		{"succeeded", phases(StepSucceeded, StepSucceeded, StepSkipped), 3},
		{"running", phases(StepSucceeded, StepRunning, StepPending), 1},
		{"failed", phases(StepSucceeded, StepFailed, StepPending), 1},
		{"none", phases(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.StepsDone(); got != tc.want {
				t.Errorf("StepsDone() = %d, want %d", got, tc.want)
			}
		})
	}
}
