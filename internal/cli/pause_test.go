package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/gitrepo"
)

// TestPauseResume: `drover bundle pause|resume` and `drover gitrepo pause|resume` set the
// paused fields, as drover-cli; resuming a Bundle whose pause comes from Git warns that the
// GitRepo sets it back; an unknown name is an error naming it.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps.git"}}
	web := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	for _, o := range []client.Object{gr, web} {
		if err := mgmt.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// A Bundle of the GitRepo, applied as its controller does, paused in Git.
	fromGit := &fleetv1alpha1.Bundle{TypeMeta: metav1.TypeMeta{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "Bundle"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps-db", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "GitRepo", Name: gr.Name, UID: gr.UID, Controller: ptr.To(true)}}},
		Spec: fleetv1alpha1.BundleSpec{Rollout: fleetv1alpha1.BundleRollout{Paused: true}}}
	if err := mgmt.Client.Patch(ctx, fromGit, client.Apply, client.FieldOwner(gitrepo.FieldOwner), client.ForceOwnership); err != nil { //nolint:staticcheck // as the GitRepo controller applies
		t.Fatal(err)
	}

	run := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := drover(ctx, append(args, "--kubeconfig", kc, "-n", ns)...)
		if err != nil {
			t.Fatalf("drover %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out, errOut
	}
	bundlePaused := func(name string) bool {
		t.Helper()
		b := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			t.Fatal(err)
		}
		return b.Spec.Rollout.Paused
	}

	out, errOut := run("bundle", "pause", "web")
	if !bundlePaused("web") || !strings.Contains(out, "bundle.fleet.drover.io/web paused: rollout paused") || errOut != "" {
		t.Errorf("bundle pause: paused %t, output %q %q", bundlePaused("web"), out, errOut)
	}
	b := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(web), b); err != nil || !setBy(b, cliFieldManager, bundlePause.path) {
		t.Errorf("the pause is not recorded as %s's: %v %v", cliFieldManager, err, b.ManagedFields)
	}
	// Re-applying a paused Bundle (the fix for a halted rollout) keeps it paused and says so.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {v: \"2\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut := run("bundle", "apply", "-f", dir, "--name", "web", "--cluster", "edge-1"); !bundlePaused("web") || !strings.Contains(errOut, "rollout stays paused") {
		t.Errorf("bundle apply on a paused Bundle: paused %t, stderr %q", bundlePaused("web"), errOut)
	}
	if out, _ := run("bundle", "pause", "web"); !strings.Contains(out, "already paused: nothing changed") {
		t.Errorf("pause of a paused Bundle: %q", out)
	}
	if out, _ := run("bundle", "resume", "web"); bundlePaused("web") || !strings.Contains(out, "rollout resumed") {
		t.Errorf("bundle resume: paused %t, output %q", bundlePaused("web"), out)
	}
	if out, _ := run("bundle", "resume", "web"); !strings.Contains(out, "already resumed: nothing changed") {
		t.Errorf("resume of a running Bundle: %q", out)
	}
	// Git says paused: the resume goes through, and says the GitRepo will undo it.
	_, errOut = run("bundle", "resume", "apps-db")
	if bundlePaused("apps-db") || !strings.Contains(errOut, "comes from GitRepo apps") || !strings.Contains(errOut, "drover gitrepo pause apps") {
		t.Errorf("resume of a Bundle paused in Git: paused %t, stderr %q", bundlePaused("apps-db"), errOut)
	}

	gitRepoPaused := func() bool {
		t.Helper()
		got := &fleetv1alpha1.GitRepo{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(gr), got); err != nil {
			t.Fatal(err)
		}
		return got.Spec.Paused
	}
	if out, _ := run("gitrepo", "pause", "apps"); !gitRepoPaused() || !strings.Contains(out, "gitrepo.fleet.drover.io/apps paused: fetching paused") {
		t.Errorf("gitrepo pause: paused %t, output %q", gitRepoPaused(), out)
	}
	if out, _ := run("gitrepo", "resume", "apps"); gitRepoPaused() || !strings.Contains(out, "fetching resumed") {
		t.Errorf("gitrepo resume: paused %t, output %q", gitRepoPaused(), out)
	}

	_, _, err := drover(ctx, "bundle", "pause", "nope", "--kubeconfig", kc, "-n", ns)
	if err == nil || !strings.Contains(err.Error(), `bundle "nope" not found in namespace `+ns) {
		t.Errorf("pause of a missing Bundle: %v", err)
	}
}
