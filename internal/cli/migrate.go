package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/checks"
	"github.com/droverhq/drover/internal/migration/controller"
	"github.com/droverhq/drover/internal/migration/rke1"
	"github.com/droverhq/drover/internal/migration/rke2"
	"github.com/droverhq/drover/internal/server"
)

type migrateOptions struct {
	k                                                                        *kubeOptions
	distribution, configFile, cluster, mgmtKubeconfig, kubeconfig, stateFile string
	applyCommand, helmCommand, uninstallCommand                              string
	leaderMigration, keepCCMLeaderMigration, imdsHostname                    bool
	kubernetesVersion, imageTag, chartVersion, namespace, kcmIdentity        string
	nodeSelector                                                             string
	stepTimeout, pollInterval, timeout                                       time.Duration
}

func newMigrateCommand(k *kubeOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "migrate", Short: "Migrate downstream clusters",
		Example: "  drover migrate cloud-provider plan --distribution rke1 --config cluster.yml --downstream-kubeconfig kube_config_cluster.yml\n  drover migrate list -A"}
	cmd.AddCommand(newMigrateCloudProviderCommand(k), newMigrationListCommand(k), newMigrationGetCommand(k))
	return cmd
}

func newMigrateCloudProviderCommand(k *kubeOptions) *cobra.Command {
	o := &migrateOptions{k: k}
	cmd := &cobra.Command{
		Use:   "cloud-provider",
		Short: "Migrate an RKE2 or RKE1 cluster from the in-tree AWS provider to the AWS cloud controller manager",
		Long: `Migrate from the in-tree AWS cloud provider to the out-of-tree AWS CCM, step by step:
0 preflight, 1 leader migration on kube-controller-manager, 2 cordon the control plane,
3 install the CCM, 4 switch the provider (and optionally the version), 5 uncordon,
6 remove leader migration from the CCM.

plan changes nothing and prints every step with its configuration diff; apply runs the
steps, saving progress to --state after each so an interrupted apply resumes where it
stopped; rollback restores the original configuration while the version is below 1.27.`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.distribution, "distribution", "rke2", "rke2 or rke1")
	f.StringVar(&o.configFile, "config", "", "cluster.yml (rke1) or provisioning Cluster YAML file (rke2), edited in place")
	f.StringVar(&o.cluster, "cluster", "", "rke2: namespace/name of a live provisioning.cattle.io/v1 Cluster in the --kubeconfig cluster")
	f.StringVar(&o.mgmtKubeconfig, "management-kubeconfig", "", "kubeconfig of the cluster holding --cluster")
	_ = f.MarkDeprecated("management-kubeconfig", "use --kubeconfig (the management cluster in every drover command)")
	f.StringVar(&o.kubeconfig, "downstream-kubeconfig", "", "kubeconfig of the downstream cluster being migrated (required)")
	f.StringVar(&o.stateFile, "state", "", "progress file (default: <config>.migration-state.json, or ./<name>.migration-state.json)")
	f.StringVar(&o.applyCommand, "apply-command", "", "command applying --config; {file} is its path (default rke1: "+rke1.DefaultApplyCommand+", rke2: kubectl apply -f {file})")
	f.StringVar(&o.helmCommand, "helm-command", rke1.DefaultHelmCommand, "rke1: command installing the CCM chart; {values} is the values file")
	f.StringVar(&o.uninstallCommand, "helm-uninstall-command", rke1.DefaultUninstallCommand, "rke1: command removing the CCM chart (rollback)")
	f.BoolVar(&o.leaderMigration, "leader-migration", true, "hand over through leader migration (false: shorter path with control-plane downtime)")
	f.BoolVar(&o.keepCCMLeaderMigration, "keep-ccm-leader-migration", false, "skip step 6: leave --enable-leader-migration on the CCM")
	f.BoolVar(&o.imdsHostname, "use-instance-metadata-hostname", false, "rke1: set cloud_provider.useInstanceMetadataHostname in the switch")
	f.StringVar(&o.kubernetesVersion, "kubernetes-version", "", "upgrade to this version in the switch step (e.g. v1.27.16+rke2r1)")
	f.StringVar(&o.imageTag, "ccm-image-tag", "", "CCM image tag (default v1.<target minor>.0)")
	f.StringVar(&o.chartVersion, "ccm-chart-version", "", "aws-cloud-controller-manager chart version")
	f.StringVar(&o.namespace, "system-namespace", "kube-system", "downstream namespace of the control-plane pods, leases and CCM")
	f.StringVar(&o.kcmIdentity, "kcm-identity", checks.DefaultKCMIdentity, "user kube-controller-manager authenticates as")
	f.StringVar(&o.nodeSelector, "node-selector", "", "label selector limiting the downstream nodes and LoadBalancer Services checked (default: all)")
	f.DurationVar(&o.stepTimeout, "step-timeout", 10*time.Minute, "how long a step's verification may take")
	f.DurationVar(&o.pollInterval, "poll-interval", 2*time.Second, "how often a pending verification is re-checked")
	cmd.Example = `  drover migrate cloud-provider plan  --distribution rke1 --config cluster.yml --downstream-kubeconfig kube_config_cluster.yml
  drover migrate cloud-provider apply --distribution rke1 --config cluster.yml --downstream-kubeconfig kube_config_cluster.yml --timeout 2h
  drover migrate cloud-provider plan  --distribution rke2 --kubeconfig rancher.kubeconfig --cluster fleet-default/prod --downstream-kubeconfig prod.kubeconfig`

	applyCmd := &cobra.Command{Use: "apply", Short: "Run (or resume) the migration, printing each step's phase; exit 3 if a step fails or --timeout passes", Args: cobra.NoArgs,
		Example: "  drover migrate cloud-provider apply --distribution rke1 --config cluster.yml --downstream-kubeconfig kube_config_cluster.yml --timeout 2h",
		RunE:    func(cmd *cobra.Command, _ []string) error { return o.apply(cmd, cmd.OutOrStdout()) }}
	applyCmd.Flags().DurationVar(&o.timeout, "timeout", 0, "stop (resumably) and exit 3 when the migration has not finished after this long (0: no limit)")
	applyCmd.Flags().Bool("wait", true, "apply always waits for the migration (runs it); kept for symmetry with the other commands")
	cmd.AddCommand(
		&cobra.Command{Use: "plan", Short: "Run the preflight and print every step with its configuration diff (exit 4 if refused)", Args: cobra.NoArgs,
			Example: "  drover migrate cloud-provider plan --distribution rke1 --config cluster.yml --downstream-kubeconfig kube_config_cluster.yml",
			RunE:    func(cmd *cobra.Command, _ []string) error { return o.plan(cmd, cmd.OutOrStdout()) }},
		applyCmd,
		&cobra.Command{Use: "status", Short: "Print the migration's progress from the state file", Args: cobra.NoArgs,
			Example: "  drover migrate cloud-provider status --distribution rke1 --config cluster.yml --downstream-kubeconfig kube_config_cluster.yml",
			RunE:    func(cmd *cobra.Command, _ []string) error { return o.status(cmd, cmd.OutOrStdout()) }},
		&cobra.Command{Use: "rollback", Short: "Restore the original configuration (only below Kubernetes 1.27)", Args: cobra.NoArgs,
			Example: "  drover migrate cloud-provider rollback --distribution rke1 --config cluster.yml --downstream-kubeconfig kube_config_cluster.yml",
			RunE:    func(cmd *cobra.Command, _ []string) error { return o.rollback(cmd, cmd.OutOrStdout()) }},
	)
	return cmd
}

func (o *migrateOptions) spec() migrationv1alpha1.CloudProviderMigrationSpec {
	lm := o.leaderMigration
	return migrationv1alpha1.CloudProviderMigrationSpec{
		Distribution: migrationv1alpha1.Distribution(o.distribution), TargetProvider: migrationv1alpha1.TargetProviderExternalAWS,
		KubernetesVersion: o.kubernetesVersion, LeaderMigration: &lm,
		CCM: migrationv1alpha1.CCMSettings{ImageTag: o.imageTag, ChartVersion: o.chartVersion, KeepLeaderMigration: o.keepCCMLeaderMigration},
	}
}

func (o *migrateOptions) engine(ctx context.Context, out io.Writer) (*migration.Engine, error) {
	run := migration.RunnerFrom(ctx) // nil: run the commands as processes
	if o.kubeconfig == "" && (o.cluster == "" || o.mgmtKubeconfig != "") && *o.k.flags.KubeConfig != "" {
		// Before --downstream-kubeconfig, migrate's --kubeconfig named the downstream cluster
		// (and --management-kubeconfig the management one). Without --cluster there is no
		// management cluster, and with --management-kubeconfig the old meaning is plain: keep it.
		fmt.Fprintln(os.Stderr, "Warning: drover migrate --kubeconfig for the downstream cluster is deprecated: use --downstream-kubeconfig")
		o.kubeconfig = *o.k.flags.KubeConfig
		*o.k.flags.KubeConfig = o.mgmtKubeconfig
	}
	if o.kubeconfig == "" {
		return nil, usageErrorf("--downstream-kubeconfig (the cluster being migrated) is required; --kubeconfig names the management cluster")
	}
	down, err := clientsetFor(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	var dist migration.Distribution
	switch o.distribution {
	case "rke1":
		if o.configFile == "" {
			return nil, usageErrorf("rke1 needs --config <cluster.yml>")
		}
		c := rke1.New(o.configFile, o.applyCommand, run)
		c.HelmCommand, c.UninstallCommand, c.UseInstanceMetadataHostname = o.helmCommand, o.uninstallCommand, o.imdsHostname
		dist = c
	case "rke2":
		switch {
		case o.configFile != "":
			apply := o.applyCommand
			if apply == "" {
				apply = "kubectl apply -f {file}"
			}
			dist = &rke2.File{FileBackend: migration.FileBackend{Path: o.configFile, Command: apply, Run: run}}
		case o.cluster != "":
			ns, name, ok := strings.Cut(o.cluster, "/")
			if !ok {
				return nil, usageErrorf("--cluster takes namespace/name")
			}
			if o.mgmtKubeconfig != "" && *o.k.flags.KubeConfig == "" {
				*o.k.flags.KubeConfig = o.mgmtKubeconfig // deprecated alias
			}
			t, err := o.k.resolve()
			if err != nil {
				return nil, err
			}
			c, err := client.New(t.Config, client.Options{Scheme: server.Scheme()})
			if err != nil {
				return nil, fmt.Errorf("management cluster client: %w", err)
			}
			dist = &rke2.Object{Client: c, Key: types.NamespacedName{Namespace: ns, Name: name}}
		default:
			return nil, usageErrorf("rke2 needs --config <file> or --cluster namespace/name")
		}
	default:
		return nil, usageErrorf("--distribution must be rke2 or rke1, not %q", o.distribution)
	}
	state := o.stateFile
	if state == "" {
		if o.configFile != "" {
			state = o.configFile + ".migration-state.json"
		} else {
			state = strings.ReplaceAll(o.cluster, "/", "_") + ".migration-state.json"
		}
	}
	return &migration.Engine{
		Dist: dist, Store: migration.FileStore{Path: filepath.Clean(state)}, StepTimeout: o.stepTimeout, PollInterval: o.pollInterval,
		Checks: &checks.Checker{Client: down, Namespace: o.namespace, Selector: o.nodeSelector, KCMIdentity: o.kcmIdentity},
		Report: func(s migrationv1alpha1.StepStatus) {
			fmt.Fprintf(out, "step %d %-26s %s", s.Index, s.Name, s.Phase)
			if s.Message != "" {
				fmt.Fprintf(out, ": %s", oneLine(s.Message))
			}
			fmt.Fprintln(out)
		},
	}, nil
}

func clientsetFor(path string) (kubernetes.Interface, error) {
	cfg, err := downstreamConfig(path)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func (o *migrateOptions) plan(cmd *cobra.Command, out io.Writer) error {
	eng, err := o.engine(cmd.Context(), out)
	if err != nil {
		return err
	}
	p, err := eng.Plan(cmd.Context(), o.spec())
	if err != nil {
		return err
	}
	p.Print(out)
	if len(p.Refusals) > 0 {
		return withCode(ExitRefused, errors.New("the cluster is not eligible for migration (see above)"))
	}
	return nil
}

func (o *migrateOptions) apply(cmd *cobra.Command, out io.Writer) error {
	ctx := cmd.Context()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	err := o.applyCtx(ctx, cmd, out)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return withCode(ExitNotReady, fmt.Errorf("timed out after %s (progress is saved: apply again to resume): %w", o.timeout, err))
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return fmt.Errorf("interrupted; the saved state is consistent: run apply again to resume: %w", err)
	}
	return err
}

// lock takes the state file's lock for one apply or rollback.
func lockState(eng *migration.Engine) (func(), error) {
	fs, ok := eng.Store.(migration.FileStore)
	if !ok {
		return func() {}, nil
	}
	unlock, err := fs.Lock()
	if errors.Is(err, migration.ErrLocked) {
		return nil, fmt.Errorf("%w: wait for it to finish, or stop it, and run this again", err)
	}
	return unlock, err
}

// warnSettings warns about each migration flag given on a resumed apply whose value differs
// from the saved one: the saved settings win, since the recorded progress was made with them.
func (o *migrateOptions) warnSettings(cmd *cobra.Command, saved migrationv1alpha1.CloudProviderMigrationSpec) {
	lm := saved.LeaderMigration == nil || *saved.LeaderMigration
	for _, f := range []struct{ flag, given, saved string }{
		{"kubernetes-version", o.kubernetesVersion, saved.KubernetesVersion},
		{"leader-migration", fmt.Sprint(o.leaderMigration), fmt.Sprint(lm)},
		{"keep-ccm-leader-migration", fmt.Sprint(o.keepCCMLeaderMigration), fmt.Sprint(saved.CCM.KeepLeaderMigration)},
		{"ccm-image-tag", o.imageTag, saved.CCM.ImageTag},
		{"ccm-chart-version", o.chartVersion, saved.CCM.ChartVersion},
	} {
		if fl := cmd.Flags().Lookup(f.flag); fl != nil && fl.Changed && f.given != f.saved {
			fmt.Fprintf(cmd.ErrOrStderr(), "Warning: --%s=%s is ignored: resuming with the saved value %q (a migration's settings cannot change once started)\n", f.flag, f.given, f.saved)
		}
	}
}

func (o *migrateOptions) applyCtx(ctx context.Context, cmd *cobra.Command, out io.Writer) error {
	eng, err := o.engine(ctx, out)
	if err != nil {
		return err
	}
	unlock, err := lockState(eng)
	if err != nil {
		return err
	}
	defer unlock()
	saved, err := eng.Store.Load(ctx)
	switch {
	case errors.Is(err, migration.ErrNoState):
		p, err := eng.Plan(ctx, o.spec())
		if err != nil {
			return err
		}
		if len(p.Refusals) > 0 {
			p.Print(out)
			return withCode(ExitRefused, errors.New("the cluster is not eligible for migration (see above)"))
		}
	case err != nil:
		return err
	default:
		fmt.Fprintln(out, "Resuming from", eng.Store.(migration.FileStore).Path)
		o.warnSettings(cmd, saved.Spec)
	}
	if err := eng.Init(ctx, o.spec()); err != nil {
		return err
	}
	if saved != nil && saved.Status.Phase == migrationv1alpha1.PhaseRollingBack {
		return withCode(ExitNotReady, migration.ErrRollbackInProgress)
	}
	if saved != nil && saved.Status.Phase == migrationv1alpha1.PhaseFailed {
		i := int(saved.Status.CurrentStep)
		if i >= 0 && i < len(saved.Status.Steps) {
			fmt.Fprintf(out, "Retrying step %d %s, which failed: %s\n", i, saved.Status.Steps[i].Name, oneLine(saved.Status.Steps[i].Message))
		}
		if _, _, err := eng.RetryFailed(ctx); err != nil {
			return err
		}
	}
	st, err := eng.Store.Load(ctx)
	if err != nil {
		return err
	}
	progress := newStepProgress(out, st.Status.Steps)
	report := eng.Report
	eng.Report = func(s migrationv1alpha1.StepStatus) { report(s); progress.report(s) }
	if err := eng.Run(ctx); err != nil {
		if ctx.Err() != nil {
			return err
		}
		var fe *migration.FailedError
		if errors.As(err, &fe) {
			err = fmt.Errorf("%w\nFix the cause and run apply again to retry step %d %s, or roll back (drover migrate cloud-provider rollback, while the configured version is below 1.27)", err, fe.Step, migration.StepNames[fe.Step])
		}
		return withCode(ExitNotReady, err)
	}
	if st, err = eng.Store.Load(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "Migration %s\n", st.Status.Phase)
	if st.Status.Phase == migrationv1alpha1.PhaseFailed {
		return withCode(ExitNotReady, errors.New("the migration failed (see the steps above)"))
	}
	return nil
}

func (o *migrateOptions) status(cmd *cobra.Command, out io.Writer) error {
	eng, err := o.engine(cmd.Context(), out)
	if err != nil {
		return err
	}
	st, err := eng.Store.Load(cmd.Context())
	if errors.Is(err, migration.ErrNoState) {
		fmt.Fprintf(out, "No migration started (no state file %s)\n", eng.Store.(migration.FileStore).Path)
		if hint := o.serverMigrationHint(cmd.Context(), eng); hint != "" {
			fmt.Fprintln(out, hint)
		}
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Phase %s, step %d\n", st.Status.Phase, st.Status.CurrentStep)
	for _, s := range st.Status.Steps {
		eng.Report(s)
	}
	return nil
}

// serverMigrationHint says which CloudProviderMigrations (run by drover server) target the
// --cluster of an rke2 migration, and how to roll them back ("" if none, or not knowable).
func (o *migrateOptions) serverMigrationHint(ctx context.Context, eng *migration.Engine) string {
	obj, ok := eng.Dist.(*rke2.Object)
	if !ok {
		return ""
	}
	var list migrationv1alpha1.CloudProviderMigrationList
	if err := obj.Client.List(ctx, &list); err != nil {
		return ""
	}
	var b strings.Builder
	for _, m := range list.Items {
		if r := m.Spec.ClusterRef; r != nil && r.Namespace == obj.Key.Namespace && r.Name == obj.Key.Name {
			fmt.Fprintf(&b, "CloudProviderMigration %s/%s targets cluster %s: it is run by drover server, not from a state file. Follow it with `drover migrate get -n %s %s`; roll it back with `kubectl -n %s annotate cloudprovidermigration %s %s=true`.\n",
				m.Namespace, m.Name, obj.Key, m.Namespace, m.Name, m.Namespace, m.Name, controller.RollbackAnnotation)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (o *migrateOptions) rollback(cmd *cobra.Command, out io.Writer) error {
	ctx := cmd.Context()
	eng, err := o.engine(ctx, out)
	if err != nil {
		return err
	}
	unlock, err := lockState(eng)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := eng.Store.Load(ctx); errors.Is(err, migration.ErrNoState) {
		msg := fmt.Sprintf("nothing to roll back: no migration state file %s (pass --state if apply used another one)", eng.Store.(migration.FileStore).Path)
		if hint := o.serverMigrationHint(ctx, eng); hint != "" {
			msg += "\n" + hint
		}
		return errors.New(msg)
	}
	eng.Waiting = func(msg string) { fmt.Fprintf(out, "Rollback: waiting: %s\n", oneLine(msg)) }
	if err := eng.Rollback(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "Rolled back: the original configuration is restored")
	return nil
}

func newMigrationListCommand(k *kubeOptions) *cobra.Command {
	return newListCommand(k, "List CloudProviderMigrations run by drover server", "  drover migrate list -A\n  drover migrate list -o yaml", "default", func(l *migrationv1alpha1.CloudProviderMigrationList) []*migrationv1alpha1.CloudProviderMigration {
		return ptrs(l.Items)
	},
		migrationColumns, "migrations")
}

func newMigrationGetCommand(k *kubeOptions) *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use: "get NAME...", Short: "Show CloudProviderMigrations and their steps", Args: cobra.MinimumNArgs(1),
		Example:           "  drover migrate get prod\n  drover migrate get prod -o jsonpath='{.status.phase}'",
		ValidArgsFunction: completeNames(k, "default", &migrationv1alpha1.CloudProviderMigrationList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			c, ns, err := k.client("default")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return getAll(cmd, c, ns, args, &o, func() *migrationv1alpha1.CloudProviderMigration { return &migrationv1alpha1.CloudProviderMigration{} },
				migrationColumns, "migration", "drover migrate list", func(m *migrationv1alpha1.CloudProviderMigration) error {
					return withEvents(cmd.Context(), out, c, m, func() error {
						fmt.Fprintf(out, "Migration %s/%s (%s): phase %s, step %d\n", m.Namespace, m.Name, m.Spec.Distribution, orDash(string(m.Status.Phase)), m.Status.CurrentStep)
						for _, s := range m.Status.Steps {
							fmt.Fprintf(out, "step %d %-26s %s", s.Index, s.Name, s.Phase)
							if s.Message != "" {
								fmt.Fprintf(out, ": %s", oneLine(s.Message))
							}
							fmt.Fprintln(out)
						}
						if m.Status.Phase == migrationv1alpha1.PhaseFailed && slices.ContainsFunc(m.Status.Steps, func(s migrationv1alpha1.StepStatus) bool { return s.Phase == migrationv1alpha1.StepFailed }) {
							// How to act on it, not only that the Events mention it.
							fmt.Fprintf(out, "Next: fix the cause, then retry the failed step: kubectl -n %s annotate cloudprovidermigration %s %s=$(date +%%s) --overwrite\n"+
								"      or roll back (below Kubernetes 1.27): kubectl -n %s annotate cloudprovidermigration %s %s=true\n",
								m.Namespace, m.Name, controller.RetryAnnotation, m.Namespace, m.Name, controller.RollbackAnnotation)
						}
						return nil
					})()
				})
		},
	}
	o.addFlag(cmd, "details")
	return cmd
}

var migrationColumns = []column[*migrationv1alpha1.CloudProviderMigration]{
	{name: "NAME", cell: func(m *migrationv1alpha1.CloudProviderMigration) string { return m.Name }},
	{name: "DISTRIBUTION", cell: func(m *migrationv1alpha1.CloudProviderMigration) string { return string(m.Spec.Distribution) }},
	{name: "PHASE", cell: func(m *migrationv1alpha1.CloudProviderMigration) string { return orDash(string(m.Status.Phase)) }},
	{name: "STEPS DONE", cell: func(m *migrationv1alpha1.CloudProviderMigration) string {
		return fmt.Sprintf("%d/%d", m.StepsDone(), len(m.Status.Steps))
	}},
	{name: "VERSION", wide: true, cell: func(m *migrationv1alpha1.CloudProviderMigration) string { return orDash(m.Spec.KubernetesVersion) }},
}

// stepProgress draws a progress bar of the migration's steps while apply runs: once at the
// start and again whenever a step finishes (succeeds or is skipped).
type stepProgress struct {
	out    io.Writer
	phases []migrationv1alpha1.StepPhase
	done   int
}

func newStepProgress(out io.Writer, steps []migrationv1alpha1.StepStatus) *stepProgress {
	p := &stepProgress{out: out, phases: make([]migrationv1alpha1.StepPhase, len(steps))}
	for i, s := range steps {
		p.phases[i] = s.Phase
	}
	p.done = p.count()
	p.draw()
	return p
}

func (p *stepProgress) count() int {
	n := 0
	for _, ph := range p.phases {
		if ph == migrationv1alpha1.StepSucceeded || ph == migrationv1alpha1.StepSkipped {
			n++
		}
	}
	return n
}

func (p *stepProgress) report(s migrationv1alpha1.StepStatus) {
	if i := int(s.Index); i >= 0 && i < len(p.phases) {
		p.phases[i] = s.Phase
	}
	if n := p.count(); n != p.done {
		p.done = n
		p.draw()
	}
}

func (p *stepProgress) draw() {
	fmt.Fprintf(p.out, "%s %d/%d steps done\n", progressBar(p.done, len(p.phases), 30), p.done, len(p.phases))
}

// progressBar is "[#####.........]": done of total in width characters.
func progressBar(done, total, width int) string {
	n := width
	if total > 0 {
		n = done * width / total
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}
