package migration

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/util/retry"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration/checks"
)

// Preflight returns every reason the cluster cannot be migrated now (empty: eligible).
func (e *Engine) Preflight(ctx context.Context, spec migrationv1alpha1.CloudProviderMigrationSpec, doc []byte) ([]string, error) {
	info, err := e.Dist.Inspect(doc)
	if err != nil {
		return nil, err
	}
	var out []string
	switch {
	case info.Provider == "external" || info.Provider == "external-aws":
		out = append(out, fmt.Sprintf("the cluster already uses the external cloud provider (%q): nothing to migrate", info.Provider))
	case !info.InTree():
		out = append(out, fmt.Sprintf("the cloud provider is %q, not the in-tree \"aws\": this migration only moves in-tree AWS to the AWS CCM", info.Provider))
	}
	minor, err := Minor(info.KubernetesVersion)
	if err != nil {
		out = append(out, fmt.Sprintf("cannot read the configured Kubernetes version: %v", err))
	} else if info.InTree() && minor >= 27 {
		out = append(out, fmt.Sprintf("Kubernetes %s is configured with the in-tree aws provider, which was removed in 1.27: set the version back to the one the nodes run (< 1.27) and migrate with kubernetesVersion %s", info.KubernetesVersion, info.KubernetesVersion))
	}
	if spec.KubernetesVersion != "" {
		if t, err := Minor(spec.KubernetesVersion); err != nil {
			out = append(out, fmt.Sprintf("target version: %v", err))
		} else if minor > 0 && t < minor {
			out = append(out, fmt.Sprintf("target version %s is older than the current %s: downgrades are not supported", spec.KubernetesVersion, info.KubernetesVersion))
		}
	}
	if info.InTree() && e.Dist.MirrorPods() {
		// The downstream kubeconfig must be this cluster's: its kube-controller-manager runs
		// what the configuration says (the rollback's check of the same flags).
		if err := e.Checks.ControllerManagerFlags(ctx, []string{"--cloud-provider=aws"}, []string{flagExternal}); err != nil {
			var pr *checks.Problem
			if !errors.As(err, &pr) {
				return nil, err
			}
			out = append(out, fmt.Sprintf("the configuration has the in-tree \"aws\" provider but the downstream cluster's kube-controller-manager does not agree: %s; is --downstream-kubeconfig another cluster's (one already migrated)?", pr.Msg))
		}
	}
	nodes, err := e.Checks.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, checks.Eligibility(nodes, func(n string) bool { return e.Dist.KeepsNodeName(doc, n) })...)
	if dc, ok := e.Dist.(DocChecker); ok {
		out = append(out, dc.CheckDoc(doc)...)
	}
	cp := 0
	for _, f := range checks.NodeFacts(nodes, e.Dist.ControlPlaneLabel()) {
		if f.ControlPlane {
			cp++
		}
	}
	if len(nodes) > 0 && cp == 0 {
		out = append(out, fmt.Sprintf("no node has the control-plane label %s: the CCM runs on control-plane nodes; label them or check the distribution", e.Dist.ControlPlaneLabel()))
	}
	if spec.LeaderMigration == nil || *spec.LeaderMigration {
		if err := e.Checks.LeasePermission(ctx); err != nil {
			if !checks.IsPermanent(err) {
				return nil, err
			}
			out = append(out, err.Error())
		}
	}
	return out, nil
}

func (e *Engine) precondition(ctx context.Context, st *State, i int, p Params) error {
	switch i {
	case StepPreflight:
		doc, err := e.Dist.Read(ctx)
		if err != nil {
			return err
		}
		reasons, err := e.Preflight(ctx, st.Spec, doc)
		if err != nil {
			return err
		}
		if len(reasons) > 0 {
			return &checks.Problem{Permanent: true, Msg: "not eligible: " + strings.Join(reasons, "; ")}
		}
	case StepEnableLeaderMigration:
		return e.Checks.LeasePermission(ctx)
	}
	return nil
}

func (e *Engine) action(ctx context.Context, st *State, i int, p Params) error {
	inst, _ := e.Dist.(CCMInstaller)
	switch i {
	case StepPreflight:
		return e.recordFacts(ctx, st)
	case StepCordon, StepUncordon:
		for _, n := range st.Status.Facts.Nodes {
			if n.ControlPlane && !n.WasUnschedulable {
				if err := e.Checks.SetUnschedulable(ctx, n.Name, i == StepCordon); err != nil {
					return err
				}
			}
		}
		return nil
	}
	edit := p
	if i == StepSwitchProvider {
		// The version is written only once the switch is verified (bumpVersion): until then
		// the configuration stays below 1.27, where a failed switch can still be rolled back.
		edit.KubernetesVersion = ""
	}
	if err := e.editAndWrite(ctx, i, edit); err != nil {
		return err
	}
	if inst == nil {
		return nil
	}
	switch {
	case i == StepInstallCCM, i == StepSwitchProvider && !p.LeaderMigration:
		return inst.InstallCCM(ctx, CCMValues(e.Dist.ControlPlaneLabel(), p, p.LeaderMigration), p)
	case i == StepDisableCCMLeaderMigration:
		return inst.InstallCCM(ctx, CCMValues(e.Dist.ControlPlaneLabel(), p, false), p)
	}
	return nil
}

// editAndWrite reads the document, makes step i's edit and writes it; if someone else changed
// the document in between, it reads it again and re-applies the edit, keeping their change.
func (e *Engine) editAndWrite(ctx context.Context, i int, p Params) error {
	return retryOnConflict(func() error {
		doc, err := e.Dist.Read(ctx)
		if err != nil {
			return err
		}
		next, err := e.Dist.Edit(doc, i, p)
		if err != nil {
			return fmt.Errorf("edit configuration: %w", err)
		}
		return e.Dist.Write(ctx, next)
	})
}

func retryOnConflict(fn func() error) error {
	return retry.OnError(retry.DefaultRetry, func(err error) bool { return errors.Is(err, ErrConflict) }, fn)
}

// bumpVersion writes the target Kubernetes version after a verified provider switch and
// reports whether it wrote it (false: already configured, or no target).
func (e *Engine) bumpVersion(ctx context.Context, p Params) (bool, error) {
	if p.KubernetesVersion == "" {
		return false, nil
	}
	doc, err := e.Dist.Read(ctx)
	if err != nil {
		return false, err
	}
	info, err := e.Dist.Inspect(doc)
	if err != nil {
		return false, err
	}
	if info.KubernetesVersion == p.KubernetesVersion {
		return false, nil
	}
	// The switch's edit again, now with the version: idempotent, so only the version changes.
	return true, e.editAndWrite(ctx, StepSwitchProvider, p)
}

func (e *Engine) recordFacts(ctx context.Context, st *State) error {
	doc, err := e.Dist.Read(ctx)
	if err != nil {
		return err
	}
	info, err := e.Dist.Inspect(doc)
	if err != nil {
		return err
	}
	nodes, err := e.Checks.Nodes(ctx)
	if err != nil {
		return err
	}
	lbs, err := e.Checks.LoadBalancers(ctx)
	if err != nil {
		return err
	}
	st.Status.Facts = migrationv1alpha1.Facts{
		KubernetesVersion: info.KubernetesVersion,
		Nodes:             checks.NodeFacts(nodes, e.Dist.ControlPlaneLabel()),
		LoadBalancers:     lbs,
		OriginalConfig:    string(doc),
	}
	return nil
}

func (e *Engine) applied(ctx context.Context) error {
	ok, msg, err := e.Dist.Applied(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return &checks.Problem{Msg: msg}
	}
	return nil
}

func controlPlaneNames(f migrationv1alpha1.Facts, onlyOurs bool) []string {
	var out []string
	for _, n := range f.Nodes {
		if n.ControlPlane && (!onlyOurs || !n.WasUnschedulable) {
			out = append(out, n.Name)
		}
	}
	return out
}

const (
	flagLM       = "--enable-leader-migration"
	flagExternal = "--cloud-provider=external"
)

func (e *Engine) verify(ctx context.Context, st *State, i int, p Params) error {
	f := st.Status.Facts
	cps := int32(len(controlPlaneNames(f, false)))
	c := e.Checks
	var fns []func() error
	switch i {
	case StepPreflight:
		return nil
	case StepEnableLeaderMigration:
		fns = append(fns, func() error { return e.applied(ctx) })
		if e.Dist.MirrorPods() {
			fns = append(fns, func() error { return c.ControllerManagerFlags(ctx, []string{flagLM}, nil) })
		}
		fns = append(fns, func() error { return c.LeaseHeld(ctx, checks.MigrationLease, "kube-controller-manager") })
	case StepCordon:
		return c.Cordoned(ctx, controlPlaneNames(f, true), true)
	case StepInstallCCM:
		fns = append(fns,
			func() error { return e.applied(ctx) },
			func() error { return c.DaemonSetRolledOut(ctx, cps) },
			// The KCM must keep the migrated controllers until the switch.
			func() error { return c.LeaseHeld(ctx, checks.MigrationLease, "kube-controller-manager") })
	case StepSwitchProvider:
		fns = append(fns, func() error { return e.applied(ctx) })
		if e.Dist.MirrorPods() {
			fns = append(fns, func() error { return c.ControllerManagerFlags(ctx, []string{flagExternal}, []string{flagLM}) })
		}
		fns = append(fns,
			func() error { return c.NodesKept(ctx, f.Nodes) },
			func() error { return c.DaemonSetRolledOut(ctx, cps) },
			func() error { return c.LeaseHeld(ctx, checks.CCMLease, "aws-cloud-controller-manager") })
		if p.LeaderMigration {
			fns = append(fns, func() error { return c.LeaseHeld(ctx, checks.MigrationLease, "aws-cloud-controller-manager") })
		}
		fns = append(fns, func() error { return c.LoadBalancersUnchanged(ctx, f.LoadBalancers) })
		if started := st.Status.Steps[i].StartedAt; started != nil {
			fns = append(fns, func() error { return c.NoLoadBalancerSyncFailures(ctx, f.LoadBalancers, started.Time) })
		}
	case StepUncordon:
		return c.Cordoned(ctx, controlPlaneNames(f, true), false)
	case StepDisableCCMLeaderMigration:
		fns = append(fns,
			func() error { return e.applied(ctx) },
			func() error { return c.DaemonSetArgs(ctx, flagLM, false) },
			func() error { return c.DaemonSetRolledOut(ctx, cps) },
			func() error { return c.LeaseHeld(ctx, checks.CCMLease, "aws-cloud-controller-manager") })
	}
	for _, fn := range fns {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}
