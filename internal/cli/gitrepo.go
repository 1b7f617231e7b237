package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/text"
)

func newGitRepoCommand(k *kubeOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "gitrepo", Short: "Deploy from Git: every matching path of a repository becomes a Bundle",
		Example: "  drover gitrepo add web --repo https://github.com/org/deploy --branch main --paths 'apps/*' --selector env=prod --wait\n  drover gitrepo list"}
	cmd.AddCommand(newGitRepoAddCommand(k), newGitRepoListCommand(k), newGitRepoGetCommand(k), newGitRepoDeleteCommand(k),
		newGitRepoRedeployCommand(k),
		newPauseCommand(k, gitRepoPause, true, fleetv1alpha1.DefaultWorkspaceNamespace,
			"Pause GitRepos: stop fetching, so no new commit is deployed until resumed", "  drover gitrepo pause apps"),
		newPauseCommand(k, gitRepoPause, false, fleetv1alpha1.DefaultWorkspaceNamespace,
			"Resume GitRepos: fetch and deploy the newest commit again", "  drover gitrepo resume apps"))
	return cmd
}

func newGitRepoAddCommand(k *kubeOptions) *cobra.Command {
	var (
		repo, branch, tag, revision, secret string
		helmSecret, helmRepoURLRegex        string
		paths, clusters, selectors          []string
		interval                            time.Duration
		paused                              bool
		w                                   waitFlags
	)
	cmd := &cobra.Command{
		Use:   "add NAME --repo URL [--branch B | --tag T | --revision SHA] [--paths GLOB,...] (--cluster NAME | --selector LABELS)...",
		Short: "Create a GitRepo: drover polls the repository and deploys every matching path as a Bundle",
		Example: `  drover gitrepo add web --repo https://github.com/org/deploy --branch main --paths 'apps/*' --cluster edge-1 --wait
  drover gitrepo add infra --repo git@github.com:org/infra.git --secret git-ssh --selector env=prod
  drover gitrepo add pinned --repo https://git.example.com/deploy.git --revision 4f2c1a9 --paths base,overlays/prod --cluster prod-1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set := 0
			for _, v := range []string{branch, tag, revision} {
				if v != "" {
					set++
				}
			}
			if set > 1 {
				return usageErrorf("set at most one of --branch, --tag and --revision")
			}
			gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: args[0]},
				Spec: fleetv1alpha1.GitRepoSpec{Repo: repo, Branch: branch, Tag: tag, Revision: revision, Paths: paths,
					ClientSecretName: secret, HelmSecretName: helmSecret, HelmRepoURLRegex: helmRepoURLRegex, Paused: paused}}
			if interval != 0 {
				gr.Spec.PollingInterval = &metav1.Duration{Duration: interval}
			}
			for _, c := range clusters {
				gr.Spec.Targets = append(gr.Spec.Targets, fleetv1alpha1.BundleTarget{ClusterName: c})
			}
			for _, s := range selectors {
				sel, err := metav1.ParseToLabelSelector(s)
				if err != nil {
					return usageErrorf("--selector %q: %w", s, err)
				}
				gr.Spec.Targets = append(gr.Spec.Targets, fleetv1alpha1.BundleTarget{ClusterSelector: sel})
			}
			if len(gr.Spec.Targets) == 0 {
				return usageErrorf("no targets: pass --cluster NAME or --selector LABELS")
			}
			c, ns, err := bundleClient(k)
			if err != nil {
				return err
			}
			gr.Namespace = ns
			if err := c.Create(cmd.Context(), gr); err != nil {
				if apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("gitrepo %q already exists in namespace %s (delete it first, or edit it with kubectl)", gr.Name, ns)
				}
				return fmt.Errorf("create gitrepo %s/%s: %w", ns, gr.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "gitrepo.fleet.drover.io/%s created\n", gr.Name)
			if !w.wait {
				return nil
			}
			return waitUntil(cmd.Context(), cmd.OutOrStdout(), "gitrepo "+ns+"/"+gr.Name, w.timeout, gitRepoReady(c, client.ObjectKeyFromObject(gr)))
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repo", "", "repository URL (https://, http://, ssh://, git:// or git@host:path)")
	f.StringVar(&branch, "branch", "", "branch to follow (default: the repository's default branch)")
	f.StringVar(&tag, "tag", "", "tag to deploy")
	f.StringVar(&revision, "revision", "", "commit SHA to deploy")
	f.StringSliceVar(&paths, "paths", nil, "directory globs that become Bundles, comma-separated (default: the repository root)")
	f.StringVar(&secret, "secret", "", "Secret with the credentials (username/password or token for HTTP(S); ssh-privatekey and known_hosts for SSH)")
	f.StringVar(&helmSecret, "helm-secret", "", "Secret with the credentials for the Helm repositories and OCI registries the paths name (username/password or token, cacerts)")
	f.StringVar(&helmRepoURLRegex, "helm-repo-url-regex", "", "send --helm-secret's credentials only to repository/registry URLs matching this regular expression")
	f.DurationVar(&interval, "polling-interval", 0, "how often to look for new commits (default 15s)")
	f.BoolVar(&paused, "paused", false, "create it paused (nothing is fetched)")
	f.StringArrayVar(&clusters, "cluster", nil, "target the Cluster of this name (repeatable)")
	f.StringArrayVar(&selectors, "selector", nil, "target Clusters matching this label selector (repeatable)")
	w.add(cmd, "the commit is deployed and every Bundle is ready", 10*time.Minute)
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

// gitRepoReady waits for a GitRepo to be Ready; a Synced failure other than a pending fetch
// ends the wait (exit 3) with its reason and message.
func gitRepoReady(c client.Client, key client.ObjectKey) func(context.Context) (state, error) {
	return func(ctx context.Context) (state, error) {
		gr := &fleetv1alpha1.GitRepo{}
		if err := c.Get(ctx, key, gr); err != nil {
			return state{}, err
		}
		synced := meta.FindStatusCondition(gr.Status.Conditions, fleetv1alpha1.ConditionSynced)
		if synced == nil || synced.ObservedGeneration != gr.Generation {
			return state{line: "waiting for the first fetch"}, nil
		}
		if synced.Status != metav1.ConditionTrue {
			return state{line: synced.Reason, failed: fmt.Errorf("%s: %s", synced.Reason, synced.Message)}, nil
		}
		ready := meta.FindStatusCondition(gr.Status.Conditions, fleetv1alpha1.ConditionReady)
		st := state{
			line: fmt.Sprintf("commit %s: %d/%d Bundles ready", shortCommit(gr.Status.Commit), gr.Status.Summary.ReadyBundles, gr.Status.Summary.Bundles),
			done: ready != nil && ready.Status == metav1.ConditionTrue,
		}
		for _, b := range gr.Status.Bundles {
			if b.Message != "" {
				st.line += " (" + b.Path + ": " + oneLine(b.Message) + ")"
				break
			}
		}
		if !st.done {
			// A Bundle that failed to apply on clusters with nothing in progress ends the wait.
			var bundles fleetv1alpha1.BundleList
			if err := c.List(ctx, &bundles, client.InNamespace(gr.Namespace), client.MatchingLabels{fleetv1alpha1.GitRepoNameLabel: gr.Name}); err != nil {
				return state{}, err
			}
			for i := range bundles.Items {
				if err := applyFailed(&bundles.Items[i]); err != nil {
					st.failed = fmt.Errorf("bundle %s: %w", bundles.Items[i].Name, err)
					break
				}
			}
		}
		if st.done {
			// Ready with a path on no cluster: targets matching nothing, or its fleet.yaml
			// (overrideTargets, doNotDeploy, paused) leaves it nowhere; not a deployment.
			for _, b := range gr.Status.Bundles {
				if b.DesiredReady == 0 {
					st.done, st.failed = false, fmt.Errorf("path %s (Bundle %s) targets no registered cluster: check the GitRepo's targets, and the path's fleet.yaml "+
						"(overrideTargets, doNotDeploy, paused) if it has one (drover gitrepo get %s -n %s)", b.Path, b.Name, gr.Name, gr.Namespace)
					break
				}
			}
		}
		return st, nil
	}
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return orDash(c)
}

func newGitRepoListCommand(k *kubeOptions) *cobra.Command {
	return newListCommand(k, "List GitRepos with the commit deployed and how many of their Bundles are ready", `  drover gitrepo list
  drover gitrepo list -A -o wide`, fleetv1alpha1.DefaultWorkspaceNamespace, func(l *fleetv1alpha1.GitRepoList) []*fleetv1alpha1.GitRepo { return ptrs(l.Items) },
		gitRepoColumns, "gitrepos")
}

func newGitRepoGetCommand(k *kubeOptions) *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:   "get NAME...",
		Short: "Show GitRepos: the commit deployed, its Bundles' readiness and any fetch or render error",
		Example: `  drover gitrepo get web
  drover gitrepo get web -o yaml`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.GitRepoList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			c, ns, err := bundleClient(k)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return getAll(cmd, c, ns, args, &o, func() *fleetv1alpha1.GitRepo { return &fleetv1alpha1.GitRepo{} }, gitRepoColumns, "gitrepo", "drover gitrepo list",
				func(gr *fleetv1alpha1.GitRepo) error {
					return withEvents(cmd.Context(), out, c, gr, func() error { return printGitRepo(out, gr) })()
				})
		},
	}
	o.addFlag(cmd, "details")
	return cmd
}

func newGitRepoDeleteCommand(k *kubeOptions) *cobra.Command {
	var d deleteFlags
	cmd := &cobra.Command{
		Use:               "delete NAME...",
		Short:             "Delete GitRepos and their Bundles (whose resources are removed downstream unless they keep them)",
		Example:           "  drover gitrepo delete web --wait",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.GitRepoList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := bundleClient(k)
			if err != nil {
				return err
			}
			return deleteAll(cmd, c, ns, args, "gitrepo", "gitrepo.fleet.drover.io", func() client.Object { return &fleetv1alpha1.GitRepo{} }, d, client.PropagationPolicy(metav1.DeletePropagationForeground))
		},
	}
	d.add(cmd, "the gitrepos and their Bundles are gone", 5*time.Minute)
	return cmd
}

// gitRepoColumns are the table columns of GitRepos.
var gitRepoColumns = []column[*fleetv1alpha1.GitRepo]{
	{name: "NAME", cell: func(g *fleetv1alpha1.GitRepo) string { return g.Name }},
	{name: "REPO", cell: func(g *fleetv1alpha1.GitRepo) string { return text.RedactRepo(g.Spec.Repo) }},
	{name: "COMMIT", cell: func(g *fleetv1alpha1.GitRepo) string { return shortCommit(g.Status.Commit) }},
	{name: "BUNDLES", cell: func(g *fleetv1alpha1.GitRepo) string {
		return fmt.Sprintf("%d/%d", g.Status.Summary.ReadyBundles, g.Status.Summary.Bundles)
	}},
	{name: "STATUS", cell: func(g *fleetv1alpha1.GitRepo) string {
		if c := meta.FindStatusCondition(g.Status.Conditions, fleetv1alpha1.ConditionReady); c != nil {
			if c.Status == metav1.ConditionTrue {
				return "Ready"
			}
			return c.Reason
		}
		return "-"
	}},
	{name: "REVISION", wide: true, cell: func(g *fleetv1alpha1.GitRepo) string { return g.Spec.Follows() }},
	{name: "PATHS", wide: true, cell: func(g *fleetv1alpha1.GitRepo) string { return orDash(strings.Join(g.Spec.Paths, ",")) }},
}

func printGitRepo(w io.Writer, gr *fleetv1alpha1.GitRepo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "GitRepo:\t%s/%s\n", gr.Namespace, gr.Name)
	fmt.Fprintf(tw, "Repo:\t%s\n", text.RedactRepo(gr.Spec.Repo))
	fmt.Fprintf(tw, "Revision:\t%s\n", gr.Spec.Follows())
	fmt.Fprintf(tw, "Paths:\t%s\n", orDash(strings.Join(gr.Spec.Paths, ", ")))
	fmt.Fprintf(tw, "Commit:\t%s\n", orDash(gr.Status.Commit))
	fmt.Fprintf(tw, "Bundles:\t%d/%d ready\n", gr.Status.Summary.ReadyBundles, gr.Status.Summary.Bundles)
	for _, c := range gr.Status.Conditions {
		fmt.Fprintf(tw, "Condition %s:\t%s (%s) %s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(gr.Status.Bundles) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPATH\tBUNDLE\tCLUSTERS READY\tMESSAGE")
	for _, b := range gr.Status.Bundles {
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\n", b.Path, b.Name, b.Ready, b.DesiredReady, orDash(oneLine(b.Message)))
	}
	return tw.Flush()
}
