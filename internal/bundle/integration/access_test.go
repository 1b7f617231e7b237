package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
	"github.com/droverhq/drover/internal/bundle/agentmgmt"
	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/registration/local"
)

// requestClient authenticates as the request identity of a downstream cluster's agent, with
// only the bearer token from its credential secret.
func requestClient(t *testing.T, cluster string) client.Client {
	t.Helper()
	s := &corev1.Secret{}
	if err := downstreamOf(cluster).Client.Get(t.Context(), client.ObjectKey{Namespace: agentNS, Name: manifests.CredentialSecret}, s); err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(mgmt.Config)
	cfg.BearerToken = string(s.Data[fleetv1alpha1.KeyToken])
	c, err := client.New(cfg, client.Options{Scheme: register.Scheme, Mapper: register.RESTMapper})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func bundleContent(t *testing.T, name string) string {
	t.Helper()
	b := &fleetv1alpha1.Bundle{}
	eventually(t, 30*time.Second, func() error {
		if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: name}, b); err != nil {
			return err
		}
		// Applied everywhere (on the plain API server the agent's own Deployment never becomes
		// available: nothing runs pods there).
		if s := b.Status.Summary; b.Status.Content == "" || s.Ready+s.NotReady != s.DesiredReady || s.DesiredReady == 0 {
			return fmt.Errorf("bundle %s not applied: %+v", name, b.Status.Summary)
		}
		return nil
	})
	return b.Status.Content
}

// TestContentAccess: a request identity can get exactly the BundleContents its cluster's
// BundleDeployments reference.
func TestContentAccess(t *testing.T) {
	ctx := t.Context()
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "plain-only"},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, configMap("default", "plain-only", map[string]string{"k": "v"})),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), b) })
	fb := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "full-only"},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, configMap("default", "full-only", map[string]string{"k": "v"})),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: fullName}}}}
	if err := mgmt.Client.Create(ctx, fb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), fb) })
	plainOnly, fullOnly := bundleContent(t, b.Name), bundleContent(t, fb.Name)
	// Each agent Bundle has its own content slots.
	agentContent := bundleContent(t, agentmgmt.BundleName(plainName))
	for _, tc := range []struct {
		identity, content string
		allowed           bool
	}{
		{plainName, plainOnly, true},
		{fullName, plainOnly, false},
		{fullName, fullOnly, true},
		{plainName, fullOnly, false},
		{plainName, agentContent, true},
	} {
		t.Run(fmt.Sprintf("%s gets %s", tc.identity, tc.content[:10]), func(t *testing.T) {
			err := requestClient(t, tc.identity).Get(ctx, client.ObjectKey{Namespace: ws, Name: tc.content}, &fleetv1alpha1.BundleContent{})
			if tc.allowed && err != nil || !tc.allowed && !apierrors.IsForbidden(err) {
				t.Fatalf("allowed=%v, got %v", tc.allowed, err)
			}
		})
	}
	t.Run("no identity lists contents", func(t *testing.T) {
		for _, id := range []string{fullName, plainName} {
			if err := requestClient(t, id).List(ctx, &fleetv1alpha1.BundleContentList{}, client.InNamespace(ws)); !apierrors.IsForbidden(err) {
				t.Errorf("%s lists BundleContents: %v", id, err)
			}
		}
	})
}

// TestBundleCLI: `drover bundle apply -f dir/` then `drover bundle status`.
func TestBundleCLI(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "cli-app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cli-a\ndata:\n  k: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cli-b\n",
		"b.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cli-c"}}`,
		"README": "not a manifest",
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := bundleCLI(t)
	if out := run("apply", "-f", dir, "--cluster", plainName, "--default-namespace", "default"); !strings.Contains(out, "created (3 resources)") {
		t.Fatalf("apply: %s", out)
	}
	t.Cleanup(func() {
		_ = mgmt.Client.Delete(context.Background(), &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "cli-app"}})
	})
	eventually(t, 30*time.Second, func() error {
		for _, n := range []string{"cli-a", "cli-b", "cli-c"} {
			if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: n}, &corev1.ConfigMap{}); err != nil {
				return err
			}
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		if out := run("status", "cli-app"); !strings.Contains(out, "1 targeted, 1 ready") {
			return fmt.Errorf("status: %s", out)
		}
		return nil
	})
	if out := run("apply", "-f", dir, "--name", "cli-app", "--selector", "no-such-label=x"); !strings.Contains(out, "updated") {
		t.Fatalf("re-apply: %s", out)
	}
	eventually(t, 30*time.Second, func() error {
		if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "cli-a"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cli-a still downstream after retargeting: %w", err)
		}
		return nil
	})
}

// TestBundleRedeploy: `drover bundle redeploy` re-applies a Bundle whose resources were changed
// (by another field manager, which plain re-applying would conflict with) and deleted
// downstream, once, without correctDrift; applying the Bundle again keeps the redeploy count.
func TestBundleRedeploy(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), unique("redeploy"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(dir)
	manifests := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "-a\ndata:\n  color: blue\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "-b\ndata:\n  k: v\n"
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	run := bundleCLI(t)
	run("apply", "-f", dir, "--cluster", plainName, "--default-namespace", "default", "--wait", "--timeout", "60s")
	t.Cleanup(func() {
		_ = mgmt.Client.Delete(context.Background(), &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}})
	})
	// Someone edits one (another field manager takes the field) and deletes the other.
	a := &corev1.ConfigMap{}
	if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name + "-a"}, a); err != nil {
		t.Fatal(err)
	}
	a.Data["color"] = "red"
	if err := plain.Client.Update(ctx, a, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	if err := plain.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-b"}}); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}}, 30*time.Second, func(b *fleetv1alpha1.Bundle) error {
		if b.Status.Summary.Modified != 1 {
			return fmt.Errorf("summary %+v, want the drift seen", b.Status.Summary)
		}
		return nil
	})

	if out := run("redeploy", name, "--wait", "--timeout", "60s"); !strings.Contains(out, "bundle.fleet.drover.io/"+name+" redeploying") {
		t.Fatalf("redeploy: %s", out)
	}
	eventually(t, 30*time.Second, func() error {
		if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name + "-a"}, a); err != nil {
			return err
		}
		if a.Data["color"] != "blue" {
			return fmt.Errorf("color %q, want blue again", a.Data["color"])
		}
		return plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name + "-b"}, &corev1.ConfigMap{})
	})
	bd, err := bundleDeployment(t, plainName, name)
	if err != nil {
		t.Fatal(err)
	}
	if bd.Spec.Options.CorrectDrift || bd.Status.AppliedSyncGeneration != 1 || !bd.Status.NonModified {
		t.Errorf("after the redeploy: correctDrift %v, appliedSyncGeneration %d, nonModified %v; want false, 1, true",
			bd.Spec.Options.CorrectDrift, bd.Status.AppliedSyncGeneration, bd.Status.NonModified)
	}
	run("apply", "-f", dir, "--name", name, "--cluster", plainName, "--default-namespace", "default")
	b := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: name}, b); err != nil {
		t.Fatal(err)
	}
	if b.Spec.ForceSyncGeneration != 1 {
		t.Errorf("spec.forceSyncGeneration %d after applying again, want 1 kept", b.Spec.ForceSyncGeneration)
	}
}

// bundleCLI runs `drover bundle ARGS` against the management cluster, as a user does, and
// returns what it printed; a failure ends the test.
func bundleCLI(t *testing.T) func(args ...string) string {
	kc, err := local.Kubeconfig(mgmt.Config)
	if err != nil {
		t.Fatal(err)
	}
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		cmd := cli.NewRootCommand()
		cmd.SetOut(&out)
		cmd.SetArgs(append(append([]string{"bundle"}, args...), "--kubeconfig", kcPath))
		if err := cmd.ExecuteContext(t.Context()); err != nil {
			t.Fatalf("drover bundle %v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
}
