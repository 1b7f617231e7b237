package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/deployer"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/helmchart"
	"github.com/droverhq/drover/internal/text"
)

func newBundleDiffCommand(k *kubeOptions) *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff NAME --cluster CLUSTER (-f DIR | --revision REV)",
		Short: "Show what a local checkout or a Git revision would change in a Bundle on one cluster",
		Long: `Compare what one cluster runs for a Bundle (its BundleDeployment and content) with what a change
would deploy there, before it is pushed or merged: a unified diff per object, Secret values
redacted.

For a Bundle of a GitRepo, -f DIR is a local checkout of the Bundle's path (or of the
repository's root), rendered as the GitRepo controller renders a commit (plain manifests,
Kustomize, drover.yaml, Helm charts); --revision REV clones the GitRepo's repository at a branch,
tag or commit instead (only when it needs no credentials). For a Bundle made with
'drover bundle apply', -f DIR is the directory of manifests, read as apply reads it.

Exit status, as diff(1) and kubectl diff: 0 no differences, 1 differences, 2 usage error,
5 any other error (the comparison could not be made).`,
		Example: `  drover bundle diff web --cluster edge-1 -f ./web
  drover bundle diff apps-web --cluster prod-1 -f ~/src/deploy/apps/web
  drover bundle diff apps-web --cluster prod-1 --revision my-branch -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeOneName(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.BundleList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			names, err := objectNames(&fleetv1alpha1.Bundle{}, args)
			if err != nil {
				return err
			}
			err = runBundleDiff(cmd.Context(), cmd.OutOrStdout(), k, names[0], &o)
			if err != nil && !errors.Is(err, errDiffers) && ExitCode(err) == ExitError {
				err = withCode(ExitDiffFailed, err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cluster, "cluster", "", "the Cluster (drover fleet list) whose deployment to compare with")
	f.StringVarP(&o.dir, "file", "f", "", "directory to compare: a checkout of the Bundle's path (or of the repository's root), or the manifests of an applied Bundle")
	f.StringVar(&o.revision, "revision", "", "branch, tag or commit of the Bundle's GitRepo to compare (cloned without credentials)")
	f.StringVarP(&o.format, "output", "o", "", "output format: json (a summary of the changed, added and removed objects); default: the diff")
	_ = cmd.MarkFlagRequired("cluster")
	_ = cmd.RegisterFlagCompletionFunc("cluster", completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.ClusterList{}))
	return cmd
}

type diffOptions struct {
	cluster, dir, revision, format string
}

// objectRef names an object of a diff.
type objectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (r objectRef) String() string {
	if r.Namespace == "" {
		return r.APIVersion + " " + r.Kind + " " + r.Name
	}
	return r.APIVersion + " " + r.Kind + " " + r.Namespace + "/" + r.Name
}

// file is the object's name in the diff headers, as kubectl diff names it
// (group.version.Kind.namespace.name).
func (r objectRef) file() string {
	parts := []string{strings.ReplaceAll(r.APIVersion, "/", "."), r.Kind}
	if r.Namespace != "" {
		parts = append(parts, r.Namespace)
	}
	return strings.Join(append(parts, r.Name), ".")
}

// bundleDiff is the outcome of `drover bundle diff`, and its -o json.
type bundleDiff struct {
	Bundle   string `json:"bundle"`
	Cluster  string `json:"cluster"`
	Deployed string `json:"deployed"`
	Proposed string `json:"proposed"`
	// Commit is the commit compared with --revision.
	Commit    string      `json:"commit,omitempty"`
	Changed   []objectRef `json:"changed"`
	Added     []objectRef `json:"added"`
	Removed   []objectRef `json:"removed"`
	Unchanged int         `json:"unchanged"`
	// Options are the changed BundleDeployment options ("correctDrift: false -> true").
	// and the Helm chart ("helm chart: web 0.1.0 -> web 0.2.0").
	Options []string `json:"options,omitempty"`

	diffs []string
}

func (d *bundleDiff) differs() bool {
	return len(d.Changed)+len(d.Added)+len(d.Removed)+len(d.Options) > 0
}

// errDiffers ends a diff that found differences: exit 1, with nothing printed on stderr.
var errDiffers = &exitError{code: ExitDiffers, err: errors.New("differences found"), quiet: true}

func runBundleDiff(ctx context.Context, out io.Writer, k *kubeOptions, name string, o *diffOptions) error {
	if (o.dir == "") == (o.revision == "") {
		return usageErrorf("pass either -f DIR (a local checkout) or --revision REV")
	}
	if o.format != "" && o.format != "json" {
		return usageErrorf("-o %s: unknown output format (use json, or leave it out for the diff)", o.format)
	}
	c, ns, err := bundleClient(k)
	if err != nil {
		return err
	}
	b := &fleetv1alpha1.Bundle{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("bundle %q not found in namespace %s (see `drover bundle list -n %s`)", name, ns, ns)
		}
		return fmt.Errorf("get bundle %s/%s: %w", ns, name, err)
	}
	cl := &fleetv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.cluster}, cl); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster %q not found in namespace %s (see `drover fleet list -n %s`)", o.cluster, ns, ns)
		}
		return fmt.Errorf("get cluster %s/%s: %w", ns, o.cluster, err)
	}
	if ok, err := bundle.Targets(b, cl); err != nil {
		return fmt.Errorf("bundle %s/%s: %w", ns, name, err)
	} else if !ok {
		return fmt.Errorf("bundle %s does not target cluster %s (its targets: %s; see `drover bundle status %s -n %s` for the clusters it is on)",
			name, o.cluster, bundleTargets(b), name, ns)
	}

	d := &bundleDiff{Bundle: ns + "/" + name, Cluster: o.cluster}
	deployed, err := deployedContent(ctx, c, b, cl, d)
	if err != nil {
		return err
	}
	spec, err := proposedSpec(ctx, c, b, o, d)
	if err != nil {
		return err
	}
	var proposed *content
	switch {
	case spec != nil:
		// The cluster's own version: its first matching target customization's, if any.
		tc, err := bundle.Customization(&fleetv1alpha1.Bundle{Spec: *spec}, cl)
		if err != nil {
			return fmt.Errorf("bundle %s/%s: %w", ns, name, err)
		}
		manifests, helm, opts, values, err := bundle.ClusterVariant(spec, tc, cl)
		if err != nil {
			return fmt.Errorf("bundle %s/%s: Helm values for cluster %s: %w", ns, name, o.cluster, err)
		}
		proposed = &content{manifests: manifests, helm: withValues(helm, values), opts: opts}
		if deployed == nil {
			deployed = &content{opts: proposed.opts} // nothing deployed: every object is added
		} else {
			d.Options = optionChanges(deployed, proposed, b.Name)
		}
	case deployed != nil:
		proposed = &content{opts: deployed.opts} // the Bundle would be deleted: every object is removed
	default:
		deployed, proposed = &content{}, &content{}
	}
	before, err := deployed.objects(ctx, b.Name)
	if err != nil {
		return fmt.Errorf("deployed content: %w", err)
	}
	after, err := proposed.objects(ctx, b.Name)
	if err != nil {
		return fmt.Errorf("proposed content: %w", err)
	}
	if err := compare(c, d, before, deployed.opts, after, proposed.opts); err != nil {
		return err
	}
	if o.format == "json" {
		for _, l := range []*[]objectRef{&d.Changed, &d.Added, &d.Removed} {
			if *l == nil {
				*l = []objectRef{} // [] rather than null
			}
		}
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(out, "%s\n", b); err != nil {
			return err
		}
	} else if err := printBundleDiff(out, d); err != nil {
		return err
	}
	if d.differs() {
		return errDiffers
	}
	return nil
}

// content is what a BundleDeployment deploys: manifests, or a Helm chart, with its options.
type content struct {
	manifests []runtime.RawExtension
	helm      *fleetv1alpha1.BundleHelm
	opts      fleetv1alpha1.BundleDeploymentOptions
}

// objects decodes the manifests, and renders the Helm chart of BundleDeployment bd as the
// agent's Helm install would (release name and namespace as the agent chooses them) with
// `helm template`'s default capabilities, the same on both sides of the diff.
func (c *content) objects(ctx context.Context, bd string) ([]*unstructured.Unstructured, error) {
	out, err := decodeManifests(c.manifests)
	if err != nil || c.helm == nil {
		return out, err
	}
	release, ns := c.release(bd), c.opts.DefaultNamespace
	if ns == "" {
		ns = "default"
	}
	values := map[string]any{}
	if v := c.helm.Values; v != nil && len(v.Raw) > 0 {
		if err := json.Unmarshal(v.Raw, &values); err != nil {
			return nil, fmt.Errorf("helm values are not a JSON object: %w", err)
		}
	}
	manifest, err := helmchart.Render(ctx, c.helm.Chart, values, release, ns)
	if err != nil {
		msg := helmchart.Redact(err.Error(), values, deployer.Sensitive)
		if len(c.helm.ValuesFrom) > 0 {
			// The values the agent reads on the cluster (ConfigMaps, Secrets) are not known here.
			msg += " (rendered without helm.valuesFrom, which only the cluster's agent reads)"
		}
		return nil, fmt.Errorf("render the Helm chart as release %s/%s: %s", ns, release, msg)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode the manifest of Helm release %s/%s: %w", ns, release, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// release is the Helm release name the agent installs the chart as.
func (c *content) release(bd string) string {
	if c.helm.ReleaseName != "" {
		return c.helm.ReleaseName
	}
	return helmchart.ReleaseName(bd)
}

// chart describes the Helm chart ("-" for none).
func (c *content) chart() string {
	if c.helm == nil {
		return "-"
	}
	ch, err := helmchart.Load(c.helm.Chart)
	if err != nil || ch.Metadata == nil {
		return "(unreadable chart)"
	}
	return ch.Metadata.Name + " " + ch.Metadata.Version
}

// deployedContent reads what cl runs for b: its BundleDeployment's inline manifests and
// content, as the agent reads them. Without a BundleDeployment (not registered, or not deployed
// yet) nothing is deployed: nil.
func deployedContent(ctx context.Context, c client.Client, b *fleetv1alpha1.Bundle, cl *fleetv1alpha1.Cluster, d *bundleDiff) (*content, error) {
	if cl.Status.Namespace == "" {
		d.Deployed = "nothing: cluster " + cl.Name + " has no namespace yet (not registered)"
		return nil, nil
	}
	bd := &fleetv1alpha1.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Status.Namespace, Name: b.Name}, bd); apierrors.IsNotFound(err) {
		d.Deployed = "nothing: no BundleDeployment " + cl.Status.Namespace + "/" + b.Name + " yet"
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("get the BundleDeployment of cluster %s: %w", cl.Name, err)
	}
	out := &content{manifests: bd.Spec.Manifests, opts: bd.Spec.Options}
	d.Deployed = "BundleDeployment " + bd.Namespace + "/" + bd.Name + ", deployment " + bd.Spec.DeploymentID
	if ref := bd.Spec.Content; ref != nil {
		bc := &fleetv1alpha1.BundleContent{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, bc); err != nil {
			return nil, fmt.Errorf("read content %s/%s of BundleDeployment %s/%s: %w", ref.Namespace, ref.Name, bd.Namespace, bd.Name, err)
		}
		if ref.SHA256 != "" && bc.SHA256 != ref.SHA256 {
			// The slot was reused by a later version before this cluster got it: what it
			// runs is no longer stored (drover is moving it on).
			return nil, fmt.Errorf("content %s/%s of BundleDeployment %s/%s holds a later version than the cluster's (%.12s, not %.12s): "+
				"the BundleDeployment is being updated; run the diff again", ref.Namespace, ref.Name, bd.Namespace, bd.Name, bc.SHA256, ref.SHA256)
		}
		out.manifests = append(append([]runtime.RawExtension{}, out.manifests...), bc.Manifests...)
		out.helm = withValues(bc.Helm, bd.Spec.Options.HelmValues)
	}
	if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
		d.Deployed += " (not applied by the agent yet)"
	}
	return out, nil
}

// withValues is h with values (rendered for one cluster from h's template) in place of its own;
// h as it is when values is nil.
func withValues(h *fleetv1alpha1.BundleHelm, values *runtime.RawExtension) *fleetv1alpha1.BundleHelm {
	if h == nil || values == nil {
		return h
	}
	out := *h
	out.Values, out.TemplateValues = values, false
	return &out
}

// proposedSpec renders the change: the Bundle spec its GitRepo would write for the directory or
// revision, or for an applied Bundle its spec with the directory's manifests. nil: the change
// deletes the Bundle (its path renders none).
func proposedSpec(ctx context.Context, c client.Client, b *fleetv1alpha1.Bundle, o *diffOptions, d *bundleDiff) (*fleetv1alpha1.BundleSpec, error) {
	repoName := b.Labels[fleetv1alpha1.GitRepoNameLabel]
	if repoName == "" {
		if o.revision != "" {
			return nil, usageErrorf("--revision needs a Bundle of a GitRepo; bundle %s was applied directly: pass its manifests with -f DIR", b.Name)
		}
		resources, err := ReadManifestDir(o.dir)
		if err != nil {
			return nil, fmt.Errorf("read -f %s: %w", o.dir, err)
		}
		spec := b.Spec.DeepCopy()
		spec.Resources = resources
		d.Proposed = "directory " + o.dir + " (as drover bundle apply reads it, with the Bundle's options)"
		return spec, nil
	}
	gr := &fleetv1alpha1.GitRepo{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: repoName}, gr); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("bundle %s belongs to GitRepo %q, which is not in namespace %s (see `drover gitrepo list -n %s`)", b.Name, repoName, b.Namespace, b.Namespace)
		}
		return nil, fmt.Errorf("get GitRepo %s/%s: %w", b.Namespace, repoName, err)
	}
	p := b.Annotations[fleetv1alpha1.GitRepoPathAnnotation]
	if p == "" {
		p = "."
	}
	var rendered []gitrepo.RenderedBundle
	if o.revision != "" {
		if gr.Spec.ClientSecretName != "" {
			return nil, fmt.Errorf("GitRepo %s reads %s with the credentials of Secret %s, which drover bundle diff does not use: "+
				"check out %s locally and pass -f DIR (the checkout of path %s) instead of --revision", gr.Name, text.RedactRepo(gr.Spec.Repo), gr.Spec.ClientSecretName, o.revision, p)
		}
		commit, r, err := gitrepo.RenderRevision(ctx, gr, o.revision)
		if err != nil {
			return nil, fmt.Errorf("GitRepo %s at %s: %w", gr.Name, o.revision, err)
		}
		rendered, d.Commit = r, commit
		d.Proposed = "revision " + o.revision + " (commit " + commit + ") of " + text.RedactRepo(gr.Spec.Repo) + ", path " + p + " of GitRepo " + gr.Name
	} else {
		root, at, err := checkoutOf(o.dir, p)
		if err != nil {
			return nil, err
		}
		if rendered, err = gitrepo.RenderDir(ctx, gr, root, at); err != nil {
			return nil, fmt.Errorf("render %s as GitRepo %s renders it: %w", o.dir, gr.Name, err)
		}
		d.Proposed = "directory " + o.dir + " as path " + p + " of GitRepo " + gr.Name
		if root != o.dir && at == "." {
			d.Proposed += " (in the checkout " + root + ")"
		}
	}
	for i := range rendered {
		if rendered[i].Name == b.Name {
			return &rendered[i].Spec, nil
		}
	}
	d.Proposed += ": no Bundle " + b.Name + " (path " + p + " has no manifests), so the Bundle would be deleted"
	return nil, nil
}

// checkoutOf finds the repository root to render for -f dir, the checkout of path p: the
// checkout holding dir when dir is its path p, dir itself when it holds p (the checkout's
// root), else dir alone, placed at p (references outside it, like a Kustomize base in another
// directory, then cannot be followed).
func checkoutOf(dir, p string) (root, at string, err error) {
	info, err := os.Stat(dir)
	if err != nil {
		return "", "", fmt.Errorf("-f %s: %w", dir, err)
	}
	if !info.IsDir() {
		return "", "", fmt.Errorf("-f %s is not a directory: pass the checkout of the Bundle's path", dir)
	}
	if p == "." {
		return dir, ".", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", fmt.Errorf("-f %s: %w", dir, err)
	}
	if base, ok := strings.CutSuffix(filepath.ToSlash(abs), "/"+p); ok {
		if _, err := os.Stat(filepath.Join(filepath.FromSlash(base), ".git")); err == nil {
			return filepath.FromSlash(base), ".", nil
		}
	}
	if info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err == nil && info.IsDir() {
		return dir, ".", nil
	}
	return dir, p, nil
}

func decodeManifests(raws []runtime.RawExtension) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(raws))
	for i, raw := range raws {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i+1, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// optionChanges lists the options and Helm settings that differ.
func optionChanges(a, b *content, bd string) []string {
	var out []string
	add := func(name string, x, y any) {
		if x != y {
			out = append(out, fmt.Sprintf("%s: %v -> %v", name, x, y))
		}
	}
	add("correctDrift", a.opts.CorrectDrift, b.opts.CorrectDrift)
	add("forceConflicts", a.opts.ForceConflicts, b.opts.ForceConflicts)
	add("keepResources", a.opts.KeepResources, b.opts.KeepResources)
	// defaultNamespace shows as objects moving between namespaces; Helm values as the objects
	// they change (never as values: they may hold secrets).
	if a.helm != nil || b.helm != nil {
		add("helm chart", a.chart(), b.chart())
		if a.helm != nil && b.helm != nil {
			add("helm release", a.release(bd), b.release(bd))
		}
	}
	return out
}

type diffKey struct {
	group, kind, namespace, name string
}

// compare fills d with the differences between the deployed and the proposed objects, each
// prepared as the agent prepares it for its cluster (namespace defaulting with its side's
// options), Secret values redacted.
func compare(c client.Client, d *bundleDiff, deployed []*unstructured.Unstructured, deployedOpts fleetv1alpha1.BundleDeploymentOptions,
	proposed []*unstructured.Unstructured, proposedOpts fleetv1alpha1.BundleDeploymentOptions) error {
	scope := &scoper{c: c, crds: crdScopes(append(append([]*unstructured.Unstructured{}, deployed...), proposed...))}
	before, err := keyed(deployed, deployedOpts, scope)
	if err != nil {
		return fmt.Errorf("deployed content: %w", err)
	}
	after, err := keyed(proposed, proposedOpts, scope)
	if err != nil {
		return fmt.Errorf("proposed content: %w", err)
	}
	keys := map[diffKey]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	sorted := make([]diffKey, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		return a.namespace+"\x00"+a.group+"\x00"+a.kind+"\x00"+a.name < b.namespace+"\x00"+b.group+"\x00"+b.kind+"\x00"+b.name
	})
	for _, k := range sorted {
		old, cur := before[k], after[k]
		redactSecret(old, cur)
		var a, b string
		from, to := "/dev/null", "/dev/null"
		var ref objectRef
		if old != nil {
			ref = refOf(old)
			from = "deployed/" + ref.file()
			if a, err = toYAML(old); err != nil {
				return err
			}
		}
		if cur != nil {
			ref = refOf(cur)
			to = "proposed/" + ref.file()
			if b, err = toYAML(cur); err != nil {
				return err
			}
		}
		switch {
		case a == b:
			d.Unchanged++
			continue
		case old == nil:
			d.Added = append(d.Added, ref)
		case cur == nil:
			d.Removed = append(d.Removed, ref)
		default:
			d.Changed = append(d.Changed, ref)
		}
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(a), B: lines(b), FromFile: from, ToFile: to, Context: 3})
		if err != nil {
			return fmt.Errorf("diff %s: %w", ref, err)
		}
		d.diffs = append(d.diffs, "diff -u -N "+from+" "+to+"\n"+text)
	}
	return nil
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return difflib.SplitLines(strings.TrimSuffix(s, "\n"))
}

func toYAML(u *unstructured.Unstructured) (string, error) {
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", refOf(u), err)
	}
	return string(b), nil
}

func refOf(u *unstructured.Unstructured) objectRef {
	return objectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// keyed prepares objs as the agent does (namespace defaulting) and keys them by group, kind,
// namespace and name (a version change is a change of the same object).
func keyed(objs []*unstructured.Unstructured, opts fleetv1alpha1.BundleDeploymentOptions, scope *scoper) (map[diffKey]*unstructured.Unstructured, error) {
	out := map[diffKey]*unstructured.Unstructured{}
	for _, u := range objs {
		u = u.DeepCopy()
		if u.GetNamespace() == "" && scope.namespaced(u) {
			ns := opts.DefaultNamespace
			if ns == "" {
				ns = "default"
			}
			u.SetNamespace(ns)
		}
		gvk := u.GroupVersionKind()
		k := diffKey{gvk.Group, gvk.Kind, u.GetNamespace(), u.GetName()}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s appears twice", refOf(u))
		}
		out[k] = u
	}
	return out, nil
}

// scoper tells namespaced kinds from cluster-scoped ones, as the agent does downstream: from the
// CRDs among the manifests, else from the management cluster's discovery (the built-in kinds
// are the same everywhere). A kind known to neither (a CRD installed downstream by other means)
// is taken as namespaced: on both sides alike, so it never shows as a difference.
type scoper struct {
	c    client.Client
	crds map[schema.GroupKind]bool
}

func (s *scoper) namespaced(u *unstructured.Unstructured) bool {
	gk := u.GroupVersionKind().GroupKind()
	if n, ok := s.crds[gk]; ok {
		return n
	}
	n, err := s.c.IsObjectNamespaced(u)
	if err != nil {
		return true
	}
	return n
}

func crdScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, u := range objs {
		if u.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
		out[schema.GroupKind{Group: group, Kind: kind}] = scope != "Cluster"
	}
	return out
}

// Markers that replace Secret values in a diff: a changed value shows as a changed line, never
// its content.
const (
	redactedSame   = "(redacted)"
	redactedBefore = "(redacted, before)"
	redactedAfter  = "(redacted, after)"
)

// redactSecret replaces the values of data and stringData of a core Secret (either side may be
// nil), and its kubectl last-applied annotation (which holds a copy of them), by markers that
// say only whether each value changed.
func redactSecret(old, cur *unstructured.Unstructured) {
	isSecret := func(u *unstructured.Unstructured) bool {
		return u != nil && u.GetAPIVersion() == "v1" && u.GetKind() == "Secret"
	}
	if !isSecret(old) && !isSecret(cur) {
		return
	}
	get := func(u *unstructured.Unstructured, path ...string) map[string]any {
		if !isSecret(u) {
			return nil
		}
		m, _, _ := unstructured.NestedMap(u.Object, path...)
		return m
	}
	set := func(u *unstructured.Unstructured, m map[string]any, path ...string) {
		if isSecret(u) && m != nil {
			_ = unstructured.SetNestedMap(u.Object, m, path...)
		}
	}
	mask := func(path ...string) {
		a, b := get(old, path...), get(cur, path...)
		for k, v := range a {
			if w, ok := b[k]; ok && fmt.Sprint(w) == fmt.Sprint(v) {
				a[k], b[k] = redactedSame, redactedSame
			} else {
				a[k] = redactedBefore
			}
		}
		for k := range b {
			if b[k] != redactedSame {
				b[k] = redactedAfter
			}
		}
		set(old, a, path...)
		set(cur, b, path...)
	}
	mask("data")
	mask("stringData")
	const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
	for _, u := range []*unstructured.Unstructured{old, cur} {
		if isSecret(u) {
			if ann := u.GetAnnotations(); ann[lastApplied] != "" {
				ann[lastApplied] = redactedSame
				u.SetAnnotations(ann)
			}
		}
	}
}

func printBundleDiff(w io.Writer, d *bundleDiff) error {
	var b strings.Builder
	if d.differs() {
		fmt.Fprintf(&b, "Bundle %s on cluster %s: %d changed, %d added, %d removed, %d unchanged\n",
			d.Bundle, d.Cluster, len(d.Changed), len(d.Added), len(d.Removed), d.Unchanged)
	} else {
		fmt.Fprintf(&b, "Bundle %s on cluster %s: no differences (%d objects)\n", d.Bundle, d.Cluster, d.Unchanged)
	}
	fmt.Fprintf(&b, "deployed: %s\nproposed: %s\n", d.Deployed, d.Proposed)
	for _, l := range []struct {
		what string
		refs []objectRef
	}{{"changed", d.Changed}, {"added", d.Added}, {"removed", d.Removed}} {
		for _, r := range l.refs {
			fmt.Fprintf(&b, "%-8s %s\n", l.what+":", r)
		}
	}
	for _, o := range d.Options {
		fmt.Fprintf(&b, "option:  %s\n", o)
	}
	for _, text := range d.diffs {
		b.WriteString("\n" + text)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
