package migration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration/checks"
)

// Condition types and reasons (stable: tools match on them).
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionFailed      = "Failed"
	// ConditionRollbackRefused is True while a requested rollback cannot run (reason
	// ReasonInTreeProviderRemoved or ReasonNothingToRollBack); it leaves the migration's own
	// outcome (Ready, Failed) as it was.
	ConditionRollbackRefused = "RollbackRefused"

	ReasonSucceeded  = "Succeeded"
	ReasonRolledBack = "RolledBack"
	ReasonWaiting    = "Waiting"
)

// FailedError is a migration stopped at a step; it does not go away by retrying.
type FailedError struct {
	Step int
	Msg  string
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("step %d %s failed: %s", e.Step, StepNames[e.Step], e.Msg)
}

// ErrRollbackInProgress means a rollback was started and not finished: the migration cannot
// advance (retrying does not help) until rollback runs again to finish it.
var ErrRollbackInProgress = errors.New("a rollback is in progress: run rollback again to finish it")

// Engine runs a migration. It holds no progress itself: every transition is loaded from and
// saved to Store, so a new Engine over the same Store resumes where the last one stopped.
type Engine struct {
	Dist   Distribution
	Checks *checks.Checker
	Store  Store
	// StepTimeout bounds each step's verification (default 10 min).
	StepTimeout time.Duration
	// PollInterval is how often Run re-checks a pending verification (default 2 s).
	PollInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnAction, if set, is called each time a step's action has run.
	OnAction func(step int)
	// Report, if set, is called after each saved step transition (progress output).
	Report func(migrationv1alpha1.StepStatus)
	// Waiting, if set, is told what a rollback waits for: when that changes, and at least
	// every WaitingEvery (default 15 s) while it does not.
	Waiting      func(msg string)
	WaitingEvery time.Duration
	// Overhead accumulates, per step, the time spent inside Advance calls that made progress:
	// drover's own cost (including its API calls and the verification that passed), without
	// the waiting between verification polls.
	Overhead [NumSteps]time.Duration
	// PollTime accumulates, per step, the time spent in verification polls that found the
	// cluster not there yet: part of waiting for the cluster, and proportional to how often
	// it is polled.
	PollTime [NumSteps]time.Duration
}

// Progress is the outcome of one Advance.
type Progress struct {
	// Done: the migration succeeded, failed or was rolled back.
	Done bool
	// Wait > 0: a verification is pending; call Advance again after Wait.
	Wait time.Duration
	// Msg says what is pending.
	Msg string
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) poll() time.Duration {
	if e.PollInterval > 0 {
		return e.PollInterval
	}
	return 2 * time.Second
}

func (e *Engine) timeout() time.Duration {
	if e.StepTimeout > 0 {
		return e.StepTimeout
	}
	return 10 * time.Minute
}

// Init stores a fresh state for spec unless one exists; an existing state with a different
// spec is refused, since the recorded progress would not match.
func (e *Engine) Init(ctx context.Context, spec migrationv1alpha1.CloudProviderMigrationSpec) error {
	st, err := e.Store.Load(ctx)
	if err == nil && st != nil && len(st.Status.Steps) > 0 {
		return nil
	}
	if err != nil && !errors.Is(err, ErrNoState) {
		return err
	}
	st = &State{Spec: spec}
	initStatus(&st.Status)
	return e.Store.Save(ctx, st)
}

func initStatus(s *migrationv1alpha1.CloudProviderMigrationStatus) {
	if len(s.Steps) > 0 {
		return
	}
	s.Phase = migrationv1alpha1.PhasePending
	for i := range NumSteps {
		s.Steps = append(s.Steps, migrationv1alpha1.StepStatus{Index: int32(i), Name: StepNames[i], Phase: migrationv1alpha1.StepPending})
	}
}

// ParamsFor resolves the edit parameters from a spec and the pre-migration version.
func ParamsFor(spec migrationv1alpha1.CloudProviderMigrationSpec, currentVersion string) Params {
	p := Params{
		LeaderMigration:   spec.LeaderMigration == nil || *spec.LeaderMigration,
		KubernetesVersion: spec.KubernetesVersion,
		CCM:               spec.CCM,
		ImageTag:          spec.CCM.ImageTag,
	}
	if p.ImageTag == "" {
		v := currentVersion
		if spec.KubernetesVersion != "" {
			v = spec.KubernetesVersion // the CCM serves the cluster it will be, not the one it was
		}
		if m, err := Minor(v); err == nil {
			p.ImageTag = fmt.Sprintf("v1.%d.0", m)
		}
	}
	return p
}

// skipReason says why a step does not run with these parameters ("" if it runs).
func skipReason(step int, p Params) string {
	switch {
	case step == StepEnableLeaderMigration && !p.LeaderMigration:
		return "leader migration disabled: the cloud controllers stop with the switch and start in the CCM (downtime)"
	case step == StepInstallCCM && !p.LeaderMigration:
		return "leader migration disabled: the CCM is installed with the switch (step 4), so the two never run together"
	case step == StepDisableCCMLeaderMigration && !p.LeaderMigration:
		return "leader migration disabled: the CCM never had it"
	case step == StepDisableCCMLeaderMigration && p.CCM.KeepLeaderMigration:
		return "ccm.keepLeaderMigration is set: the CCM keeps --enable-leader-migration"
	}
	return ""
}

// Advance loads the state, makes at most one transition of the current step, and saves it.
func (e *Engine) Advance(ctx context.Context) (Progress, error) {
	st, err := e.Store.Load(ctx)
	if err != nil {
		return Progress{}, fmt.Errorf("load migration state: %w", err)
	}
	initStatus(&st.Status)
	switch st.Status.Phase {
	case migrationv1alpha1.PhaseSucceeded, migrationv1alpha1.PhaseRolledBack:
		return Progress{Done: true}, nil
	case migrationv1alpha1.PhaseFailed:
		i := st.Status.CurrentStep
		return Progress{Done: true}, &FailedError{Step: int(i), Msg: st.Status.Steps[i].Message}
	case migrationv1alpha1.PhaseRollingBack:
		return Progress{Done: true}, ErrRollbackInProgress
	}
	i := currentStep(&st.Status)
	if i == NumSteps {
		st.Status.Phase = migrationv1alpha1.PhaseSucceeded
		setCondition(&st.Status, ConditionReady, true, ReasonSucceeded, "The cluster runs the out-of-tree AWS cloud controller manager")
		setCondition(&st.Status, ConditionProgressing, false, ReasonSucceeded, "All steps finished")
		return Progress{Done: true}, e.save(ctx, st, -1)
	}
	start, pending := time.Now(), false
	defer func() {
		if pending {
			e.PollTime[i] += time.Since(start)
		} else {
			e.Overhead[i] += time.Since(start)
		}
	}()

	log := ctrl.LoggerFrom(ctx).WithValues("step", StepNames[i])
	p := ParamsFor(st.Spec, st.Status.Facts.KubernetesVersion)
	s := &st.Status.Steps[i]
	st.Status.CurrentStep = int32(i)
	st.Status.Phase = migrationv1alpha1.PhaseRunning
	switch s.Phase {
	case migrationv1alpha1.StepPending:
		if why := skipReason(i, p); why != "" {
			s.Phase, s.Message, s.FinishedAt = migrationv1alpha1.StepSkipped, why, e.stamp()
			log.Info("Skipping step", "reason", why)
			return Progress{}, e.save(ctx, st, i)
		}
		if err := e.precondition(ctx, st, i, p); err != nil {
			return e.failOrRetry(ctx, st, i, err)
		}
		s.Phase, s.StartedAt, s.Message = migrationv1alpha1.StepRunning, e.stamp(), ""
		setCondition(&st.Status, ConditionProgressing, true, StepNames[i], fmt.Sprintf("Step %d %s running", i, StepNames[i]))
		return Progress{}, e.save(ctx, st, i)
	case migrationv1alpha1.StepRunning:
		log.Info("Running step action")
		if err := e.action(ctx, st, i, p); err != nil {
			return e.failOrRetry(ctx, st, i, err)
		}
		if e.OnAction != nil {
			e.OnAction(i)
		}
		s.Phase = migrationv1alpha1.StepApplied
		return Progress{}, e.save(ctx, st, i)
	case migrationv1alpha1.StepApplied:
		err := e.verify(ctx, st, i, p)
		if err == nil && i == StepSwitchProvider {
			var bumped bool
			if bumped, err = e.bumpVersion(ctx, p); err == nil && bumped {
				// Verified again once applied: the step succeeds with the new version.
				msg := fmt.Sprintf("Provider switch verified; Kubernetes %s written, waiting for the distribution to apply it", p.KubernetesVersion)
				log.Info("Kubernetes version written after the verified switch", "version", p.KubernetesVersion)
				s.Message = msg
				setCondition(&st.Status, ConditionProgressing, true, ReasonWaiting, msg)
				if err := e.save(ctx, st, -1); err != nil {
					return Progress{}, err
				}
				pending = true
				return Progress{Wait: e.poll(), Msg: msg}, nil
			}
		}
		if err == nil {
			s.Phase, s.FinishedAt, s.Message = migrationv1alpha1.StepSucceeded, e.stamp(), ""
			log.Info("Step verified")
			return Progress{}, e.save(ctx, st, i)
		}
		var pr *checks.Problem
		if errors.As(err, &pr) && !pr.Permanent {
			if s.StartedAt != nil && e.now().Sub(s.StartedAt.Time) > e.timeout() {
				return e.failOrRetry(ctx, st, i, &checks.Problem{Permanent: true, Msg: fmt.Sprintf("not verified after %s: %s", e.timeout(), pr.Msg)})
			}
			if s.Message != pr.Msg { // persist what we wait for, but not on every poll
				s.Message = pr.Msg
				setCondition(&st.Status, ConditionProgressing, true, ReasonWaiting, pr.Msg)
				if err := e.save(ctx, st, -1); err != nil {
					return Progress{}, err
				}
			}
			pending = true
			return Progress{Wait: e.poll(), Msg: pr.Msg}, nil
		}
		return e.failOrRetry(ctx, st, i, err)
	}
	return Progress{}, fmt.Errorf("step %d in unexpected phase %q", i, s.Phase)
}

func currentStep(s *migrationv1alpha1.CloudProviderMigrationStatus) int {
	for i, st := range s.Steps {
		if st.Phase != migrationv1alpha1.StepSucceeded && st.Phase != migrationv1alpha1.StepSkipped {
			return i
		}
	}
	return NumSteps
}

// failOrRetry records a permanent failure; other errors (API hiccups) are returned for retry.
// A failing command (the apply command, Helm) is retried too, but only for the step timeout
// from the step's start: then the step fails with the command's error.
func (e *Engine) failOrRetry(ctx context.Context, st *State, i int, err error) (Progress, error) {
	var ce *CommandError
	if !checks.IsPermanent(err) && errors.As(err, &ce) {
		if started := st.Status.Steps[i].StartedAt; started != nil && e.now().Sub(started.Time) > e.timeout() {
			err = &checks.Problem{Permanent: true, Msg: fmt.Sprintf("still failing after %s (--step-timeout): %v", e.timeout(), err)}
		}
	}
	if !checks.IsPermanent(err) {
		return Progress{}, fmt.Errorf("step %d %s: %w", i, StepNames[i], err)
	}
	s := &st.Status.Steps[i]
	s.Phase, s.Message, s.FinishedAt = migrationv1alpha1.StepFailed, err.Error(), e.stamp()
	st.Status.Phase = migrationv1alpha1.PhaseFailed
	setCondition(&st.Status, ConditionFailed, true, StepNames[i], err.Error())
	setCondition(&st.Status, ConditionProgressing, false, StepNames[i], "Stopped at a failed step")
	ctrl.LoggerFrom(ctx).Info("Step failed", "step", StepNames[i], "reason", err.Error())
	if serr := e.save(ctx, st, i); serr != nil {
		return Progress{}, serr
	}
	return Progress{Done: true}, &FailedError{Step: i, Msg: err.Error()}
}

func (e *Engine) save(ctx context.Context, st *State, i int) error {
	if err := e.Store.Save(ctx, st); err != nil {
		return fmt.Errorf("save migration state: %w", err)
	}
	if i >= 0 && e.Report != nil {
		e.Report(st.Status.Steps[i])
	}
	return nil
}

func (e *Engine) stamp() *metav1.Time {
	t := metav1.NewTime(e.now().Truncate(time.Second))
	return &t
}

func setCondition(s *migrationv1alpha1.CloudProviderMigrationStatus, typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg})
}

// Run advances the migration until it finishes, waiting between verification polls.
func (e *Engine) Run(ctx context.Context) error {
	for {
		// Interrupted (Ctrl-C, a stopping controller): stop at this step boundary rather than
		// start a transition whose API calls would fail half-way.
		if err := ctx.Err(); err != nil {
			return err
		}
		pr, err := e.Advance(ctx)
		if err != nil {
			var fe *FailedError
			if errors.As(err, &fe) || errors.Is(err, ErrRollbackInProgress) {
				return err
			}
			// Transient (API errors): retry after a poll interval, bounded by ctx.
			ctrl.LoggerFrom(ctx).Info("Retrying after error", "error", err.Error())
			pr.Wait = e.poll()
		}
		if pr.Done {
			return nil
		}
		if pr.Wait > 0 {
			t := time.NewTimer(pr.Wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
}

// RetryFailed puts a migration stopped at a failed step back to running that step (fix
// forward, once the cause is fixed): the step's precondition, action and verification run
// again, its timeout counted from now. It reports the step and whether it was reset (false:
// the migration has not failed at a step).
func (e *Engine) RetryFailed(ctx context.Context) (int, bool, error) {
	st, err := e.Store.Load(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("load migration state: %w", err)
	}
	i := int(st.Status.CurrentStep)
	if st.Status.Phase != migrationv1alpha1.PhaseFailed || i < 0 || i >= len(st.Status.Steps) ||
		st.Status.Steps[i].Phase != migrationv1alpha1.StepFailed {
		return i, false, nil
	}
	s := &st.Status.Steps[i]
	s.Message, s.FinishedAt = "", nil
	if s.StartedAt == nil {
		s.Phase = migrationv1alpha1.StepPending // failed in its precondition
	} else {
		s.Phase, s.StartedAt = migrationv1alpha1.StepRunning, e.stamp()
	}
	st.Status.Phase = migrationv1alpha1.PhaseRunning
	meta.RemoveStatusCondition(&st.Status.Conditions, ConditionFailed)
	setCondition(&st.Status, ConditionProgressing, true, StepNames[i], fmt.Sprintf("Retrying step %d %s after a failure", i, StepNames[i]))
	ctrl.LoggerFrom(ctx).Info("Retrying failed step", "step", StepNames[i])
	return i, true, e.save(ctx, st, i)
}
