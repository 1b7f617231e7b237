package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/gitserve"
	"github.com/droverhq/drover/test/envtest"
)

// gitWork is a Git repository served by Debian's git over smart HTTP (git http-backend behind
// net/http/cgi, on loopback) and a working copy of it.
type gitWork struct {
	t          *testing.T
	root, work string
	url        string
}

func newGitWork(t *testing.T) *gitWork {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("this test needs git (apt-get install git): %v", err)
	}
	g := &gitWork{t: t, root: t.TempDir()}
	g.work = filepath.Join(g.root, "work")
	g.git(g.root, "init", "--quiet", "--bare", "-b", "main", filepath.Join(g.root, "repos", "deploy.git"))
	g.git(g.root, "init", "--quiet", "-b", "main", g.work)
	g.git(g.work, "remote", "add", "origin", filepath.Join(g.root, "repos", "deploy.git"))
	backend, err := gitserve.Handler(filepath.Join(g.root, "repos"), g.root)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	g.url = srv.URL + "/deploy.git"
	return g
}

func (g *gitWork) git(dir string, args ...string) string {
	g.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+g.root, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// write changes the working copy: path → content, "" removes the path.
func (g *gitWork) write(files map[string]string) {
	g.t.Helper()
	writeFiles(g.t, g.work, files)
}

// commit commits the working copy, pushes it to main and returns the commit.
func (g *gitWork) commit(msg string) string {
	g.t.Helper()
	g.git(g.work, "add", "-A")
	g.git(g.work, "commit", "--quiet", "-m", msg)
	g.git(g.work, "push", "--quiet", "origin", "HEAD:main")
	return g.git(g.work, "rev-parse", "HEAD")
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
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
}

// startBundleControllers runs drover's GitRepo and bundle controllers on the namespaces given
// (only those, so other tests' objects are left alone) until the test ends.
func startBundleControllers(t *testing.T, namespaces ...string) {
	t.Helper()
	ns := map[string]cache.Config{}
	for _, n := range namespaces {
		ns[n] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{Scheme: mgmt.Client.Scheme(), Logger: logr.Discard(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: cache.Options{DefaultNamespaces: ns}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.Setup(mgr, bundle.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := gitrepo.Controllers()(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// waitDeployed waits until the bundle controller has pointed cluster namespace cns's
// BundleDeployment name at content and returns the content's name.
func waitDeployed(t *testing.T, cns, name, notName string) string {
	t.Helper()
	var content string
	envtest.Eventually(t, 30*time.Second, func() error {
		bd := &fleetv1alpha1.BundleDeployment{}
		if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: cns, Name: name}, bd); err != nil {
			return err
		}
		if bd.Spec.Content == nil || bd.Spec.Content.Name == notName {
			return fmt.Errorf("BundleDeployment %s/%s not (re)deployed yet: %+v", cns, name, bd.Spec.Content)
		}
		content = bd.Spec.Content.Name
		return nil
	})
	return content
}

const (
	diffSettings = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n  size: large\n  shape: round\n  mood: calm\n"
	diffOld      = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\ndata:\n  k: v\n"
	diffSecret   = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: hunter2\n  user: admin\n"
	diffSvc      = "apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  ports:\n  - port: 80\n"
	diffNS       = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n"

	diffChart       = "apiVersion: v2\nname: web\nversion: VERSION\n"
	diffChartCM     = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  color: {{ .Values.color }}\n"
	diffChartSecret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-db\nstringData:\n  password: {{ .Values.password }}\n"
)

// TestBundleDiff: a GitRepo's Bundle deployed by the real GitRepo and bundle controllers to a
// Cluster, compared with local checkouts and revisions of the repository (served by git
// http-backend): identical content is exit 0 and "no differences", whichever way the directory
// is given; one changed field, one added and one removed object are exactly what the diff
// shows (exit 1), a Secret's change only as a redacted marker; --revision clones the repository
// at a branch or commit; bad input names the thing and how to fix it.
func TestBundleDiff(t *testing.T) {
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns, cns := mgmt.Namespace(t), mgmt.Namespace(t)
	startBundleControllers(t, ns, cns)

	g := newGitWork(t)
	g.write(map[string]string{
		"web/drover.yaml": "defaultNamespace: web\n", "web/ns.yaml": diffNS, "web/settings.yaml": diffSettings,
		"web/old.yaml": diffOld, "web/secret.yaml": diffSecret, "README.md": "deploy\n",
		"chart/Chart.yaml": strings.Replace(diffChart, "VERSION", "0.1.0", 1), "chart/values.yaml": "color: blue\npassword: hunter2\n",
		"chart/drover.yaml": "defaultNamespace: charts\n", "chart/templates/cm.yaml": diffChartCM, "chart/templates/secret.yaml": diffChartSecret,
	})
	first := g.commit("first")

	for _, cl := range []*fleetv1alpha1.Cluster{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-1", Labels: map[string]string{"env": "prod"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lab", Labels: map[string]string{"env": "lab"}}},
	} {
		if err := mgmt.Client.Create(ctx, cl); err != nil {
			t.Fatal(err)
		}
		if cl.Name == "edge-1" {
			cl.Status.Namespace = cns
			if err := mgmt.Client.Status().Update(ctx, cl); err != nil {
				t.Fatal(err)
			}
		}
	}
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: g.url, Branch: "main", Paths: []string{"web", "chart"},
			PollingInterval: &metav1.Duration{Duration: time.Hour},
			Targets:         []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}}}
	if err := mgmt.Client.Create(ctx, gr); err != nil {
		t.Fatal(err)
	}
	content := waitDeployed(t, cns, "apps-web", "")

	diff := func(args ...string) (string, string, error) {
		return drover(ctx, append(append([]string{"bundle", "diff"}, args...), "--kubeconfig", kc, "-n", ns)...)
	}
	// stable replaces what differs between runs, for the goldens.
	stable := func(s string) string {
		return strings.NewReplacer(g.root, "ROOT", cns, "CLUSTER-NS", ns, "NS", g.url, "URL", first, "FIRST").Replace(s)
	}
	pathOnly := t.TempDir() // a copy of the path alone, outside any checkout

	t.Run("identical", func(t *testing.T) {
		writeFiles(t, pathOnly, map[string]string{"drover.yaml": "defaultNamespace: web\n", "ns.yaml": diffNS, "settings.yaml": diffSettings,
			"old.yaml": diffOld, "secret.yaml": diffSecret})
		for _, dir := range []string{filepath.Join(g.work, "web"), g.work, pathOnly} {
			out, errOut, err := diff("apps-web", "--cluster", "edge-1", "-f", dir)
			if err != nil || ExitCode(err) != ExitOK {
				t.Fatalf("-f %s: exit %d (%v), want 0\n%s%s", dir, ExitCode(err), err, out, errOut)
			}
			if !strings.HasPrefix(out, "Bundle "+ns+"/apps-web on cluster edge-1: no differences (4 objects)\n") {
				t.Errorf("-f %s:\n%s", dir, out)
			}
			if dir == g.work {
				golden(t, "bundle-diff-none", stable(out))
			}
		}
	})

	g.write(map[string]string{
		"web/settings.yaml": strings.Replace(diffSettings, "blue", "green", 1),
		"web/secret.yaml":   strings.Replace(diffSecret, "hunter2", "hunter3", 1),
		"web/old.yaml":      "",
		"web/svc.yaml":      diffSvc,
	})
	writeFiles(t, pathOnly, map[string]string{"settings.yaml": strings.Replace(diffSettings, "blue", "green", 1),
		"secret.yaml": strings.Replace(diffSecret, "hunter2", "hunter3", 1), "old.yaml": "", "svc.yaml": diffSvc})
	want := bundleDiff{
		Changed: []objectRef{{"v1", "ConfigMap", "web", "settings"}, {"v1", "Secret", "web", "creds"}},
		Added:   []objectRef{{"v1", "Service", "web", "api"}},
		Removed: []objectRef{{"v1", "ConfigMap", "web", "old"}},
	}
	checkJSON := func(t *testing.T, out string, want bundleDiff) {
		t.Helper()
		var got bundleDiff
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(got.Changed, want.Changed) || !reflect.DeepEqual(got.Added, want.Added) || !reflect.DeepEqual(got.Removed, want.Removed) ||
			got.Unchanged != 1 || len(got.Options) != 0 {
			t.Errorf("changed %v added %v removed %v unchanged %d options %v;\nwant changed %v added %v removed %v unchanged 1",
				got.Changed, got.Added, got.Removed, got.Unchanged, got.Options, want.Changed, want.Added, want.Removed)
		}
	}

	t.Run("changes", func(t *testing.T) {
		for _, dir := range []string{filepath.Join(g.work, "web"), g.work, pathOnly} {
			out, errOut, err := diff("apps-web", "--cluster", "edge-1", "-f", dir)
			if ExitCode(err) != ExitDiffers || errOut != "" {
				t.Fatalf("-f %s: exit %d (%v), want %d and nothing on stderr\n%s%s", dir, ExitCode(err), err, ExitDiffers, out, errOut)
			}
			for _, secret := range []string{"hunter2", "hunter3"} {
				if strings.Contains(out, secret) {
					t.Errorf("-f %s: the output shows the Secret's value %q:\n%s", dir, secret, out)
				}
			}
			for _, line := range []string{"-  password: (redacted, before)\n", "+  password: (redacted, after)\n", "   user: (redacted)\n",
				"-  color: blue\n", "+  color: green\n", "--- /dev/null\n+++ proposed/v1.Service.web.api\n", "--- deployed/v1.ConfigMap.web.old\n+++ /dev/null\n"} {
				if !strings.Contains(out, line) {
					t.Errorf("-f %s: the diff lacks %q:\n%s", dir, line, out)
				}
			}
			if dir == filepath.Join(g.work, "web") {
				golden(t, "bundle-diff", stable(out))
			}
			out, _, err = diff("apps-web", "--cluster", "edge-1", "-f", dir, "-o", "json")
			if ExitCode(err) != ExitDiffers {
				t.Fatalf("-o json: exit %d (%v), want %d", ExitCode(err), err, ExitDiffers)
			}
			checkJSON(t, out, want)
		}
	})

	t.Run("helm chart", func(t *testing.T) {
		waitDeployed(t, cns, "apps-chart", "")
		out, errOut, err := diff("apps-chart", "--cluster", "edge-1", "-f", filepath.Join(g.work, "chart"))
		if err != nil || !strings.Contains(out, "no differences (2 objects)") {
			t.Fatalf("unchanged chart: exit %d (%v)\n%s%s", ExitCode(err), err, out, errOut)
		}
		g.write(map[string]string{"chart/values.yaml": "color: green\npassword: hunter3\n", "chart/Chart.yaml": strings.Replace(diffChart, "VERSION", "0.2.0", 1)})
		out, errOut, err = diff("apps-chart", "--cluster", "edge-1", "-f", filepath.Join(g.work, "chart"))
		if ExitCode(err) != ExitDiffers {
			t.Fatalf("changed values: exit %d (%v)\n%s%s", ExitCode(err), err, out, errOut)
		}
		for _, want := range []string{"changed: v1 ConfigMap charts/apps-chart-cfg\n", "changed: v1 Secret charts/apps-chart-db\n",
			"option:  helm chart: web 0.1.0 -> web 0.2.0\n", "-  color: blue\n+  color: green\n", "-  password: (redacted, before)\n+  password: (redacted, after)\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("the diff lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "hunter") || strings.Contains(out, "added:") || strings.Contains(out, "removed:") {
			t.Errorf("the diff shows a value of the Secret, or objects added or removed:\n%s", out)
		}
	})

	second := g.commit("second")
	t.Run("revision", func(t *testing.T) {
		for _, rev := range []string{"main", second, second[:10]} {
			out, errOut, err := diff("apps-web", "--cluster", "edge-1", "--revision", rev, "-o", "json")
			if ExitCode(err) != ExitDiffers {
				t.Fatalf("--revision %s: exit %d (%v), want %d\n%s%s", rev, ExitCode(err), err, ExitDiffers, out, errOut)
			}
			checkJSON(t, out, want)
			if !strings.Contains(out, `"commit": "`+second+`"`) {
				t.Errorf("--revision %s: the summary does not name commit %s:\n%s", rev, second, out)
			}
		}
		out, errOut, err := diff("apps-web", "--cluster", "edge-1", "--revision", first)
		if err != nil || !strings.Contains(out, "no differences") || !strings.Contains(out, "commit "+first) {
			t.Fatalf("--revision of the deployed commit: %v\n%s%s", err, out, errOut)
		}
		_, _, err = diff("apps-web", "--cluster", "edge-1", "--revision", "no-such-branch")
		if ExitCode(err) != ExitDiffFailed || !strings.Contains(err.Error(), "revision no-such-branch not found in "+g.url) {
			t.Errorf("--revision of nothing: exit %d, %v", ExitCode(err), err)
		}
	})

	t.Run("the controller agrees", func(t *testing.T) {
		// Once the GitRepo follows the second commit, what edge-1 runs is what the diff showed.
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(gr), gr); err != nil {
			t.Fatal(err)
		}
		gr.Annotations = map[string]string{"fleet.drover.io/fetch-requested": "now"}
		if err := mgmt.Client.Update(ctx, gr); err != nil {
			t.Fatal(err)
		}
		waitDeployed(t, cns, "apps-web", content)
		out, errOut, err := diff("apps-web", "--cluster", "edge-1", "-f", filepath.Join(g.work, "web"))
		if err != nil || !strings.Contains(out, "no differences (4 objects)") {
			t.Fatalf("after the sync: %v\n%s%s", err, out, errOut)
		}
	})

	t.Run("applied bundle", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"settings.yaml": diffSettings, "old.yaml": diffOld})
		if out, errOut, err := drover(ctx, "bundle", "apply", "-f", dir, "--name", "plain", "--cluster", "edge-1", "--kubeconfig", kc, "-n", ns); err != nil {
			t.Fatalf("apply: %v\n%s%s", err, out, errOut)
		}
		waitDeployed(t, cns, "plain", "")
		if out, _, err := diff("plain", "--cluster", "edge-1", "-f", dir); err != nil || !strings.Contains(out, "no differences (2 objects)") {
			t.Fatalf("unchanged directory: %v\n%s", err, out)
		}
		writeFiles(t, dir, map[string]string{"settings.yaml": strings.Replace(diffSettings, "blue", "green", 1), "old.yaml": "", "svc.yaml": diffSvc})
		out, _, err := diff("plain", "--cluster", "edge-1", "-f", dir, "-o", "json")
		if ExitCode(err) != ExitDiffers {
			t.Fatalf("exit %d (%v)\n%s", ExitCode(err), err, out)
		}
		var got bundleDiff
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		// Without a defaultNamespace the agent puts them in "default".
		if fmt.Sprint(got.Changed, got.Added, got.Removed) != "[v1 ConfigMap default/settings] [v1 Service default/api] [v1 ConfigMap default/old]" {
			t.Errorf("changed %v added %v removed %v", got.Changed, got.Added, got.Removed)
		}
		if _, _, err := diff("plain", "--cluster", "edge-1", "--revision", "main"); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "-f DIR") {
			t.Errorf("--revision of an applied Bundle: exit %d, %v", ExitCode(err), err)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		bad := t.TempDir()
		writeFiles(t, bad, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: {}\n"})
		if err := mgmt.Client.Create(ctx, &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private"},
			Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/private.git", ClientSecretName: "git-auth", Paused: true,
				Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "edge-1"}}}}); err != nil {
			t.Fatal(err)
		}
		if err := mgmt.Client.Create(ctx, &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private",
			Labels: map[string]string{fleetv1alpha1.GitRepoNameLabel: "private"}},
			Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "edge-1"}}}}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			args []string
			code int
			msg  []string
		}{
			{"unknown bundle", []string{"nosuch", "--cluster", "edge-1", "-f", g.work}, ExitDiffFailed,
				[]string{`bundle "nosuch" not found in namespace ` + ns, "drover bundle list -n " + ns}},
			{"unknown cluster", []string{"apps-web", "--cluster", "nosuch", "-f", g.work}, ExitDiffFailed,
				[]string{`cluster "nosuch" not found in namespace ` + ns, "drover fleet list -n " + ns}},
			{"cluster not targeted", []string{"apps-web", "--cluster", "lab", "-f", g.work}, ExitDiffFailed,
				[]string{"bundle apps-web does not target cluster lab", "env=prod", "drover bundle status apps-web"}},
			{"malformed directory", []string{"apps-web", "--cluster", "edge-1", "-f", bad}, ExitDiffFailed,
				[]string{"path web: web/cm.yaml: document 1: apiVersion, kind and metadata.name are required"}},
			{"missing directory", []string{"apps-web", "--cluster", "edge-1", "-f", filepath.Join(bad, "nope")}, ExitDiffFailed,
				[]string{"nope: no such file or directory"}},
			{"credentials", []string{"private", "--cluster", "edge-1", "--revision", "main"}, ExitDiffFailed,
				[]string{"credentials of Secret git-auth", "pass -f DIR"}},
			{"both sources", []string{"apps-web", "--cluster", "edge-1", "-f", g.work, "--revision", "main"}, ExitUsage,
				[]string{"either -f DIR"}},
			{"no source", []string{"apps-web", "--cluster", "edge-1"}, ExitUsage, []string{"either -f DIR"}},
			{"no cluster", []string{"apps-web", "-f", g.work}, ExitUsage, []string{`"cluster" not set`}},
			{"bad output", []string{"apps-web", "--cluster", "edge-1", "-f", g.work, "-o", "yaml"}, ExitUsage, []string{"-o yaml"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out, _, err := diff(tt.args...)
				if ExitCode(err) != tt.code {
					t.Fatalf("exit %d (%v), want %d\n%s", ExitCode(err), err, tt.code, out)
				}
				for _, m := range tt.msg {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not say %q", err, m)
					}
				}
			})
		}
	})
}

// TestBundleDiffCustomization: the diff is for the chosen cluster. A chart path whose
// targetCustomizations give gold clusters other values: each cluster's unchanged checkout is "no
// differences" (its own customization, not the path's defaults, is what it runs), and a change
// to the gold customization's values shows on the gold cluster and not on the other one.
func TestBundleDiffCustomization(t *testing.T) {
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns, goldNS, stdNS := mgmt.Namespace(t), mgmt.Namespace(t), mgmt.Namespace(t)
	startBundleControllers(t, ns, goldNS, stdNS)

	tiers := func(gold string) string {
		return "defaultNamespace: charts\ntargetCustomizations:\n- name: gold\n  clusterSelector: {matchLabels: {tier: gold}}\n" +
			"  helm: {values: {color: " + gold + "}}\n"
	}
	g := newGitWork(t)
	g.write(map[string]string{
		"chart/Chart.yaml": strings.Replace(diffChart, "VERSION", "0.1.0", 1), "chart/values.yaml": "color: blue\npassword: hunter2\n",
		"chart/drover.yaml": tiers("gold"), "chart/templates/cm.yaml": diffChartCM,
	})
	g.commit("first")
	for name, cns := range map[string]string{"gold-1": goldNS, "std-1": stdNS} {
		tier := strings.TrimSuffix(name, "-1")
		cl := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"env": "prod", "tier": tier}}}
		if err := mgmt.Client.Create(ctx, cl); err != nil {
			t.Fatal(err)
		}
		cl.Status.Namespace = cns
		if err := mgmt.Client.Status().Update(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	if err := mgmt.Client.Create(ctx, &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: g.url, Branch: "main", Paths: []string{"chart"}, PollingInterval: &metav1.Duration{Duration: time.Hour},
			Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}}}); err != nil {
		t.Fatal(err)
	}
	goldContent, stdContent := waitDeployed(t, goldNS, "apps-chart", ""), waitDeployed(t, stdNS, "apps-chart", "")
	if goldContent == stdContent {
		t.Fatalf("gold-1 and std-1 run the same content %s: the customization was not applied", goldContent)
	}

	diff := func(cluster string) (string, error) {
		out, errOut, err := drover(ctx, "bundle", "diff", "apps-chart", "--cluster", cluster, "-f", filepath.Join(g.work, "chart"), "--kubeconfig", kc, "-n", ns)
		return out + errOut, err
	}
	for _, cluster := range []string{"gold-1", "std-1"} {
		if out, err := diff(cluster); err != nil || !strings.Contains(out, "on cluster "+cluster+": no differences (1 objects)") {
			t.Errorf("%s, unchanged checkout: exit %d (%v), want no differences\n%s", cluster, ExitCode(err), err, out)
		}
	}

	g.write(map[string]string{"chart/drover.yaml": tiers("platinum")})
	out, err := diff("gold-1")
	if ExitCode(err) != ExitDiffers || !strings.Contains(out, "changed: v1 ConfigMap charts/apps-chart-cfg\n") ||
		!strings.Contains(out, "-  color: gold\n+  color: platinum\n") {
		t.Errorf("gold-1, gold customization changed: exit %d (%v), want %d with color gold → platinum\n%s", ExitCode(err), err, ExitDiffers, out)
	}
	if out, err := diff("std-1"); err != nil || !strings.Contains(out, "no differences") {
		t.Errorf("std-1, only the gold customization changed: exit %d (%v), want no differences\n%s", ExitCode(err), err, out)
	}
}
