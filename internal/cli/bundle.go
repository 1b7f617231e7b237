package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

func newBundleCommand(k *kubeOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "bundle", Short: "Deploy manifests to the clusters of a workspace",
		Example: "  drover bundle apply -f ./web --selector env=prod --wait\n  drover bundle list\n  drover bundle diff web --cluster edge-1 -f ./web"}
	cmd.AddCommand(newBundleApplyCommand(k), newBundleStatusCommand(k), newBundleListCommand(k), newBundleDeleteCommand(k),
		newBundleDiffCommand(k), newBundleRedeployCommand(k),
		newPauseCommand(k, bundlePause, true, fleetv1alpha1.DefaultWorkspaceNamespace,
			"Pause Bundles' rollouts: no cluster is moved to a newer version until resumed", "  drover bundle pause web"),
		newPauseCommand(k, bundlePause, false, fleetv1alpha1.DefaultWorkspaceNamespace,
			"Resume Bundles' rollouts", "  drover bundle resume web"))
	return cmd
}

// parseManifests decodes the YAML or JSON documents of data, read from what (a path), skipping
// empty ones.
func parseManifests(what string, data []byte) ([]runtime.RawExtension, error) {
	var out []runtime.RawExtension
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 0; ; i++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s document %d: %w", what, i+1, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s document %d: apiVersion, kind and metadata.name are required", what, i+1)
		}
		b, err := u.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out = append(out, runtime.RawExtension{Raw: b})
	}
	return out, nil
}

// bundleClient is k.client with the default workspace as the default namespace.
func bundleClient(k *kubeOptions) (client.Client, string, error) {
	return k.client(fleetv1alpha1.DefaultWorkspaceNamespace)
}

func newBundleApplyCommand(k *kubeOptions) *cobra.Command {
	var (
		dir, name, defaultNS, maxUnavailable   string
		dryRun                                 string
		clusters, selectors, excludes          []string
		force, correctDrift, keep, paused, dry bool
		overwrite                              bool
		w                                      waitFlags
	)
	cmd := &cobra.Command{
		Use:   "apply -f DIR|FILE|- --name NAME (--cluster NAME | --selector LABELS)...",
		Short: "Create or update a Bundle from a directory, a file or stdin of YAML/JSON manifests",
		Example: `  drover bundle apply -f ./web --cluster edge-1 --wait
  drover bundle apply -f ./monitoring --name monitoring --selector env=prod --exclude tier=dev --max-unavailable 25%
  drover bundle apply -f ./web --cluster edge-1 --dry-run | kubectl apply -f -
  kustomize build overlays/prod | drover bundle apply -f - --name web --selector env=prod`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := clientDryRun(dryRun, "Bundle")
			if err != nil {
				return err
			}
			dry = d
			if len(name) > maxBundleName {
				return usageErrorf("--name %q: at most %d characters (a Bundle's name labels its BundleDeployments)", name, maxBundleName)
			}
			resources, isDir, err := readManifests(dir, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if name == "" {
				switch {
				case dir == "-":
					return usageErrorf("--name is required with -f - (stdin): there is no directory to name the Bundle after")
				case isDir:
					name = filepath.Base(filepath.Clean(dir))
				default:
					name = strings.TrimSuffix(filepath.Base(dir), filepath.Ext(dir))
				}
				if len(name) > maxBundleName {
					return usageErrorf("the Bundle would be named after %q, longer than %d characters: name it with --name", name, maxBundleName)
				}
			}
			b := &fleetv1alpha1.Bundle{TypeMeta: metav1.TypeMeta{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "Bundle"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: fleetv1alpha1.BundleSpec{Resources: resources, DefaultNamespace: defaultNS, ForceConflicts: force,
					CorrectDrift: correctDrift, KeepResources: keep, Rollout: fleetv1alpha1.BundleRollout{Paused: paused}}}
			if maxUnavailable != "" {
				v := intstr.Parse(maxUnavailable)
				b.Spec.Rollout.MaxUnavailable = &v
			}
			for _, c := range clusters {
				b.Spec.Targets = append(b.Spec.Targets, fleetv1alpha1.BundleTarget{ClusterName: c})
			}
			for _, s := range selectors {
				sel, err := metav1.ParseToLabelSelector(s)
				if err != nil {
					return usageErrorf("--selector %q: %w", s, err)
				}
				b.Spec.Targets = append(b.Spec.Targets, fleetv1alpha1.BundleTarget{ClusterSelector: sel})
			}
			for _, s := range excludes {
				sel, err := metav1.ParseToLabelSelector(s)
				if err != nil {
					return usageErrorf("--exclude %q: %w", s, err)
				}
				b.Spec.Exclude = append(b.Spec.Exclude, fleetv1alpha1.BundleTarget{ClusterSelector: sel})
			}
			if len(b.Spec.Targets) == 0 {
				return usageErrorf("no targets: pass --cluster NAME or --selector LABELS")
			}
			if dry {
				// What apply would create, in the namespace it would use: piped to kubectl
				// apply -f -, it does what apply does. A status is the controller's to write.
				if b.Namespace, err = k.namespace(fleetv1alpha1.DefaultWorkspaceNamespace); err != nil {
					return err
				}
				return printManifest(cmd.OutOrStdout(), b)
			}
			c, ns, err := bundleClient(k)
			if err != nil {
				return err
			}
			b.Namespace = ns
			cur := &fleetv1alpha1.Bundle{}
			err = c.Get(cmd.Context(), client.ObjectKeyFromObject(b), cur)
			switch {
			case apierrors.IsNotFound(err):
				if err := c.Create(cmd.Context(), b); err != nil {
					return fmt.Errorf("create bundle: %w", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "bundle %s/%s created (%s)\n", ns, name, plural(len(resources), "resource"))
			case err != nil:
				return err
			default:
				// A GitRepo writes its Bundles from Git: what apply writes lasts until its next
				// apply, so the change belongs in Git.
				if repo := gitRepoOwner(cur); repo != "" {
					if !overwrite {
						return fmt.Errorf("bundle %s/%s belongs to GitRepo %s, whose next apply would undo this: change the Git repository instead (see `drover gitrepo get %s -n %s`), or pass --force to overwrite it anyway",
							ns, name, repo, repo, ns)
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "Warning: bundle %s/%s belongs to GitRepo %s: its next apply sets it back to what Git says\n", ns, name, repo)
				}
				// A paused rollout stays paused unless --paused says otherwise: re-applying is how
				// the fix for a halted rollout arrives, and resuming is its own decision.
				stillPaused := cur.Spec.Rollout.Paused && !cmd.Flags().Changed("paused")
				if stillPaused {
					b.Spec.Rollout.Paused = true
				}
				// A redeploy asked for (drover bundle redeploy) is not undone by applying again.
				b.Spec.ForceSyncGeneration = cur.Spec.ForceSyncGeneration
				cur.Spec = b.Spec
				if err := c.Update(cmd.Context(), cur); err != nil {
					return fmt.Errorf("update bundle: %w", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "bundle %s/%s updated (%s)\n", ns, name, plural(len(resources), "resource"))
				if stillPaused {
					fmt.Fprintf(cmd.ErrOrStderr(), "Note: the rollout stays paused: clusters keep the version they run until `drover bundle resume %s -n %s` (or apply with --paused=false)\n", name, ns)
				}
			}
			if !w.wait {
				return nil
			}
			return waitUntil(cmd.Context(), cmd.OutOrStdout(), "bundle "+ns+"/"+name, w.timeout, bundleReady(c, client.ObjectKeyFromObject(b)))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&dir, "file", "f", "", "directory of YAML/JSON manifest files, one such file, or - for stdin (multi-document YAML allowed)")
	f.StringVar(&name, "name", "", "bundle name (default: the directory's name, or the file's without its extension; required with -f -)")
	f.StringArrayVar(&clusters, "cluster", nil, "target the Cluster of this name (repeatable)")
	f.StringArrayVar(&selectors, "selector", nil, "target Clusters matching this label selector, e.g. env=prod,tier in (a,b) (repeatable)")
	f.StringArrayVar(&excludes, "exclude", nil, "exclude Clusters matching this label selector (repeatable)")
	f.StringVar(&defaultNS, "default-namespace", "", "namespace of namespaced manifests without one (default: default)")
	f.BoolVar(&force, "force-conflicts", false, "take over fields other field managers own downstream")
	f.BoolVar(&correctDrift, "correct-drift", false, "re-apply resources changed downstream")
	f.BoolVar(&keep, "keep-resources", false, "leave resources downstream when a cluster stops being targeted")
	f.BoolVar(&paused, "paused", false, "do not update clusters that already have the bundle (an update keeps a paused rollout paused unless --paused=false)")
	f.BoolVar(&overwrite, "force", false, "update a Bundle its GitRepo owns (the GitRepo sets it back on its next apply)")
	f.StringVar(&maxUnavailable, "max-unavailable", "", "clusters (number or percentage) that may be updating at once")
	f.StringVar(&dryRun, "dry-run", "none", "client: print the Bundle instead of applying it (kubectl's values; --dry-run alone is client)")
	f.Lookup("dry-run").NoOptDefVal = "client"
	w.add(cmd, "every targeted cluster is ready", 10*time.Minute)
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

// readManifests reads -f path: a directory (see ReadManifestDir), one file of manifests, or
// stdin for "-". isDir says which, for the Bundle's default name.
func readManifests(path string, stdin io.Reader) (resources []runtime.RawExtension, isDir bool, err error) {
	if path == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, false, fmt.Errorf("-f -: read stdin: %w", err)
		}
		resources, err := parseManifests("-f - (stdin)", data)
		if err == nil && len(resources) == 0 {
			err = errors.New("-f - (stdin): no manifests: pipe YAML or JSON manifests in")
		}
		return resources, false, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, false, fmt.Errorf("-f %s: %w: pass a directory or file of manifests, or - for stdin", path, err)
	}
	if info.IsDir() {
		resources, err := ReadManifestDir(path)
		return resources, true, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("-f %s: %w", path, err)
	}
	resources, err = parseManifests(path, data)
	if err == nil && len(resources) == 0 {
		err = fmt.Errorf("-f %s: no manifests in the file", path)
	}
	return resources, false, err
}

// ReadManifestDir reads the *.yaml, *.yml and *.json files of dir, in name order, as manifests.
func ReadManifestDir(dir string) ([]runtime.RawExtension, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	sort.Strings(files)
	var out []runtime.RawExtension
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		docs, err := parseManifests(path, data)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no manifests in %s", dir)
	}
	return out, nil
}

func newBundleStatusCommand(k *kubeOptions) *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use: "status NAME...",
		// Every other kind's command is get: a kubectl user types that first.
		Aliases: []string{"get"},
		Short:   "Show where Bundles are deployed and which clusters are not ready",
		Example: `  drover bundle status web
  drover bundle status web -o yaml
  drover bundle status web -o jsonpath='{.status.summary.ready}'`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.BundleList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			c, ns, err := bundleClient(k)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return getAll(cmd, c, ns, args, &o, func() *fleetv1alpha1.Bundle { return &fleetv1alpha1.Bundle{} }, bundleColumns, "bundle", "drover bundle list",
				func(b *fleetv1alpha1.Bundle) error {
					return withEvents(cmd.Context(), out, c, b, func() error { return printBundleStatus(out, b) })()
				})
		},
	}
	o.addFlag(cmd, "details")
	return cmd
}

func newBundleListCommand(k *kubeOptions) *cobra.Command {
	return newListCommand(k, "List Bundles with how many of their clusters are ready", `  drover bundle list
  drover bundle list -A -o wide`, fleetv1alpha1.DefaultWorkspaceNamespace, func(l *fleetv1alpha1.BundleList) []*fleetv1alpha1.Bundle { return ptrs(l.Items) },
		bundleColumns, "bundles")
}

func newBundleDeleteCommand(k *kubeOptions) *cobra.Command {
	var d deleteFlags
	cmd := &cobra.Command{
		Use:               "delete NAME...",
		Short:             "Delete Bundles (their resources are removed downstream unless --keep-resources was set)",
		Example:           "  drover bundle delete web --wait",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.BundleList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := bundleClient(k)
			if err != nil {
				return err
			}
			return deleteAll(cmd, c, ns, args, "bundle", "bundle.fleet.drover.io", func() client.Object { return &fleetv1alpha1.Bundle{} }, d)
		},
	}
	d.add(cmd, "the bundles are gone", 5*time.Minute)
	return cmd
}

// bundleColumns are the table columns of Bundles.
var bundleColumns = []column[*fleetv1alpha1.Bundle]{
	{name: "NAME", cell: func(b *fleetv1alpha1.Bundle) string { return b.Name }},
	{name: "READY", cell: func(b *fleetv1alpha1.Bundle) string {
		return fmt.Sprintf("%d/%d", b.Status.Summary.Ready, b.Status.Summary.DesiredReady)
	}},
	{name: "PENDING", cell: func(b *fleetv1alpha1.Bundle) string { return fmt.Sprint(b.Status.Summary.Pending) }},
	{name: "NOT READY", cell: func(b *fleetv1alpha1.Bundle) string { return fmt.Sprint(b.Status.Summary.NotReady) }},
	{name: "MODIFIED", cell: func(b *fleetv1alpha1.Bundle) string { return fmt.Sprint(b.Status.Summary.Modified) }},
	{name: "ERRORED", cell: func(b *fleetv1alpha1.Bundle) string { return fmt.Sprint(b.Status.Summary.ErrApplied) }},
	{name: "RESOURCES", cell: func(b *fleetv1alpha1.Bundle) string { return fmt.Sprint(len(b.Spec.Resources)) }},
	{name: "STATUS", cell: bundleStatus},
	{name: "TARGETS", wide: true, cell: bundleTargets},
	{name: "DEPLOYMENT ID", wide: true, cell: func(b *fleetv1alpha1.Bundle) string { return orDash(b.Status.DeploymentID) }},
}

// bundleStatus is Ready, Paused (a paused rollout holds clusters at their version) or the
// Ready condition's reason, as gitrepo list's STATUS.
func bundleStatus(b *fleetv1alpha1.Bundle) string {
	c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady)
	switch {
	case b.Spec.Rollout.Paused:
		return "Paused"
	case c == nil:
		return "-"
	case c.Status == metav1.ConditionTrue:
		return "Ready"
	}
	return c.Reason
}

func bundleTargets(b *fleetv1alpha1.Bundle) string {
	var ts []string
	for _, t := range b.Spec.Targets {
		switch {
		case t.ClusterName != "":
			ts = append(ts, t.ClusterName)
		case t.ClusterSelector != nil && len(t.ClusterSelector.MatchLabels)+len(t.ClusterSelector.MatchExpressions) == 0:
			ts = append(ts, "all clusters") // {} matches every cluster (FormatLabelSelector says <none>)
		case t.ClusterSelector != nil:
			ts = append(ts, metav1.FormatLabelSelector(t.ClusterSelector))
		}
	}
	return orDash(strings.Join(ts, ","))
}

// maxBundleName is the longest Bundle name the API server accepts (the CRD's rule).
const maxBundleName = 63

func printBundleStatus(w io.Writer, b *fleetv1alpha1.Bundle) error {
	s := b.Status.Summary
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Bundle:\t%s/%s\n", b.Namespace, b.Name)
	fmt.Fprintf(tw, "Content:\t%s\n", b.Status.Content)
	fmt.Fprintf(tw, "Deployment ID:\t%s\n", b.Status.DeploymentID)
	fmt.Fprintf(tw, "Clusters:\t%d targeted, %d ready, %d not ready, %d pending, %d modified, %d errored, %d out of date\n",
		s.DesiredReady, s.Ready, s.NotReady, s.Pending, s.Modified, s.ErrApplied, s.OutOfDate)
	if b.Spec.Rollout.Paused {
		fmt.Fprintf(tw, "Rollout:	paused: clusters keep the version they run (drover bundle resume %s -n %s)\n", b.Name, b.Namespace)
	}
	if s.DesiredReady == 0 && b.Status.ObservedGeneration == b.Generation {
		if repo := b.Labels[fleetv1alpha1.GitRepoNameLabel]; repo != "" {
			fmt.Fprintf(tw, "Targets:	no registered cluster matches: check GitRepo %s's targets and this path's fleet.yaml (drover gitrepo get %s -n %s)\n", repo, repo, b.Namespace)
		} else {
			fmt.Fprintf(tw, "Targets:	no registered cluster matches: check them against `drover fleet list -n %s -o wide`\n", b.Namespace)
		}
	}
	for _, c := range b.Status.Conditions {
		fmt.Fprintf(tw, "Condition %s:\t%s (%s) %s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.NonReadyClusters) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nCLUSTER\tSTATE\tMESSAGE")
		for _, c := range s.NonReadyClusters {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.State, oneLine(c.Message))
		}
		return tw.Flush()
	}
	return nil
}

// clientDryRun reads a --dry-run value as kubectl does: none/false, or client/true (what would be
// created is printed); there is no server-side dry run.
func clientDryRun(v, kind string) (bool, error) {
	switch v {
	case "none", "false":
		return false, nil
	case "client", "true":
		return true, nil
	}
	return false, usageErrorf("--dry-run=%s: drover prints the %s with --dry-run=client (or --dry-run); there is no server-side dry run", v, kind)
}

// printManifest writes obj as the YAML manifest to create it (kubectl create --dry-run=client
// -o yaml): no status, no creationTimestamp; piped to kubectl apply -f -, it does what the
// command would have done.
func printManifest(w io.Writer, obj runtime.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	out, err := yaml.Marshal(u)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
