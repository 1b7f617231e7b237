package migration

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration/checks"
)

// Reasons a rollback is refused (stable: tools match on them).
const (
	// ReasonInTreeProviderRemoved: the cluster is configured for Kubernetes 1.27 or later,
	// which has no in-tree AWS provider to return to.
	ReasonInTreeProviderRemoved = "InTreeProviderRemoved"
	// ReasonNothingToRollBack: the preflight has not recorded the original configuration.
	ReasonNothingToRollBack = "NothingToRollBack"
)

// RollbackRefusedError is a rollback that cannot run in the cluster's current state: retrying
// does not change that, only a human decision (fix forward, restore a snapshot) does.
type RollbackRefusedError struct {
	// Reason is ReasonInTreeProviderRemoved or ReasonNothingToRollBack.
	Reason string
	Msg    string
}

func (e *RollbackRefusedError) Error() string { return e.Msg }

// CanRollback says whether the migration can still be rolled back: only while the configured
// version is below 1.27, where the in-tree provider still exists. A refusal is a
// *RollbackRefusedError; other errors (reading the state or the document) are transient.
func (e *Engine) CanRollback(ctx context.Context) error {
	st, err := e.Store.Load(ctx)
	if err != nil {
		return fmt.Errorf("load migration state: %w", err)
	}
	if st.Status.Facts.OriginalConfig == "" {
		return &RollbackRefusedError{Reason: ReasonNothingToRollBack, Msg: "nothing to roll back: the preflight has not recorded the original configuration"}
	}
	doc, err := e.Dist.Read(ctx)
	if err != nil {
		return err
	}
	info, err := e.Dist.Inspect(doc)
	if err != nil {
		return err
	}
	if m, err := Minor(info.KubernetesVersion); err != nil || m >= 27 {
		return &RollbackRefusedError{Reason: ReasonInTreeProviderRemoved, Msg: fmt.Sprintf("cannot roll back: the cluster is configured for Kubernetes %s, which has no in-tree AWS provider; fix forward, or restore the etcd snapshot taken before the migration", info.KubernetesVersion)}
	}
	return nil
}

// Rollback restores the original configuration document exactly, removes the CCM where it was
// installed outside the document, uncordons the nodes drover cordoned, and waits for the
// distribution to apply it. Re-running it after a crash is safe.
func (e *Engine) Rollback(ctx context.Context) error {
	if err := e.CanRollback(ctx); err != nil {
		return err
	}
	st, err := e.Store.Load(ctx)
	if err != nil {
		return fmt.Errorf("load migration state: %w", err)
	}
	log := ctrl.LoggerFrom(ctx)
	st.Status.Phase = migrationv1alpha1.PhaseRollingBack
	setCondition(&st.Status, ConditionProgressing, true, ReasonRolledBack, "Rolling back to the original configuration")
	if err := e.save(ctx, st, -1); err != nil {
		return err
	}
	log.Info("Restoring the original configuration")
	// The original replaces whatever is there now, edits made since the migration included.
	if err := retryOnConflict(func() error {
		if _, err := e.Dist.Read(ctx); err != nil {
			return err
		}
		return e.Dist.Write(ctx, []byte(st.Status.Facts.OriginalConfig))
	}); err != nil {
		return err
	}
	started := func(i int) bool { return st.Status.Steps[i].StartedAt != nil }
	if inst, ok := e.Dist.(CCMInstaller); ok && (started(StepInstallCCM) || started(StepSwitchProvider)) {
		log.Info("Uninstalling the CCM")
		if err := inst.UninstallCCM(ctx); err != nil {
			return err
		}
	}
	if started(StepCordon) {
		for _, n := range controlPlaneNames(st.Status.Facts, true) {
			if err := e.Checks.SetUnschedulable(ctx, n, false); err != nil {
				return err
			}
		}
	}
	deadline := e.now().Add(e.timeout())
	for {
		err := e.rollbackVerified(ctx, st)
		if err == nil {
			break
		}
		if checks.IsPermanent(err) || e.now().After(deadline) {
			return fmt.Errorf("rollback not verified: %w", err)
		}
		t := time.NewTimer(e.poll())
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	for i := range st.Status.Steps {
		if st.Status.Steps[i].StartedAt != nil {
			st.Status.Steps[i].Phase = migrationv1alpha1.StepRolledBack
		}
	}
	st.Status.Phase = migrationv1alpha1.PhaseRolledBack
	setCondition(&st.Status, ConditionProgressing, false, ReasonRolledBack, "Rolled back to the original configuration")
	setCondition(&st.Status, ConditionReady, false, ReasonRolledBack, "Rolled back: the cluster uses the in-tree aws provider")
	return e.save(ctx, st, -1)
}

func (e *Engine) rollbackVerified(ctx context.Context, st *State) error {
	if err := e.applied(ctx); err != nil {
		return err
	}
	if e.Dist.MirrorPods() {
		if err := e.Checks.ControllerManagerFlags(ctx, nil, []string{flagExternal, flagLM}); err != nil {
			return err
		}
	}
	return e.Checks.Cordoned(ctx, controlPlaneNames(st.Status.Facts, true), false)
}
