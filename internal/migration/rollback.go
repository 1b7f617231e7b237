package migration

import (
	"context"
	"errors"
	"fmt"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	ctrl "sigs.k8s.io/controller-runtime"
	sigsyaml "sigs.k8s.io/yaml"

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

// undo is the document rollback writes over cur. When cur is what drover's own edits made of the
// original (nobody else changed it), that is the original byte for byte. Otherwise it is cur
// with drover's edits undone and nothing else: the edits the started steps made, replayed on the
// original, give a JSON merge patch back to the original that touches only the fields drover
// changed, so a change someone else made meanwhile (a machine pool scaled, an unrelated
// setting) is kept instead of being reverted with them.
func (e *Engine) undo(st *State, cur []byte) (doc []byte, exact bool, err error) {
	orig := []byte(st.Status.Facts.OriginalConfig)
	p := ParamsFor(st.Spec, st.Status.Facts.KubernetesVersion)
	ours := orig
	for i, s := range st.Status.Steps {
		if s.StartedAt == nil || s.Phase == migrationv1alpha1.StepSkipped || i == StepPreflight || i == StepCordon || i == StepUncordon {
			continue
		}
		edit := p
		if i == StepSwitchProvider && s.Phase != migrationv1alpha1.StepSucceeded {
			edit.KubernetesVersion = "" // written only after a verified switch (bumpVersion)
		}
		if ours, err = e.Dist.Edit(ours, i, edit); err != nil {
			return nil, false, fmt.Errorf("replay step %d's edit: %w", i, err)
		}
	}
	origJSON, err1 := sigsyaml.YAMLToJSON(orig)
	oursJSON, err2 := sigsyaml.YAMLToJSON(ours)
	curJSON, err3 := sigsyaml.YAMLToJSON(cur)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, false, fmt.Errorf("read configuration documents: %w", err)
	}
	if jsonpatch.Equal(curJSON, oursJSON) {
		return orig, true, nil
	}
	back, err := jsonpatch.CreateMergePatch(oursJSON, origJSON)
	if err != nil {
		return nil, false, fmt.Errorf("compute the undo of drover's edits: %w", err)
	}
	merged, err := jsonpatch.MergePatch(curJSON, back)
	if err != nil {
		return nil, false, fmt.Errorf("undo drover's edits: %w", err)
	}
	if doc, err = sigsyaml.JSONToYAML(merged); err != nil {
		return nil, false, fmt.Errorf("encode configuration: %w", err)
	}
	return doc, false, nil
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
	if err := retryOnConflict(func() error {
		cur, err := e.Dist.Read(ctx)
		if err != nil {
			return err
		}
		doc, exact, err := e.undo(st, cur)
		if err != nil {
			return err
		}
		if !exact {
			log.Info("The configuration was also changed by others during the migration: undoing drover's edits only, keeping theirs")
		}
		return e.Dist.Write(ctx, doc)
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
	log.Info("Waiting for the original configuration to be applied", "timeout", e.timeout().String())
	var lastMsg string
	var lastAt time.Time
	for {
		err := e.rollbackVerified(ctx, st)
		if err == nil {
			break
		}
		if checks.IsPermanent(err) || e.now().After(deadline) {
			return fmt.Errorf("rollback not verified after %s: %w", e.timeout(), err)
		}
		if msg := err.Error(); msg != lastMsg || e.now().Sub(lastAt) >= e.waitingEvery() {
			lastMsg, lastAt = msg, e.now()
			log.Info("Rollback waiting", "for", msg)
			if e.Waiting != nil {
				e.Waiting(msg)
			}
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

func (e *Engine) waitingEvery() time.Duration {
	if e.WaitingEvery > 0 {
		return e.WaitingEvery
	}
	return 15 * time.Second
}
