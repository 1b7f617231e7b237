package integration

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/metrics/metricstest"
)

func namespaceYAML(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
}

func configMapYAML(ns, name, value string) string {
	meta := "  name: " + name + "\n"
	if ns != "" {
		meta += "  namespace: " + ns + "\n"
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n" + meta + "data:\n  value: " + value + "\n"
}

// newGitRepo creates a GitRepo targeting the downstream cluster, polling every second.
func newGitRepo(t *testing.T, name string, r *repo, mutate func(*fleetv1alpha1.GitRepoSpec)) *fleetv1alpha1.GitRepo {
	t.Helper()
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: r.url, Branch: "main",
			PollingInterval: &metav1.Duration{Duration: time.Second},
			Targets:         []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	if mutate != nil {
		mutate(&gr.Spec)
	}
	if err := mgmt.Client.Create(t.Context(), gr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), gr) })
	return gr
}

func getGitRepo(t testing.TB, gr *fleetv1alpha1.GitRepo) (*fleetv1alpha1.GitRepo, error) {
	got := &fleetv1alpha1.GitRepo{}
	err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(gr), got)
	return got, err
}

// downstreamValue returns the value of ConfigMap ns/name in the downstream cluster ("" if absent).
func downstreamValue(t testing.TB, ns, name string) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := plain.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	return cm.Data["value"], nil
}

// wantDownstream checks downstream ConfigMaps: "ns/name" → value ("" means absent).
func wantDownstream(t testing.TB, want map[string]string) error {
	for k, v := range want {
		ns, name, _ := strings.Cut(k, "/")
		got, err := downstreamValue(t, ns, name)
		if err != nil {
			return err
		}
		if got != v {
			return fmt.Errorf("downstream ConfigMap %s: value %q, want %q", k, got, v)
		}
	}
	return nil
}

// wantSynced checks that gr deployed commit with the named Bundles, all ready.
func wantSynced(t testing.TB, gr *fleetv1alpha1.GitRepo, commit string, bundles ...string) error {
	got, err := getGitRepo(t, gr)
	if err != nil {
		return err
	}
	if got.Status.Commit != commit {
		return fmt.Errorf("status.commit %q, want %q; conditions %+v", got.Status.Commit, commit, got.Status.Conditions)
	}
	var names []string
	for _, b := range got.Status.Bundles {
		names = append(names, b.Name)
	}
	if !slices.Equal(names, bundles) {
		return fmt.Errorf("status.bundles %v, want %v", names, bundles)
	}
	if s := got.Status.Summary; s.Bundles != len(bundles) || s.ReadyBundles != len(bundles) {
		return fmt.Errorf("summary %+v, want %d bundles, all ready", s, len(bundles))
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("Ready condition %+v", c)
	}
	return nil
}

// TestGitRepoFollowsCommits: two paths become two Bundles whose resources reach the downstream
// cluster; a commit changing one path updates that Bundle only; a force-push back to the first
// commit is followed; deleting a path deletes its Bundle and its resources downstream.
func TestGitRepoFollowsCommits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, "follow", false)
	c1 := r.commit("two apps", map[string]string{
		"apps/a/namespace.yaml": namespaceYAML("follow-a"),
		"apps/a/config/cm.yaml": configMapYAML("follow-a", "a", "one"),
		"apps/b/all.yaml":       namespaceYAML("follow-b") + "---\n" + configMapYAML("", "b1", "one") + "---\n" + configMapYAML("", "b2", "one"),
		"apps/b/drover.yaml":    "defaultNamespace: follow-b\n",
		"apps/b/README.md":      "not a manifest\n",
		"apps/b/.github/ci.yml": "on: push\n",
		"docs/example.yaml":     "not: matched by spec.paths\n",
	})
	gr := newGitRepo(t, "follow", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Paths = []string{"apps/*"} })
	bundleA, bundleB := gitrepo.BundleName("follow", "apps/a"), gitrepo.BundleName("follow", "apps/b")

	eventually(t, 60*time.Second, func() error {
		if err := wantSynced(t, gr, c1, bundleA, bundleB); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"follow-a/a": "one", "follow-b/b1": "one", "follow-b/b2": "one"})
	})
	b := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: bundleB}, b); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(b, gr) && b.OwnerReferences[0].Name != gr.Name {
		t.Errorf("Bundle %s not owned by the GitRepo: %+v", bundleB, b.OwnerReferences)
	}
	if b.Spec.DefaultNamespace != "follow-b" || len(b.Spec.Resources) != 3 || b.Annotations[fleetv1alpha1.GitRepoPathAnnotation] != "apps/b" {
		t.Errorf("Bundle %s: defaultNamespace %q, %d resources, path %q; want follow-b, 3, apps/b",
			bundleB, b.Spec.DefaultNamespace, len(b.Spec.Resources), b.Annotations[fleetv1alpha1.GitRepoPathAnnotation])
	}
	genB := b.Generation

	c2 := r.commit("change a", map[string]string{"apps/a/config/cm.yaml": configMapYAML("follow-a", "a", "two")})
	eventually(t, 30*time.Second, func() error {
		if err := wantSynced(t, gr, c2, bundleA, bundleB); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"follow-a/a": "two", "follow-b/b1": "one"})
	})
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: bundleB}, b); err != nil {
		t.Fatal(err)
	}
	if b.Generation != genB || b.Annotations[fleetv1alpha1.GitRepoCommitAnnotation] != c1 {
		t.Errorf("unchanged Bundle %s was written: generation %d → %d, commit annotation %s", bundleB, genB, b.Generation, b.Annotations[fleetv1alpha1.GitRepoCommitAnnotation])
	}

	r.forcePush(c1)
	eventually(t, 30*time.Second, func() error {
		if err := wantSynced(t, gr, c1, bundleA, bundleB); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"follow-a/a": "one"})
	})

	c3 := r.commit("remove b", map[string]string{"apps/b": ""})
	eventually(t, 30*time.Second, func() error {
		if err := wantSynced(t, gr, c3, bundleA); err != nil {
			return err
		}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: bundleB}, &fleetv1alpha1.Bundle{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Bundle %s of the removed path still there (%w)", bundleB, err)
		}
		return wantDownstream(t, map[string]string{"follow-a/a": "one", "follow-b/b1": "", "follow-b/b2": ""})
	})
}

// wantCondition waits for gr's Synced condition to be False with reason and a message
// containing every part.
func wantCondition(t *testing.T, gr *fleetv1alpha1.GitRepo, reason string, parts ...string) *fleetv1alpha1.GitRepo {
	t.Helper()
	var got *fleetv1alpha1.GitRepo
	eventually(t, 30*time.Second, func() error {
		var err error
		if got, err = getGitRepo(t, gr); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionSynced)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
			return fmt.Errorf("Synced condition %+v, want False/%s", c, reason)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("Synced message %q does not name %q", c.Message, p)
			}
		}
		if ready := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady); ready == nil || ready.Reason != reason {
			return fmt.Errorf("Ready condition %+v, want reason %s", ready, reason)
		}
		return nil
	})
	return got
}

func TestGitRepoErrors(t *testing.T) {
	t.Parallel()
	t.Run("missing branch", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, "missing-branch", false)
		r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", "missing-branch", "one")})
		gr := newGitRepo(t, "missing-branch", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Branch = "release-9" })
		wantCondition(t, gr, fleetv1alpha1.ReasonRevisionNotFound, "branch release-9")
	})
	t.Run("missing revision", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, "missing-revision", false)
		r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", "missing-revision", "one")})
		gr := newGitRepo(t, "missing-revision", r, func(s *fleetv1alpha1.GitRepoSpec) {
			s.Branch, s.Revision = "", "0123456789abcdef0123456789abcdef01234567"
		})
		wantCondition(t, gr, fleetv1alpha1.ReasonRevisionNotFound, "0123456789abcdef0123456789abcdef01234567")
	})
	t.Run("credentials", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		r := newRepo(t, "private", true)
		c1 := r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", "private-cm", "one")})
		gr := newGitRepo(t, "private", r, nil)
		wantCondition(t, gr, fleetv1alpha1.ReasonAuthFailed, "refused")

		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "git-private"},
			Data: map[string][]byte{fleetv1alpha1.GitKeyUsername: []byte(gitUser), fleetv1alpha1.GitKeyPassword: []byte("wrong-password")}}
		if err := mgmt.Client.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), secret) })
		patchSpec(t, gr, func(s *fleetv1alpha1.GitRepoSpec) { s.ClientSecretName = secret.Name })
		got := wantCondition(t, gr, fleetv1alpha1.ReasonAuthFailed, "refused")
		if strings.Contains(fmt.Sprint(got.Status), "wrong-password") {
			t.Errorf("the password appears in the status: %+v", got.Status)
		}

		secret.Data[fleetv1alpha1.GitKeyPassword] = []byte(gitPassword)
		if err := mgmt.Client.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			if err := wantSynced(t, gr, c1, "private"); err != nil {
				return err
			}
			return wantDownstream(t, map[string]string{"default/private-cm": "one"})
		})
	})
	t.Run("bad YAML keeps the last good commit", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		r := newRepo(t, "bad-yaml", false)
		c1 := r.commit("good", map[string]string{"app/cm.yaml": configMapYAML("default", "bad-yaml", "one")})
		gr := newGitRepo(t, "bad-yaml", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Paths = []string{"app"} })
		name := gitrepo.BundleName("bad-yaml", "app")
		eventually(t, 60*time.Second, func() error {
			if err := wantSynced(t, gr, c1, name); err != nil {
				return err
			}
			return wantDownstream(t, map[string]string{"default/bad-yaml": "one"})
		})
		c2 := r.commit("broken", map[string]string{
			"app/cm.yaml":     configMapYAML("default", "bad-yaml", "two"),
			"app/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
		})
		got := wantCondition(t, gr, fleetv1alpha1.ReasonRenderFailed, "path app", "app/broken.yaml", c2)
		if got.Status.Commit != c1 {
			t.Errorf("status.commit moved to %s, want the last good commit %s", got.Status.Commit, c1)
		}
		if err := wantDownstream(t, map[string]string{"default/bad-yaml": "one"}); err != nil {
			t.Error(err)
		}
		b := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: name}, b); err != nil {
			t.Fatalf("the Bundle of the last good commit is gone: %v", err)
		}
		// What an operator sees without reading the status: an Event per commit deployed and
		// per failure (once, not once per poll), and the failure in the GitRepos gauge.
		deployed := gitRepoEvents(t, gr, fleetv1alpha1.EventGitRepoDeployed, c1)
		failed := gitRepoEvents(t, gr, fleetv1alpha1.EventGitRepoSyncFailed, "app/broken.yaml")
		if deployed[0].Type != corev1.EventTypeNormal || failed[0].Type != corev1.EventTypeWarning {
			t.Errorf("event types %s, %s: want Normal, Warning", deployed[0].Type, failed[0].Type)
		}
		if v := metricstest.Value(t, "drover_gitrepos", map[string]string{"state": "not_synced", "reason": fleetv1alpha1.ReasonRenderFailed}); v < 1 {
			t.Errorf("drover_gitrepos{state=not_synced,reason=RenderFailed} = %v, want at least this GitRepo", v)
		}
		if v := metricstest.Value(t, "drover_gitrepo_fetches_total", map[string]string{"result": "failed"}); v < 1 {
			t.Errorf("drover_gitrepo_fetches_total{result=failed} = %v, want this GitRepo's failed fetches", v)
		}
		// Polls of the same broken commit (every second here) record no new Event.
		polled := metricstest.Value(t, "drover_gitrepo_fetches_total", map[string]string{"result": "failed"})
		eventually(t, 30*time.Second, func() error {
			if n := metricstest.Value(t, "drover_gitrepo_fetches_total", map[string]string{"result": "failed"}); n < polled+3 {
				return fmt.Errorf("%v failed fetches since, want 3 more polls", n-polled)
			}
			return nil
		})
		if again := gitRepoEvents(t, gr, fleetv1alpha1.EventGitRepoSyncFailed, "app/broken.yaml"); len(again) != 1 || again[0].DeprecatedCount > 1 || (again[0].Series != nil && again[0].Series.Count > 1) {
			t.Errorf("SyncFailed events after more polls of the same commit: %d (%+v), want the one", len(again), again)
		}
	})
	t.Run("malformed drover.yaml", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, "bad-config", false)
		r.commit("typo", map[string]string{
			"app/cm.yaml":     configMapYAML("", "bad-config", "one"),
			"app/drover.yaml": "defaultNamespce: web\n",
		})
		gr := newGitRepo(t, "bad-config", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Paths = []string{"app"} })
		wantCondition(t, gr, fleetv1alpha1.ReasonRenderFailed, "app/drover.yaml", "defaultNamespce")
	})
	t.Run("password in the repo URL", func(t *testing.T) {
		t.Parallel()
		// A password or token in the URL would show wherever the URL does (status, events, drover
		// gitrepo list, the dashboard): the API server refuses it and says where it goes.
		for _, tc := range []struct {
			repo string
			ok   bool
		}{
			{"https://deploy:s3cr3t-token@git.example.com/org/apps.git", false},
			{"http://oauth2:s3cr3t-token@git.example.com:8080/org/apps.git", false},
			{"ssh://git:s3cr3t-token@git.example.com/org/apps.git", false},
			{"https://ghp_s3cr3t-token@git.example.com/org/apps.git", false},
			{"HTTPS://s3cr3t-token@git.example.com/org/apps.git", false},
			{"git://s3cr3t-token@git.example.com/org/apps.git", false},
			{"https://git.example.com/org/apps.git?private_token=s3cr3t-token", false},
			{"https://git.example.com:8443/org/apps@v2.git", true},
			{"ssh://git@git.example.com/org/apps.git", true},
			{"git@github.com:org/apps.git", true},
		} {
			gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "url-"},
				Spec: fleetv1alpha1.GitRepoSpec{Repo: tc.repo, Paused: true}}
			err := mgmt.Client.Create(t.Context(), gr)
			if tc.ok {
				if err != nil {
					t.Errorf("repo %s: %v, want accepted", tc.repo, err)
				}
				_ = mgmt.Client.Delete(context.Background(), gr)
				continue
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clientSecretName") {
				t.Errorf("repo %s: %v, want Invalid naming spec.clientSecretName", tc.repo, err)
			}
			// The refusal does not repeat the password (it would reach the client's terminal
			// and the API server's audit log).
			if err != nil && strings.Contains(err.Error(), "s3cr3t-token") {
				t.Errorf("repo %s: the refusal repeats the password: %v", tc.repo, err)
			}
		}
	})
}

// gitRepoEvents waits for Events with reason about gr whose note contains want, and returns them.
func gitRepoEvents(t *testing.T, gr *fleetv1alpha1.GitRepo, reason, want string) []eventsv1.Event {
	t.Helper()
	var out []eventsv1.Event
	eventually(t, 30*time.Second, func() error {
		var list eventsv1.EventList
		if err := mgmt.Client.List(t.Context(), &list, client.InNamespace(gr.Namespace)); err != nil {
			return err
		}
		out = slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Kind != "GitRepo" || e.Regarding.Name != gr.Name || e.Reason != reason || !strings.Contains(e.Note, want)
		})
		if len(out) == 0 {
			return fmt.Errorf("no %s Event about GitRepo %s with %q among %d", reason, gr.Name, want, len(list.Items))
		}
		return nil
	})
	return out
}

// patchSpec changes gr's spec with a merge patch.
func patchSpec(t *testing.T, gr *fleetv1alpha1.GitRepo, mutate func(*fleetv1alpha1.GitRepoSpec)) {
	t.Helper()
	cur, err := getGitRepo(t, gr)
	if err != nil {
		t.Fatal(err)
	}
	before := cur.DeepCopy()
	mutate(&cur.Spec)
	if err := mgmt.Client.Patch(t.Context(), cur, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// TestGitRepoOverSSH: an SSH repository needs the private key and the server's host key; a
// known_hosts with another key for the server is AuthFailed, one missing is ClientSecretInvalid.
func TestGitRepoOverSSH(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, "over-ssh", false)
	c1 := r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", "over-ssh", "one")})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "git-ssh"}, Type: corev1.SecretTypeSSHAuth,
		Data: map[string][]byte{corev1.SSHAuthPrivateKey: sshd.clientKey, fleetv1alpha1.GitKeyKnownHosts: []byte(sshd.otherKnownHosts)}}
	if err := mgmt.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), secret) })
	gr := newGitRepo(t, "over-ssh", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Repo, s.ClientSecretName = sshd.url("over-ssh"), secret.Name })
	wantCondition(t, gr, fleetv1alpha1.ReasonAuthFailed, "SSH")

	delete(secret.Data, fleetv1alpha1.GitKeyKnownHosts)
	if err := mgmt.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, gr, fleetv1alpha1.ReasonClientSecretInvalid, "known_hosts")

	secret.Data[fleetv1alpha1.GitKeyKnownHosts] = []byte(sshd.knownHosts)
	if err := mgmt.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if err := wantSynced(t, gr, c1, "over-ssh"); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"default/over-ssh": "one"})
	})
}

// TestGitRepoKustomize: a path with a kustomization.yaml is rendered with Kustomize — an overlay
// over a base elsewhere in the repository, with a configMapGenerator reading a non-YAML file.
func TestGitRepoKustomize(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, "kustomize", false)
	c1 := r.commit("overlay", map[string]string{
		"base/kustomization.yaml":           "resources: [namespace.yaml, cm.yaml]\n",
		"base/namespace.yaml":               namespaceYAML("kustomize-prod"),
		"base/cm.yaml":                      configMapYAML("kustomize-prod", "app", "base"),
		"overlays/prod/kustomization.yaml":  "resources: [../../base]\nnamePrefix: prod-\nconfigMapGenerator:\n- name: settings\n  namespace: kustomize-prod\n  files: [settings.properties]\n",
		"overlays/prod/settings.properties": "color=blue\n",
	})
	gr := newGitRepo(t, "kustomize", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Paths = []string{"overlays/*"} })
	eventually(t, 60*time.Second, func() error {
		if err := wantSynced(t, gr, c1, gitrepo.BundleName("kustomize", "overlays/prod")); err != nil {
			return err
		}
		if err := wantDownstream(t, map[string]string{"kustomize-prod/prod-app": "base"}); err != nil {
			return err
		}
		var cms corev1.ConfigMapList
		if err := plain.Client.List(ctx, &cms, client.InNamespace("kustomize-prod")); err != nil {
			return err
		}
		for _, cm := range cms.Items {
			if strings.HasPrefix(cm.Name, "prod-settings-") && cm.Data["settings.properties"] == "color=blue\n" {
				return nil
			}
		}
		return fmt.Errorf("no generated ConfigMap prod-settings-<hash> downstream")
	})
}

// TestGitRepoTag: an annotated tag deploys the commit it points to, not later commits of the
// branch.
func TestGitRepoTag(t *testing.T) {
	t.Parallel()
	r := newRepo(t, "tagged", false)
	c1 := r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", "tagged", "one")})
	r.tag("v1")
	r.commit("two", map[string]string{"cm.yaml": configMapYAML("default", "tagged", "two")})
	gr := newGitRepo(t, "tagged", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Branch, s.Tag = "", "v1" })
	eventually(t, 60*time.Second, func() error {
		if err := wantSynced(t, gr, c1, "tagged"); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"default/tagged": "one"})
	})
}

// TestGitRepoPausedAndRepair: a paused GitRepo does not follow new commits until it is
// resumed; a Bundle of the GitRepo deleted by hand is written back.
func TestGitRepoPausedAndRepair(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, "paused", false)
	c1 := r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", "paused", "one")})
	gr := newGitRepo(t, "paused", r, nil)
	eventually(t, 60*time.Second, func() error { return wantSynced(t, gr, c1, "paused") })

	patchSpec(t, gr, func(s *fleetv1alpha1.GitRepoSpec) { s.Paused = true })
	wantCondition(t, gr, fleetv1alpha1.ReasonPaused, "spec.paused")
	r.commit("two", map[string]string{"cm.yaml": configMapYAML("default", "paused", "two")})
	// Several polling intervals pass without the new commit being fetched.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		got, err := getGitRepo(t, gr)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Commit != c1 {
			t.Fatalf("a paused GitRepo moved to commit %s", got.Status.Commit)
		}
		time.Sleep(200 * time.Millisecond)
	}
	patchSpec(t, gr, func(s *fleetv1alpha1.GitRepoSpec) { s.Paused = false })
	c2 := r.git(r.work, "rev-parse", "HEAD")
	eventually(t, 30*time.Second, func() error {
		if err := wantSynced(t, gr, c2, "paused"); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"default/paused": "two"})
	})

	b := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "paused"}, b); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		got := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
			return err
		}
		if got.UID == b.UID {
			return fmt.Errorf("Bundle not deleted yet")
		}
		return nil
	})
}

// TestGitRepoUnreachable: a refused connection and a server that never answers are FetchFailed
// (the latter once the fetch timeout passes, without holding the controller).
func TestGitRepoUnreachable(t *testing.T) {
	t.Parallel()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String() + "/gone.git"
	_ = closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() }) // accepted, never answered
		}
	}()
	r := newRepo(t, "unreachable", false)
	refused := newGitRepo(t, "refused", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Repo = refusedURL })
	hanging := newGitRepo(t, "hanging", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Repo = "http://" + silent.Addr().String() + "/slow.git" })
	wantCondition(t, refused, fleetv1alpha1.ReasonFetchFailed, refusedURL)
	wantCondition(t, hanging, fleetv1alpha1.ReasonFetchFailed, "did not finish within "+fetchTimeout.String())
}

// TestGitRepoReactsWithoutPolling: with an hour between polls, a spec change re-renders at once
// (from the commit already read) and a Bundle deleted by hand is written back at once.
func TestGitRepoReactsWithoutPolling(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, "no-poll", false)
	c1 := r.commit("two apps", map[string]string{"apps/a/cm.yaml": configMapYAML("default", "no-poll-a", "one"),
		"apps/b/cm.yaml": configMapYAML("default", "no-poll-b", "one")})
	gr := newGitRepo(t, "no-poll", r, func(s *fleetv1alpha1.GitRepoSpec) {
		s.Paths, s.PollingInterval = []string{"apps/a"}, &metav1.Duration{Duration: time.Hour}
	})
	a, b := gitrepo.BundleName("no-poll", "apps/a"), gitrepo.BundleName("no-poll", "apps/b")
	eventually(t, 60*time.Second, func() error { return wantSynced(t, gr, c1, a) })

	patchSpec(t, gr, func(s *fleetv1alpha1.GitRepoSpec) { s.Paths = []string{"apps/*"} })
	eventually(t, 30*time.Second, func() error {
		if err := wantSynced(t, gr, c1, a, b); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"default/no-poll-b": "one"})
	})

	old := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: b}, old); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		got := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
			return err
		}
		if got.UID == old.UID {
			return fmt.Errorf("Bundle %s not deleted yet", b)
		}
		return nil
	})
}

// TestGitRepoPrivateCA: an HTTPS server whose certificate no system root signs is FetchFailed
// naming the certificate; its CA in the Secret's cacerts (the only key) makes it trusted.
func TestGitRepoPrivateCA(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ts := httptest.NewTLSServer(git.srv.Handler)
	t.Cleanup(ts.Close)
	r := newRepo(t, "private-ca", false)
	c1 := r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", "private-ca", "one")})
	gr := newGitRepo(t, "private-ca", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Repo = ts.URL + "/public/private-ca.git" })
	wantCondition(t, gr, fleetv1alpha1.ReasonFetchFailed, "certificate is not trusted", fleetv1alpha1.GitKeyCACerts)

	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "git-ca"}, Data: map[string][]byte{fleetv1alpha1.GitKeyCACerts: ca}}
	if err := mgmt.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), secret) })
	patchSpec(t, gr, func(s *fleetv1alpha1.GitRepoSpec) { s.ClientSecretName = secret.Name })
	eventually(t, 30*time.Second, func() error {
		if err := wantSynced(t, gr, c1, "private-ca"); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"default/private-ca": "one"})
	})
}

// TestGitRepoRedeploy: a GitRepo's spec.forceSyncGeneration (drover gitrepo redeploy) brings
// back a resource deleted downstream, through the Bundle and the agent; a Bundle's own
// (drover bundle redeploy) does too, and survives the GitRepo rewriting the Bundle for a new
// commit and a later GitRepo redeploy (which once reset it to the GitRepo's value).
func TestGitRepoRedeploy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, "redeploy", false)
	c1 := r.commit("one app", map[string]string{
		"app/ns.yaml": namespaceYAML("redeploy"),
		"app/cm.yaml": configMapYAML("redeploy", "cm", "one"),
	})
	gr := newGitRepo(t, "redeploy", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Paths = []string{"app"} })
	name := gitrepo.BundleName("redeploy", "app")
	eventually(t, 60*time.Second, func() error {
		if err := wantSynced(t, gr, c1, name); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"redeploy/cm": "one"})
	})
	bundleGen := func() int64 {
		t.Helper()
		b := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: name}, b); err != nil {
			t.Fatal(err)
		}
		return b.Spec.ForceSyncGeneration
	}
	deleteAndWaitBack := func(what string, redeploy func()) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "redeploy", Name: "cm"}}
		if err := plain.Client.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		redeploy()
		eventually(t, 30*time.Second, func() error {
			if err := wantDownstream(t, map[string]string{"redeploy/cm": "one"}); err != nil {
				return fmt.Errorf("after %s: %w", what, err)
			}
			return nil
		})
	}

	deleteAndWaitBack("a GitRepo redeploy", func() {
		patchSpec(t, gr, func(s *fleetv1alpha1.GitRepoSpec) { s.ForceSyncGeneration++ })
	})
	if g := bundleGen(); g != 1 {
		t.Errorf("Bundle forceSyncGeneration %d after one GitRepo redeploy, want 1", g)
	}

	deleteAndWaitBack("a Bundle redeploy", func() {
		b := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: name}, b); err != nil {
			t.Fatal(err)
		}
		before := b.DeepCopy()
		b.Spec.ForceSyncGeneration++
		if err := mgmt.Client.Patch(ctx, b, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	})

	c2 := r.commit("more", map[string]string{"app/cm2.yaml": configMapYAML("redeploy", "cm2", "two")})
	eventually(t, 30*time.Second, func() error {
		if err := wantSynced(t, gr, c2, name); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"redeploy/cm2": "two"})
	})
	if g := bundleGen(); g != 2 {
		t.Errorf("Bundle forceSyncGeneration %d after the GitRepo rewrote it, want 2 (the Bundle redeploy kept)", g)
	}

	deleteAndWaitBack("a second GitRepo redeploy", func() {
		patchSpec(t, gr, func(s *fleetv1alpha1.GitRepoSpec) { s.ForceSyncGeneration++ })
	})
	if g := bundleGen(); g != 3 {
		t.Errorf("Bundle forceSyncGeneration %d after the second GitRepo redeploy, want 3", g)
	}
}
