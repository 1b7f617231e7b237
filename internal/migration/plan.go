package migration

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

// PlannedStep is one step of a plan.
type PlannedStep struct {
	Index int
	Name  string
	// Skipped says why the step will not run ("" if it runs).
	Skipped string
	// Action says what the step does.
	Action string
	// Diff is the unified diff of the configuration document ("" if unchanged).
	Diff string
	// Verifies lists what is checked before the next step.
	Verifies []string
}

// Plan is a dry run: the preflight result and every step with its exact configuration change.
type Plan struct {
	Distribution migrationv1alpha1.Distribution
	// Refusals are the preflight's reasons not to migrate; apply refuses when any is present.
	Refusals []string
	Steps    []PlannedStep
	// Final is the configuration document after the last step.
	Final []byte
}

var (
	stepActions = [NumSteps]string{
		"Record node names, ProviderIDs, LoadBalancer ingresses and the original configuration",
		"Enable leader migration on kube-controller-manager (provider stays aws)",
		"Cordon the control-plane nodes",
		"Install the aws-cloud-controller-manager chart with --enable-leader-migration=true",
		"Switch to the external cloud provider and remove kube-controller-manager's leader migration",
		"Uncordon the control-plane nodes cordoned in step 2",
		"Remove --enable-leader-migration from the CCM",
	}
	stepVerifies = [NumSteps][]string{
		{"Kubernetes < 1.27 with in-tree aws", "every node Ready with an aws:///<zone>/<instance-id> ProviderID", "node names will not change", "kube-controller-manager may update Lease cloud-provider-extraction-migration"},
		{"the distribution applied the configuration", "kube-controller-manager runs with --enable-leader-migration", "Lease cloud-provider-extraction-migration is held and renewed"},
		{"every control-plane node is unschedulable"},
		{"the distribution applied the configuration", "DaemonSet aws-cloud-controller-manager rolled out on every control-plane node", "kube-controller-manager still holds the migration Lease"},
		{"the distribution applied the configuration", "kube-controller-manager runs with --cloud-provider=external and without --enable-leader-migration", "every node kept its name and ProviderID and has no uninitialized taint", "the CCM holds Lease cloud-controller-manager (and the migration Lease)", "LoadBalancer ingresses are unchanged", "no SyncLoadBalancerFailed event on a LoadBalancer Service since the switch"},
		{"the control-plane nodes are schedulable"},
		{"the DaemonSet runs without --enable-leader-migration and rolled out", "the CCM holds Lease cloud-controller-manager"},
	}
)

// StepAction says what step i does (the dashboard shows it beside the step's recorded result).
func StepAction(i int) string { return stepActions[i] }

// StepVerifies lists what step i's verification checks before the next step.
func StepVerifies(i int) []string { return slices.Clone(stepVerifies[i]) }

// Plan runs the preflight and computes every step's change without changing anything.
func (e *Engine) Plan(ctx context.Context, spec migrationv1alpha1.CloudProviderMigrationSpec) (*Plan, error) {
	doc, err := e.Dist.Read(ctx)
	if err != nil {
		return nil, err
	}
	refusals, err := e.Preflight(ctx, spec, doc)
	if err != nil {
		return nil, err
	}
	info, err := e.Dist.Inspect(doc)
	if err != nil {
		return nil, err
	}
	p := ParamsFor(spec, info.KubernetesVersion)
	inst, _ := e.Dist.(CCMInstaller)
	plan := &Plan{Distribution: e.Dist.Kind(), Refusals: refusals}
	for i := range NumSteps {
		ps := PlannedStep{Index: i, Name: StepNames[i], Action: stepActions[i], Verifies: stepVerifies[i], Skipped: skipReason(i, p)}
		if !e.Dist.MirrorPods() { // RKE1's kube-controller-manager is a container the API cannot see
			ps.Verifies = slices.DeleteFunc(slices.Clone(ps.Verifies), func(v string) bool { return strings.HasPrefix(v, "kube-controller-manager runs with") })
		}
		if i == StepSwitchProvider && p.KubernetesVersion != "" {
			ps.Action += ", then, once the switch is verified, set Kubernetes " + p.KubernetesVersion
		}
		if i == StepSwitchProvider && !p.LeaderMigration {
			ps.Action += ", and install the aws-cloud-controller-manager chart (downtime until it runs)"
		}
		if ps.Skipped == "" {
			next, err := e.Dist.Edit(doc, i, p)
			if err != nil {
				return nil, fmt.Errorf("edit for step %d: %w", i, err)
			}
			if ps.Diff, err = Diff(doc, next); err != nil {
				return nil, err
			}
			doc = next
			if inst != nil && (i == StepInstallCCM || i == StepDisableCCMLeaderMigration || (i == StepSwitchProvider && !p.LeaderMigration)) {
				lm := i == StepInstallCCM
				ps.Action += fmt.Sprintf("\n  run: %s\n  values:\n%s", inst.InstallCommand(p), indent(string(CCMValues(e.Dist.ControlPlaneLabel(), p, lm)), "    "))
			}
		}
		plan.Steps = append(plan.Steps, ps)
	}
	plan.Final = doc
	return plan, nil
}

// Diff is a unified diff of two documents ("" if equal).
func Diff(a, b []byte) (string, error) {
	if string(a) == string(b) {
		return "", nil
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
		FromFile: "before", ToFile: "after", Context: 3,
	})
	if err != nil {
		return "", fmt.Errorf("diff: %w", err)
	}
	return d, nil
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pre + lines[i]
	}
	return strings.Join(lines, "\n")
}

// Print writes the plan for people.
func (p *Plan) Print(w io.Writer) {
	fmt.Fprintf(w, "Cloud-provider migration plan (%s): in-tree aws -> external AWS CCM\n\n", p.Distribution)
	if len(p.Refusals) > 0 {
		fmt.Fprintln(w, "REFUSED: the cluster is not eligible:")
		for _, r := range p.Refusals {
			fmt.Fprintf(w, "  - %s\n", r)
		}
		fmt.Fprintln(w)
	}
	for _, s := range p.Steps {
		fmt.Fprintf(w, "Step %d %s\n", s.Index, s.Name)
		if s.Skipped != "" {
			fmt.Fprintf(w, "  skipped: %s\n\n", s.Skipped)
			continue
		}
		fmt.Fprintf(w, "  action: %s\n", s.Action)
		if s.Diff != "" {
			fmt.Fprintf(w, "  configuration diff:\n%s\n", indent(s.Diff, "    "))
		}
		fmt.Fprintln(w, "  verifies:")
		for _, v := range s.Verifies {
			fmt.Fprintf(w, "    - %s\n", v)
		}
		fmt.Fprintln(w)
	}
}
