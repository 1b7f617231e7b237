package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/test/envtest"
)

// Tests of drover in scripts and pipes: what one command prints another takes, several names
// are each acted on, and what --dry-run prints is what apply would do.

// droverIn is drover with stdin.
func droverIn(ctx context.Context, stdin string, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func createBundles(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := mgmt.Client.Create(t.Context(), &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
}

func bundleExists(t *testing.T, ns, name string) bool {
	t.Helper()
	err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &fleetv1alpha1.Bundle{})
	return err == nil
}

// TestEmptyListItems: an empty list printed as JSON or YAML has items [], as kubectl's, so
// `jq '.items[]'` works on it; not null.
func TestEmptyListItems(t *testing.T) {
	t.Parallel()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	for format, want := range map[string]string{"json": `"items": []`, "yaml": "items: []"} {
		out, _, err := drover(t.Context(), "bundle", "list", "-o", format, "--kubeconfig", kc, "-n", ns)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("empty bundle list -o %s: %v, want %q in:\n%s", format, err, want, out)
		}
	}
	var list struct{ Items []any }
	out, _, _ := drover(t.Context(), "gitrepo", "list", "-o", "json", "--kubeconfig", kc, "-n", ns)
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Items == nil {
		t.Errorf("empty gitrepo list -o json: items %v (%v) in:\n%s", list.Items, err, out)
	}
}

// TestObjectNames: NAME or TYPE/NAME, TYPE in any of kubectl's forms of the command's kind;
// another kind is a usage error naming it.
func TestObjectNames(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"web", "bundle/web", "bundles/web", "Bundle/web", "bundle.fleet.drover.io/web",
		"bundles.fleet.drover.io/web", "Bundle.fleet.drover.io/web", "bundles.v1alpha1.fleet.drover.io/web"} {
		if got, err := objectNames(&fleetv1alpha1.Bundle{}, []string{a}); err != nil || len(got) != 1 || got[0] != "web" {
			t.Errorf("%s: %v %v, want web", a, got, err)
		}
	}
	if got, err := objectNames(&fleetv1alpha1.Cluster{}, []string{"fc/edge-1", "cluster.fleet.drover.io/edge-2"}); err != nil || strings.Join(got, ",") != "edge-1,edge-2" {
		t.Errorf("fleet cluster names: %v %v", got, err)
	}
	for _, tc := range []struct {
		obj  client.Object
		arg  string
		want string
	}{
		{&fleetv1alpha1.Cluster{}, "cluster.management.drover.io/prod", "cluster.management.drover.io is not a Cluster"},
		{&v1.Cluster{}, "cluster.fleet.drover.io/edge-1", "cluster.fleet.drover.io is not a Cluster"},
		{&fleetv1alpha1.Bundle{}, "gitrepo/web", "gitrepo is not a Bundle: pass NAME or bundle.fleet.drover.io/NAME"},
		{&fleetv1alpha1.Bundle{}, "bundle/", "not NAME or TYPE/NAME"},
		{&fleetv1alpha1.Bundle{}, "bundle/a/b", "not NAME or TYPE/NAME"},
	} {
		_, err := objectNames(tc.obj, []string{"ok", tc.arg})
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (exit %d), want a usage error saying %q", tc.arg, err, ExitCode(err), tc.want)
		}
	}
}

// TestNameOutputFedBack: what -o name prints, every command taking names takes back.
func TestNameOutputFedBack(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	for _, n := range []string{"edge-1", "edge-2"} {
		if err := mgmt.Client.Create(ctx, &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	createBundles(t, ns, "web", "db")
	if err := mgmt.Client.Create(ctx, &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps.git"}}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, errOut, err := drover(ctx, append(args, "--kubeconfig", kc, "-n", ns)...)
		if err != nil {
			t.Fatalf("drover %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	names := strings.Fields(run("fleet", "list", "-o", "name"))
	if len(names) != 2 || names[0] != "cluster.fleet.drover.io/edge-1" {
		t.Fatalf("fleet list -o name: %q", names)
	}
	if out := run(append([]string{"fleet", "get", "-o", "name"}, names...)...); out != "cluster.fleet.drover.io/edge-1\ncluster.fleet.drover.io/edge-2\n" {
		t.Errorf("fleet get of list -o name's output: %q", out)
	}
	if out := run("bundle", "status", "bundle.fleet.drover.io/web", "-o", "jsonpath={.metadata.name}"); out != "web" {
		t.Errorf("bundle status bundle.fleet.drover.io/web: %q", out)
	}
	if out := run("bundle", "get", "bundles/web", "-o", "name"); out != "bundle.fleet.drover.io/web\n" {
		t.Errorf("bundle get (kubectl's verb for bundle status): %q", out)
	}
	run("bundle", "pause", "bundles/web")
	run("bundle", "redeploy", "bundle.fleet.drover.io/web")
	run("gitrepo", "pause", "gitrepo.fleet.drover.io/apps")
	run("gitrepo", "redeploy", "gitrepos/apps")
	b := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, b); err != nil || !b.Spec.Rollout.Paused || b.Spec.ForceSyncGeneration != 1 {
		t.Errorf("bundle web after pause and redeploy by TYPE/NAME: %v paused %t, forceSyncGeneration %d", err, b.Spec.Rollout.Paused, b.Spec.ForceSyncGeneration)
	}
	gr := &fleetv1alpha1.GitRepo{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "apps"}, gr); err != nil || !gr.Spec.Paused || gr.Spec.ForceSyncGeneration != 1 {
		t.Errorf("gitrepo apps after pause and redeploy by TYPE/NAME: %v paused %t, forceSyncGeneration %d", err, gr.Spec.Paused, gr.Spec.ForceSyncGeneration)
	}
	if out := run("bundle", "delete", "bundle.fleet.drover.io/db"); out != "bundle.fleet.drover.io/db deleted\n" || bundleExists(t, ns, "db") {
		t.Errorf("bundle delete bundle.fleet.drover.io/db: %q, still there %t", out, bundleExists(t, ns, "db"))
	}
	// Another kind's name is a usage error naming its type, and nothing is done.
	_, _, err := drover(ctx, "bundle", "delete", "web", "gitrepo.fleet.drover.io/apps", "--kubeconfig", kc, "-n", ns)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "gitrepo.fleet.drover.io is not a Bundle") || !bundleExists(t, ns, "web") {
		t.Errorf("bundle delete with a GitRepo's name: %v (exit %d), web still there %t", err, ExitCode(err), bundleExists(t, ns, "web"))
	}
	if _, _, err := drover(ctx, "fleet", "get", "cluster.management.drover.io/edge-1", "--kubeconfig", kc, "-n", ns); ExitCode(err) != ExitUsage ||
		!strings.Contains(err.Error(), "cluster.management.drover.io") {
		t.Errorf("fleet get of a hosted cluster's name: %v (exit %d), want a usage error naming cluster.management.drover.io", err, ExitCode(err))
	}
}

// TestSeveralNames: as kubectl, a command given several names acts on each, prints each failure
// on stderr and exits 1 at the end; delete --ignore-not-found exits 0 for missing ones; get and
// status print every object found.
func TestSeveralNames(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	createBundles(t, ns, "a", "b", "c", "d")
	for _, n := range []string{"x", "y"} {
		if err := mgmt.Client.Create(ctx, &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n},
			Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/" + n + ".git"}}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, string, error) {
		return drover(ctx, append(args, "--kubeconfig", kc, "-n", ns)...)
	}
	failsOn := func(what string, errOut string, err error, missing ...string) {
		t.Helper()
		if ExitCode(err) != ExitError {
			t.Errorf("%s: %v (exit %d), want exit 1", what, err, ExitCode(err))
		}
		for _, m := range missing {
			if !strings.Contains(errOut, fmt.Sprintf("Error: %s not found in namespace %s", m, ns)) {
				t.Errorf("%s: stderr lacks the failure of %s: %q", what, m, errOut)
			}
		}
	}

	out, errOut, err := run("bundle", "delete", "nope", "a", "nada", "b")
	failsOn("bundle delete nope a nada b", errOut, err, `bundle "nope"`, `bundle "nada"`)
	if bundleExists(t, ns, "a") || bundleExists(t, ns, "b") || out != "bundle.fleet.drover.io/a deleted\nbundle.fleet.drover.io/b deleted\n" {
		t.Errorf("bundle delete nope a nada b: a or b left, output %q", out)
	}
	if out, errOut, err := run("bundle", "delete", "nope", "c", "--ignore-not-found"); err != nil || bundleExists(t, ns, "c") || errOut != "" ||
		out != "bundle.fleet.drover.io/c deleted\n" {
		t.Errorf("bundle delete --ignore-not-found nope c: %v, c left %t, output %q %q", err, bundleExists(t, ns, "c"), out, errOut)
	}
	for _, kind := range []string{"gitrepo", "cluster"} {
		if _, _, err := run(kind, "delete", "nope", "--ignore-not-found"); err != nil {
			t.Errorf("%s delete --ignore-not-found nope: %v", kind, err)
		}
	}

	_, errOut, err = run("gitrepo", "pause", "x", "nope", "y")
	failsOn("gitrepo pause x nope y", errOut, err, `gitrepo "nope"`)
	for _, n := range []string{"x", "y"} {
		gr := &fleetv1alpha1.GitRepo{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, gr); err != nil || !gr.Spec.Paused {
			t.Errorf("gitrepo pause x nope y: %s not paused (%v)", n, err)
		}
	}
	_, errOut, err = run("bundle", "redeploy", "nope", "d")
	failsOn("bundle redeploy nope d", errOut, err, `bundle "nope"`)
	b := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "d"}, b); err != nil || b.Spec.ForceSyncGeneration != 1 {
		t.Errorf("bundle redeploy nope d: d's forceSyncGeneration %d (%v), want 1", b.Spec.ForceSyncGeneration, err)
	}
	_, errOut, err = run("gitrepo", "redeploy", "nope", "y")
	failsOn("gitrepo redeploy nope y", errOut, err, `gitrepo "nope"`)

	// get and status: several names print as kubectl get does, each failure on stderr.
	out, errOut, err = run("gitrepo", "get", "y", "nope", "x", "-o", "name")
	failsOn("gitrepo get y nope x", errOut, err, `gitrepo "nope"`)
	if out != "gitrepo.fleet.drover.io/y\ngitrepo.fleet.drover.io/x\n" {
		t.Errorf("gitrepo get y nope x -o name: %q", out)
	}
	out, _, err = run("gitrepo", "get", "x", "y", "-o", "json")
	var list struct {
		Kind  string
		Items []fleetv1alpha1.GitRepo
	}
	if jerr := json.Unmarshal([]byte(out), &list); err != nil || jerr != nil || list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Name != "x" {
		t.Errorf("gitrepo get x y -o json: %v %v, want a List of x and y:\n%s", err, jerr, out)
	}
	if out, _, err := run("gitrepo", "get", "x", "y", "-o", "table"); err != nil || rows(out, "NAME") != 1 || rows(out, "x") != 1 || rows(out, "y") != 1 {
		t.Errorf("gitrepo get x y -o table: %v, want one table of both:\n%s", err, out)
	}
	if out, _, err := run("gitrepo", "get", "x", "y"); err != nil || !strings.Contains(out, " "+ns+"/x\n") || !strings.Contains(out, " "+ns+"/y\n") {
		t.Errorf("gitrepo get x y: %v, want both details:\n%s", err, out)
	}
	if out, _, err := run("bundle", "status", "d", "-o", "json"); err != nil || !strings.Contains(out, `"kind": "Bundle"`) {
		t.Errorf("bundle status d -o json: %v, want the Bundle alone:\n%s", err, out)
	}
}

// TestBundleApplyDryRunNamespace: --dry-run prints the Bundle apply would write, in the namespace apply
// would use (-n, else the context's, else drover-default) and without a status, so piping it
// to kubectl apply does what apply does.
func TestBundleApplyDryRunNamespace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := mgmtKubeconfig(t)
	withNS := filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfigFor(t, mgmt.Config, withNS)
	b, err := os.ReadFile(withNS)
	if err != nil {
		t.Fatal(err)
	}
	// The context's namespace.
	b = bytes.Replace(b, []byte("    cluster: envtest\n"), []byte("    cluster: envtest\n    namespace: team-a\n"), 1)
	if err := os.WriteFile(withNS, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no namespace", []string{"--kubeconfig", kc}, fleetv1alpha1.DefaultWorkspaceNamespace},
		{"the context's", []string{"--kubeconfig", withNS}, "team-a"},
		{"-n", []string{"--kubeconfig", withNS, "-n", "team-b"}, "team-b"},
	} {
		out, errOut, err := drover(t.Context(), append([]string{"bundle", "apply", "-f", dir, "--cluster", "edge-1", "--dry-run"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, errOut)
		}
		var got map[string]any
		if err := yaml.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, out)
		}
		md, _ := got["metadata"].(map[string]any)
		if md["namespace"] != tc.want || md["name"] != filepath.Base(dir) {
			t.Errorf("%s: metadata %v, want namespace %s", tc.name, md, tc.want)
		}
		if _, ok := got["status"]; ok {
			t.Errorf("%s: --dry-run printed a status:\n%s", tc.name, out)
		}
		if _, ok := md["creationTimestamp"]; ok {
			t.Errorf("%s: --dry-run printed a creationTimestamp:\n%s", tc.name, out)
		}
	}
}

// TestBundleApplyGitRepoOwned: apply refuses to overwrite a GitRepo's Bundle (its next apply
// would undo it), naming the GitRepo, unless --force.
func TestBundleApplyGitRepoOwned(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"}, Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps.git"}}
	if err := mgmt.Client.Create(ctx, gr); err != nil {
		t.Fatal(err)
	}
	byOwner := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps-web", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "GitRepo", Name: gr.Name, UID: gr.UID, Controller: ptr.To(true)}}}}
	byLabel := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps-db", Labels: map[string]string{fleetv1alpha1.GitRepoNameLabel: "apps"}}}
	for _, b := range []*fleetv1alpha1.Bundle{byOwner, byLabel} {
		if err := mgmt.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		args := []string{"bundle", "apply", "-f", dir, "--name", b.Name, "--cluster", "edge-1", "--kubeconfig", kc, "-n", ns}
		_, _, err := drover(ctx, args...)
		if err == nil || !strings.Contains(err.Error(), "belongs to GitRepo apps") || !strings.Contains(err.Error(), "change the Git repository") ||
			!strings.Contains(err.Error(), "--force") {
			t.Errorf("apply over %s: %v, want a refusal naming GitRepo apps, Git and --force", b.Name, err)
		}
		got := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil || len(got.Spec.Resources) != 0 {
			t.Errorf("apply over %s changed it: %v %d resources", b.Name, err, len(got.Spec.Resources))
		}
		_, errOut, err := drover(ctx, append(args, "--force")...)
		if err != nil || !strings.Contains(errOut, "Warning: bundle "+ns+"/"+b.Name+" belongs to GitRepo apps") {
			t.Errorf("apply --force over %s: %v, stderr %q", b.Name, err, errOut)
		}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil || len(got.Spec.Resources) != 1 {
			t.Errorf("apply --force over %s: %v %d resources, want 1", b.Name, err, len(got.Spec.Resources))
		}
	}
}

// TestClusterCreateNamespaceMismatch: a manifest's namespace and a different -n are refused as
// kubectl refuses them; the same namespace, or no -n, is the manifest's.
func TestClusterCreateNamespaceMismatch(t *testing.T) {
	t.Parallel()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	manifest := func(name string) string {
		return "apiVersion: management.drover.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
			"\nspec:\n  gkeConfig:\n    clusterName: ff\n    projectID: acme\n    zone: europe-west1-b\n    credentialSecret: gcp\n    kubernetesVersion: \"1.33\"\n    nodePools:\n    - name: pool\n      initialNodeCount: 1\n"
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(file, []byte(manifest("a")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := drover(t.Context(), "cluster", "create", "gke", "-f", file, "--kubeconfig", kc, "-n", "other")
	want := fmt.Sprintf(`the namespace from the provided object %q does not match the namespace "other". You must pass '--namespace=%s' to perform this operation.`, ns, ns)
	if ExitCode(err) != ExitUsage || err.Error() != want {
		t.Errorf("create -f with another -n: %v (exit %d), want %q", err, ExitCode(err), want)
	}
	if _, _, err := drover(t.Context(), "cluster", "create", "gke", "-f", file, "--kubeconfig", kc, "-n", ns); err != nil {
		t.Errorf("create -f with the same -n: %v", err)
	}
	// -f - reads stdin; without -n the manifest's namespace is used.
	if out, errOut, err := droverIn(t.Context(), manifest("b"), "cluster", "create", "gke", "-f", "-", "--kubeconfig", kc); err != nil {
		t.Errorf("create -f -: %v\n%s%s", err, out, errOut)
	}
	for _, n := range []string{"a", "b"} {
		if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: n}, &v1.Cluster{}); err != nil {
			t.Errorf("cluster %s: %v", n, err)
		}
	}
	if _, _, err := drover(t.Context(), "cluster", "create", "gke", "-f", filepath.Join(dir, "nope.yaml"), "--kubeconfig", kc); err == nil || !strings.Contains(err.Error(), "-f "+filepath.Join(dir, "nope.yaml")) {
		t.Errorf("create -f of a missing file: %v, want an error naming -f", err)
	}
}

// TestBundleApplyFileAndStdin: -f takes a directory, one file (the Bundle named after it) or
// - for stdin (with --name); a missing path is an error naming -f.
func TestBundleApplyFileAndStdin(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	dir := t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: web2}\n"
	file := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(file, []byte(cm), 0o600); err != nil {
		t.Fatal(err)
	}
	resources := func(name string) int {
		t.Helper()
		b := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			t.Errorf("bundle %s: %v", name, err)
		}
		return len(b.Spec.Resources)
	}
	if out, errOut, err := drover(ctx, "bundle", "apply", "-f", file, "--cluster", "edge-1", "--kubeconfig", kc, "-n", ns); err != nil || resources("cm") != 2 {
		t.Errorf("apply -f FILE: %v\n%s%s", err, out, errOut)
	}
	if out, errOut, err := droverIn(ctx, cm, "bundle", "apply", "-f", "-", "--name", "piped", "--cluster", "edge-1", "--kubeconfig", kc, "-n", ns); err != nil || resources("piped") != 2 {
		t.Errorf("apply -f -: %v\n%s%s", err, out, errOut)
	}
	if _, _, err := droverIn(ctx, cm, "bundle", "apply", "-f", "-", "--cluster", "edge-1", "--kubeconfig", kc, "-n", ns); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--name") {
		t.Errorf("apply -f - without --name: %v (exit %d), want a usage error naming --name", err, ExitCode(err))
	}
	if _, _, err := droverIn(ctx, "", "bundle", "apply", "-f", "-", "--name", "x", "--cluster", "edge-1", "--kubeconfig", kc, "-n", ns); err == nil || !strings.Contains(err.Error(), "-f -") {
		t.Errorf("apply -f - of nothing: %v, want an error naming -f -", err)
	}
	missing := filepath.Join(dir, "nope.yaml")
	if _, _, err := drover(ctx, "bundle", "apply", "-f", missing, "--cluster", "edge-1", "--kubeconfig", kc, "-n", ns); err == nil || !strings.HasPrefix(err.Error(), "-f "+missing) {
		t.Errorf("apply -f of a missing file: %v, want an error naming -f", err)
	}
}

// TestWatchEventsJSON: -w --output-watch-events with -o json prints each change as kubectl
// does, {"type":..., "object":...} a line; -o yaml as YAML documents.
func TestWatchEventsJSON(t *testing.T) {
	t.Parallel()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	createBundles(t, ns, "first")
	asJSON, _ := startDrover(t, "bundle", "list", "-w", "-o", "json", "--output-watch-events", "--kubeconfig", kc, "-n", ns)
	asYAML, _ := startDrover(t, "bundle", "list", "-w", "-o", "yaml", "--output-watch-events", "--kubeconfig", kc, "-n", ns)
	events := func() ([]metav1.WatchEvent, error) {
		var evs []metav1.WatchEvent
		for l := range strings.Lines(asJSON.String()) {
			var ev metav1.WatchEvent
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				return nil, fmt.Errorf("line %q: %w", l, err)
			}
			evs = append(evs, ev)
		}
		return evs, nil
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		if evs, err := events(); err != nil || len(evs) != 1 {
			return fmt.Errorf("events %v (%w), want first's ADDED", evs, err)
		}
		return nil
	})
	createBundles(t, ns, "second")
	envtest.Eventually(t, 30*time.Second, func() error {
		evs, err := events()
		if err != nil || len(evs) != 2 {
			return fmt.Errorf("events %v (%w), want 2", evs, err)
		}
		var b fleetv1alpha1.Bundle
		if err := json.Unmarshal(evs[1].Object.Raw, &b); err != nil || evs[1].Type != "ADDED" || b.Name != "second" || b.Kind != "Bundle" {
			return fmt.Errorf("second event %s %s/%s (%w)", evs[1].Type, b.Kind, b.Name, err)
		}
		if !strings.Contains(asYAML.String(), "---\nobject:\n") || strings.Count(asYAML.String(), "type: ADDED\n") != 2 {
			return fmt.Errorf("-o yaml events:\n%s", asYAML.String())
		}
		return nil
	})
}

// TestSortByMissingField: a --sort-by path no item has is an error, as kubectl's; one some
// items lack sorts those first.
func TestSortByMissingField(t *testing.T) {
	t.Parallel()
	items := []*fleetv1alpha1.GitRepo{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: fleetv1alpha1.GitRepoSpec{Branch: "main"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
	}
	err := sortList(items, ".spec.nope")
	if err == nil || !strings.Contains(err.Error(), `couldn't find any field with path ".spec.nope" in the list`) || !strings.Contains(err.Error(), "--sort-by") {
		t.Errorf("--sort-by .spec.nope: %v, want kubectl's error naming --sort-by", err)
	}
	if err := sortList(items, ".spec.branch"); err != nil || items[0].Name != "b" {
		t.Errorf("--sort-by .spec.branch: %v, order %s,%s", err, items[0].Name, items[1].Name)
	}
	if err := sortList([]*fleetv1alpha1.GitRepo{}, ".spec.nope"); err != nil {
		t.Errorf("--sort-by of an empty list: %v", err)
	}
}

// TestOneNameCommandsTakeTypeName: bundle diff and cluster kubeconfig take TYPE/NAME too; another
// kind is a usage error before anything is read.
func TestOneNameCommandsTakeTypeName(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bundle", "diff", "gitrepo.fleet.drover.io/web", "--cluster", "edge-1", "-f", "."},
		{"cluster", "kubeconfig", "cluster.fleet.drover.io/edge-1"},
	} {
		_, _, err := drover(t.Context(), append(args, "--kubeconfig", filepath.Join(t.TempDir(), "none"))...)
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "is not a") {
			t.Errorf("drover %s: %v (exit %d), want a usage error naming the type", strings.Join(args, " "), err, ExitCode(err))
		}
	}
	if _, _, err := drover(t.Context(), "cluster", "kubeconfig", "cluster.management.drover.io/prod", "--kubeconfig", filepath.Join(t.TempDir(), "none")); err == nil ||
		!strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("cluster kubeconfig cluster.management.drover.io/prod: %v, want it taken as prod (and the missing kubeconfig named)", err)
	}
}
