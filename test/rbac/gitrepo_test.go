package rbac

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/gitserve"
)

// TestGitRepoRights: drover server, as its ServiceAccount, syncs a GitRepo from a private
// repository (Debian's git http-backend behind basic auth): it reads the auth Secret, writes the
// Bundles owned by the GitRepo, patches the GitRepo's status and deletes the Bundle of a removed
// path, and is never refused.
// gitPassword is long enough for the suite's secret scan to look for it.
const gitPassword = "git-s3cret-0f9e8d7c6b5a"

func TestGitRepoRights(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := cluster.Namespace(t)
	root := t.TempDir()
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+root, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	bare, work := filepath.Join(root, "repos", "deploy.git"), filepath.Join(root, "work")
	run(root, "init", "--quiet", "--bare", "-b", "main", bare)
	run(root, "init", "--quiet", "-b", "main", work)
	commit := func(files map[string]string) string {
		for p, content := range files {
			full := filepath.Join(work, p)
			if content == "" {
				if err := os.RemoveAll(full); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(work, "add", "-A")
		run(work, "commit", "--quiet", "-m", "change")
		run(work, "push", "--quiet", bare, "HEAD:main")
		return run(work, "rev-parse", "HEAD")
	}
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: v\n"
	}
	c1 := commit(map[string]string{"a/cm.yaml": cm("a"), "b/cm.yaml": cm("b")})

	backend, err := gitserve.Handler(filepath.Join(root, "repos"), root)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "bot" || p != gitPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	if err := cluster.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-auth"},
		StringData: map[string]string{fleetv1alpha1.GitKeyUsername: "bot", fleetv1alpha1.GitKeyPassword: gitPassword}}); err != nil {
		t.Fatal(err)
	}
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deploy"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: srv.URL + "/deploy.git", Branch: "main", Paths: []string{"*"}, ClientSecretName: "git-auth",
			PollingInterval: &metav1.Duration{Duration: time.Second}, Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "nowhere"}}}}
	if err := cluster.Client.Create(ctx, gr); err != nil {
		t.Fatal(err)
	}
	synced := func(commit string, bundles ...string) error {
		got := &fleetv1alpha1.GitRepo{}
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(gr), got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionSynced); c == nil || c.Status != metav1.ConditionTrue || got.Status.Commit != commit {
			return fmt.Errorf("GitRepo not synced to %s: commit %q, %+v", commit, got.Status.Commit, c)
		}
		for _, name := range bundles {
			b := &fleetv1alpha1.Bundle{}
			if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
				return err
			}
			if !metav1.IsControlledBy(b, got) {
				return fmt.Errorf("Bundle %s not owned by the GitRepo", name)
			}
		}
		return nil
	}
	a, b := gitrepo.BundleName("deploy", "a"), gitrepo.BundleName("deploy", "b")
	eventually(t, 60*time.Second, func() error { return synced(c1, a, b) })
	c2 := commit(map[string]string{"b": ""})
	eventually(t, 60*time.Second, func() error {
		if err := synced(c2, a); err != nil {
			return err
		}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: b}, &fleetv1alpha1.Bundle{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Bundle %s of the removed path still there (%w)", b, err)
		}
		return nil
	})
	for _, req := range denied.list() {
		if strings.Contains(req, "/namespaces/"+ns+"/") || strings.Contains(req, "gitrepos") {
			t.Errorf("drover server was refused %s (add +kubebuilder:rbac markers and run make generate)", req)
		}
	}
}
