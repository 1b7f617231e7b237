package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/release"
	helmrepo "helm.sh/helm/v4/pkg/repo/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/gitrepo"
)

// webChart is a chart "web" of the given version: a ConfigMap "<release>-web" in the release
// namespace whose data.value comes from values.value (default "chart-default").
func webChart(dir, version string) map[string]string {
	return map[string]string{
		dir + "/Chart.yaml":             "apiVersion: v2\nname: web\nversion: " + version + "\n",
		dir + "/values.yaml":            "value: chart-default\n",
		dir + "/.helmignore":            "*.md\n",
		dir + "/README.md":              "left out of the package\n",
		dir + "/templates/_helpers.tpl": `{{- define "web.name" -}}{{ .Release.Name }}-web{{- end -}}` + "\n",
		dir + "/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"web.name\" . }}\n" +
			"  labels: {chart-version: {{ .Chart.Version | quote }}}\ndata:\n  value: {{ .Values.value | quote }}\n",
		dir + "/templates/NOTES.txt": "{{ .Release.Name }} installed\n",
	}
}

// helmDownstream is Helm's SDK against the downstream cluster, as `helm -n namespace
// --kubeconfig <the downstream cluster's kubeconfig>`.
func helmDownstream(t *testing.T, namespace string) *action.Configuration {
	t.Helper()
	return helmOn(t, plain, namespace)
}

// releaseState is what `helm list -a` and `helm history` say of a release: whether it is
// listed, and the statuses of its revisions, oldest first.
func releaseState(cfg *action.Configuration, name string) (listed bool, statuses []string, err error) {
	list := action.NewList(cfg)
	list.All = true
	rels, err := list.Run()
	if err != nil {
		return false, nil, err
	}
	for _, r := range rels {
		a, err := release.NewAccessor(r)
		if err != nil {
			return false, nil, err
		}
		listed = listed || a.Name() == name
	}
	if !listed {
		return false, nil, nil
	}
	hist, err := action.NewHistory(cfg).Run(name)
	if err != nil {
		return true, nil, err
	}
	for _, r := range hist {
		a, err := release.NewAccessor(r)
		if err != nil {
			return true, nil, err
		}
		statuses = append(statuses, a.Status())
	}
	return true, statuses, nil
}

// wantRelease waits for release name in namespace to be listed with the given revision
// statuses (oldest first) and the downstream ConfigMap "<name>-web" to hold value.
func wantRelease(t *testing.T, namespace, name string, statuses []string, value, chartVersion string) {
	t.Helper()
	cfg := helmDownstream(t, namespace)
	eventually(t, 60*time.Second, func() error {
		listed, got, err := releaseState(cfg, name)
		if err != nil {
			return err
		}
		if !listed {
			return fmt.Errorf("release %s not listed in %s", name, namespace)
		}
		if strings.Join(got, ",") != strings.Join(statuses, ",") {
			return fmt.Errorf("release %s history %v, want %v", name, got, statuses)
		}
		if err := wantDownstream(t, map[string]string{namespace + "/" + name + "-web": value}); err != nil {
			return err
		}
		if chartVersion != "" {
			cm, err := plain.Clientset.CoreV1().ConfigMaps(namespace).Get(t.Context(), name+"-web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if v := cm.Labels["chart-version"]; v != chartVersion {
				return fmt.Errorf("ConfigMap made by chart version %s, want %s", v, chartVersion)
			}
		}
		return nil
	})
}

// TestGitRepoHelmChart: a path with a Chart.yaml is installed downstream as a Helm release
// (listed by Helm's SDK, values from drover.yaml and a values file); a commit changing the
// values upgrades it (revision 2); a commit whose chart fails to render is RenderFailed naming
// the template, with revision 2 still deployed; removing the path uninstalls the release.
func TestGitRepoHelmChart(t *testing.T) {
	t.Parallel()
	const ns = "helm-local"
	r := newRepo(t, "helm-local", false)
	files := webChart("apps/web", "0.1.0")
	files["apps/web/drover.yaml"] = "defaultNamespace: " + ns + "\nhelm:\n  releaseName: frontend\n  valuesFiles: [prod-values.yaml]\n"
	files["apps/web/prod-values.yaml"] = "value: from-values-file\n"
	files["apps/plain/cm.yaml"] = configMapYAML("default", "helm-local-plain", "one")
	c1 := r.commit("chart", files)
	gr := newGitRepo(t, "helm-local", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Paths = []string{"apps/*"} })
	web, plainB := gitrepo.BundleName("helm-local", "apps/web"), gitrepo.BundleName("helm-local", "apps/plain")
	eventually(t, 90*time.Second, func() error { return wantSynced(t, gr, c1, plainB, web) })
	wantRelease(t, ns, "frontend", []string{"deployed"}, "from-values-file", "0.1.0")

	c2 := r.commit("new value", map[string]string{"apps/web/drover.yaml": "defaultNamespace: " + ns + "\nhelm:\n  releaseName: frontend\n  valuesFiles: [prod-values.yaml]\n  values:\n    value: inline-wins\n"})
	eventually(t, 60*time.Second, func() error { return wantSynced(t, gr, c2, plainB, web) })
	wantRelease(t, ns, "frontend", []string{"superseded", "deployed"}, "inline-wins", "")

	c3 := r.commit("broken template", map[string]string{"apps/web/templates/broken.yaml": "{{ .Values.nope.deeper }}\n",
		"apps/web/values.yaml": "value: chart-default\nnope: null\n"})
	got := wantCondition(t, gr, fleetv1alpha1.ReasonRenderFailed, "path apps/web", "apps/web/templates/broken.yaml", c3)
	if got.Status.Commit != c2 {
		t.Errorf("status.commit %s, want the last good commit %s", got.Status.Commit, c2)
	}
	wantRelease(t, ns, "frontend", []string{"superseded", "deployed"}, "inline-wins", "")

	c4 := r.commit("remove the chart", map[string]string{"apps/web": ""})
	eventually(t, 60*time.Second, func() error {
		if err := wantSynced(t, gr, c4, plainB); err != nil {
			return err
		}
		listed, _, err := releaseState(helmDownstream(t, ns), "frontend")
		if err != nil {
			return err
		}
		if listed {
			return fmt.Errorf("release frontend still listed after its path was removed")
		}
		return wantDownstream(t, map[string]string{ns + "/frontend-web": ""})
	})
}

// helmRepository serves an HTTP Helm repository made with Helm's SDK (as `helm package` and
// `helm repo index` do) holding chart web in the given versions.
func helmRepository(t *testing.T, versions ...string) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	for _, v := range versions {
		var files []*archive.BufferedFile
		for name, content := range webChart("", v) {
			files = append(files, &archive.BufferedFile{Name: strings.TrimPrefix(name, "/"), Data: []byte(content)})
		}
		c, err := loader.LoadFiles(files)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chartutil.Save(c, dir); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	idx, err := helmrepo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestGitRepoHelmRepository: drover.yaml names a chart of an HTTP Helm repository; the agent
// installs it as a release; moving helm.version upgrades the release to the other chart version.
func TestGitRepoHelmRepository(t *testing.T) {
	t.Parallel()
	const ns = "helm-remote"
	srv := helmRepository(t, "0.1.0", "0.2.0")
	r := newRepo(t, "helm-remote", false)
	cfg := func(version string) string {
		return "defaultNamespace: " + ns + "\nhelm:\n  repo: " + srv.URL + "\n  chart: web\n  version: " + version + "\n  values:\n    value: from-repo\n"
	}
	c1 := r.commit("repo chart", map[string]string{"web/drover.yaml": cfg("0.1.0")})
	gr := newGitRepo(t, "helm-remote", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Paths = []string{"web"} })
	name := gitrepo.BundleName("helm-remote", "web")
	eventually(t, 90*time.Second, func() error { return wantSynced(t, gr, c1, name) })
	wantRelease(t, ns, name, []string{"deployed"}, "from-repo", "0.1.0")

	c2 := r.commit("chart 0.2.0", map[string]string{"web/drover.yaml": cfg("~0.2")})
	eventually(t, 60*time.Second, func() error { return wantSynced(t, gr, c2, name) })
	wantRelease(t, ns, name, []string{"superseded", "deployed"}, "from-repo", "0.2.0")

	r.commit("missing version", map[string]string{"web/drover.yaml": cfg("9.9.9")})
	got := wantCondition(t, gr, fleetv1alpha1.ReasonRenderFailed, "web/drover.yaml", "helm.chart web", "9.9.9")
	if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionSynced); c != nil && strings.Contains(c.Message, "from-repo") {
		t.Errorf("values in the condition: %s", c.Message)
	}
	wantRelease(t, ns, name, []string{"superseded", "deployed"}, "from-repo", "0.2.0")
}
