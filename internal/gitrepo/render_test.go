package gitrepo

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/helmchart"
)

func TestBundleName(t *testing.T) {
	for _, tc := range []struct{ repo, path, want string }{
		{"web", ".", "web"},
		{"web", "", "web"},
		{"web", "apps/api", "web-apps-api"},
		{"web", "./Apps/My_API/", "web-apps-my-api"},
	} {
		if got := BundleName(tc.repo, tc.path); got != tc.want {
			t.Errorf("BundleName(%q, %q) = %q, want %q", tc.repo, tc.path, got, tc.want)
		}
	}
	long := strings.Repeat("very-long-directory/", 5)
	a, b := BundleName("web", long+"a"), BundleName("web", long+"b")
	for _, n := range []string{a, b} {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("%q is not a DNS label: %v", n, errs)
		}
	}
	if a == b || a != BundleName("web", long+"a") {
		t.Errorf("long names must be stable and distinct: %q, %q", a, b)
	}
}

func testCheckout(files map[string]string) *checkout {
	co := &checkout{commit: "c0ffee", files: map[string][]byte{}, other: map[string][]byte{}}
	dirs := map[string]bool{".": true}
	for f, content := range files {
		if isManifestFile(f) || isKustomization(f[strings.LastIndex(f, "/")+1:]) {
			co.files[f] = []byte(content)
		} else {
			co.other[f] = []byte(content)
		}
		for d := f; strings.Contains(d, "/"); {
			d = d[:strings.LastIndex(d, "/")]
			dirs[d] = true
		}
	}
	for d := range dirs {
		co.dirs = append(co.dirs, d)
	}
	slices.Sort(co.dirs)
	return co
}

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"

func TestRender(t *testing.T) {
	co := testCheckout(map[string]string{
		"apps/a/cm.yaml":         cm + "---\n" + strings.Replace(cm, "name: x", "name: x2", 1) + "---\n",
		"apps/a/sub/cm.json":     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}`,
		"apps/a/.hidden/cm.yaml": "not: a manifest",
		"apps/b/drover.yaml":     "defaultNamespace: bee\ncorrectDrift: true\n",
		"apps/b/x.yml":           strings.Replace(cm, "name: x", "name: b", 1),
		"apps/c/drover.yaml":     "defaultNamespace: only-settings\n",
		"top.yaml":               cm,
	})
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"apps/*"}, Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "c"}}}}
	out, err := render(t.Context(), co, gr)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out {
		got = append(got, r.name+":"+r.path)
	}
	if want := []string{"r-apps-a:apps/a", "r-apps-b:apps/b"}; !slices.Equal(got, want) {
		t.Fatalf("bundles %v, want %v", got, want)
	}
	if n := len(out[0].spec.Resources); n != 3 {
		t.Errorf("apps/a: %d resources, want 3 (two documents and the JSON file; the hidden directory skipped)", n)
	}
	if s := out[1].spec; s.DefaultNamespace != "bee" || !s.CorrectDrift || len(s.Targets) != 1 {
		t.Errorf("apps/b spec %+v: want defaultNamespace bee, correctDrift, the GitRepo's targets", s)
	}

	// A redeploy of the GitRepo is one of each of its Bundles.
	gr.Spec.ForceSyncGeneration = 3
	if out, err = render(t.Context(), co, gr); err != nil {
		t.Fatal(err)
	}
	for _, r := range out {
		if r.spec.ForceSyncGeneration != 3 {
			t.Errorf("%s: forceSyncGeneration %d, want the GitRepo's 3", r.name, r.spec.ForceSyncGeneration)
		}
	}
	gr.Spec.ForceSyncGeneration = 0

	// The root and a deeper path: files belong to the deepest matching path.
	gr.Spec.Paths = []string{".", "apps/a"}
	out, err = render(t.Context(), co, gr)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].name != "r" || len(out[0].spec.Resources) != 2 || out[1].name != "r-apps-a" {
		t.Errorf("root + apps/a: %+v", out)
	}
}

func TestRenderErrorsNameTheFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		parts []string
	}{
		{"bad YAML", map[string]string{"app/bad.yaml": "kind: [x\n"}, []string{"path app", "app/bad.yaml", "document 1"}},
		{"no kind", map[string]string{"app/cm.yaml": cm + "---\napiVersion: v1\nmetadata: {name: y}\n"}, []string{"app/cm.yaml", "document 2", "kind"}},
		{"an object defined twice", map[string]string{"app/a.yaml": cm, "app/b.yaml": cm}, []string{"path app", "app/b.yaml", "ConfigMap x is defined in app/a.yaml too"}},
		{"unknown drover.yaml key", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "defaultNamespce: x\n"}, []string{"app/drover.yaml", `"defaultNamespce"`}},
		{"invalid defaultNamespace", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "defaultNamespace: Not_A_Name\n"}, []string{"app/drover.yaml", "defaultNamespace", "Not_A_Name"}},
		{"wrong type", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "correctDrift: [yes]\n"}, []string{"app/drover.yaml", "key correctDrift: want true or false, got an array"}},
		{"wrong type, a string", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "correctDrift: \"yes\"\n"}, []string{"app/drover.yaml", "key correctDrift: want true or false, got a string"}},
		{"invalid Chart.yaml", map[string]string{"app/Chart.yaml": "name: x\n"}, []string{"path app", "app/Chart.yaml", "version is required"}},
		{"chart template fails", withFiles(chartFiles("app"), map[string]string{"app/templates/bad.yaml": "{{ .Values.nope.deeper }}\n"}),
			[]string{"path app", "app/templates/bad.yaml", "does not render"}},
		{"helm key typo", withFiles(chartFiles("app"), map[string]string{"app/drover.yaml": "helm:\n  valueFiles: [x.yaml]\n"}),
			[]string{"app/drover.yaml", `"helm.valueFiles"`}},
		{"values file missing", withFiles(chartFiles("app"), map[string]string{"app/drover.yaml": "helm:\n  valuesFiles: [prod.yaml]\n"}),
			[]string{"app/drover.yaml", "helm.valuesFiles", "app/prod.yaml"}},
		{"chart dir without Chart.yaml", map[string]string{"app/drover.yaml": "helm:\n  chart: ../charts/web\n"},
			[]string{"app/drover.yaml", "helm.chart", "charts/web"}},
		{"dependsOn without name or selector", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "dependsOn:\n- {}\n"},
			[]string{"app/drover.yaml", "dependsOn[0]", "exactly one of name and selector"}},
		{"dependsOn bad name", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "dependsOn:\n- name: Not_A_Bundle\n"},
			[]string{"app/drover.yaml", "dependsOn[0].name", "Not_A_Bundle"}},
		{"OCI registry without a chart", map[string]string{"app/drover.yaml": "helm:\n  repo: oci://registry.example.com/charts\n"}, []string{"app/drover.yaml", "helm.repo oci://registry.example.com/charts needs helm.chart"}},
		{"OCI chart and a repo", map[string]string{"app/drover.yaml": "helm:\n  repo: https://charts.example.com\n  chart: oci://registry.example.com/web\n"}, []string{"app/drover.yaml", "leave helm.repo empty"}},
		{"Helm repository not HTTP", map[string]string{"app/drover.yaml": "helm:\n  repo: ftp://charts.example.com\n  chart: web\n"}, []string{"app/drover.yaml", "oci:// registry"}},
		{"repo without chart", map[string]string{"app/drover.yaml": "helm:\n  repo: https://charts.example.com\n"}, []string{"app/drover.yaml", "helm.repo needs helm.chart"}},
		{"bad release name", withFiles(chartFiles("app"), map[string]string{"app/drover.yaml": "helm:\n  releaseName: Web_1\n"}),
			[]string{"app/drover.yaml", "helm.releaseName", "Web_1"}},
		{"Kustomize error", map[string]string{"app/kustomization.yaml": "resources: [missing.yaml]\n"}, []string{"path app", "app/kustomization.yaml", "missing.yaml"}},
		{"remote base", map[string]string{"app/kustomization.yaml": "resources: [https://example.com/x.yaml]\n"}, []string{"app/kustomization.yaml", "remote", "https://example.com/x.yaml"}},
		{"negative maxUnavailable", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "rollout: {maxUnavailable: -1}\n"}, []string{"app/drover.yaml", "rollout.maxUnavailable", `"-1" is negative`}},
		{"maxUnavailable above 100%", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "rollout: {maxUnavailable: 150%}\n"}, []string{"app/drover.yaml", "rollout.maxUnavailable", "150%"}},
		{"maxUnavailable not a number", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "rollout: {maxUnavailable: some}\n"}, []string{"app/drover.yaml", "rollout.maxUnavailable", `"some" is not a number or a percentage`}},
		{"rollout key typo", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "rollout: {maxUnavailble: 1}\n"}, []string{"app/drover.yaml", `"rollout.maxUnavailble"`}},
		{"drover's own label", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "labels: {fleet.drover.io/gitrepo: x}\n"}, []string{"app/drover.yaml", "labels", "fleet.drover.io/gitrepo"}},
		{"bad label value", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "labels: {tier: not ok}\n"}, []string{"app/drover.yaml", "labels.tier", "not ok"}},
		{"every invalid key at once", map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "defaultNamespace: Not_A_Name\nrollout: {maxUnavailable: -1}\n" +
			"labels: {tier: not ok}\ntargetCustomizations:\n- name: a\n- clusterName: c\n"},
			[]string{"app/drover.yaml", "5 errors", "defaultNamespace", "rollout.maxUnavailable", "labels.tier", "targetCustomizations[0] (a)", "targetCustomizations[1].name: required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"app"}}}
			_, err := render(t.Context(), testCheckout(tc.files), gr)
			var se *syncError
			if !errors.As(err, &se) || se.reason != fleetv1alpha1.ReasonRenderFailed {
				t.Fatalf("got %v, want a RenderFailed error", err)
			}
			for _, p := range tc.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("%q does not name %q", err, p)
				}
			}
		})
	}
}

func TestEndpointRefusesLocalRepositories(t *testing.T) {
	for _, u := range []string{"file:///etc", "/var/lib/repo", "../repo"} {
		if _, err := endpoint(u); err == nil {
			t.Errorf("%s accepted: a GitRepo must not read drover's own file system", u)
		}
	}
	for _, u := range []string{"https://example.com/r.git", "git@example.com:org/r.git", "ssh://git@example.com:2222/r.git"} {
		if _, err := endpoint(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func TestRenderKustomize(t *testing.T) {
	co := testCheckout(map[string]string{
		"base/kustomization.yaml":           "resources: [cm.yaml]\n",
		"base/cm.yaml":                      cm,
		"overlays/prod/kustomization.yaml":  "resources: [../../base]\nnamePrefix: prod-\nconfigMapGenerator:\n- name: settings\n  files: [settings.properties]\n",
		"overlays/prod/settings.properties": "color=blue\n",
		"overlays/prod/drover.yaml":         "defaultNamespace: prod\n",
		"overlays/prod/ignored.yaml":        "not: a resource of the kustomization",
	})
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"overlays/*"}}}
	out, err := render(t.Context(), co, gr)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].spec.DefaultNamespace != "prod" {
		t.Fatalf("rendered %+v", out)
	}
	var names []string
	for _, r := range out[0].spec.Resources {
		names = append(names, string(r.Raw))
	}
	all := strings.Join(names, "\n")
	for _, want := range []string{`"name":"prod-x"`, `"name":"prod-settings-`, `color=blue`} {
		if !strings.Contains(all, want) {
			t.Errorf("kustomize output lacks %s:\n%s", want, all)
		}
	}
	if len(out[0].spec.Resources) != 2 {
		t.Errorf("%d resources, want 2 (the base ConfigMap and the generated one)", len(out[0].spec.Resources))
	}
}

// chartFiles is a small chart in dir: a ConfigMap "<release>-web" with data.color from the
// values (default blue) and data.size from values.size.
func chartFiles(dir string) map[string]string {
	return map[string]string{
		dir + "/Chart.yaml":             "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		dir + "/values.yaml":            "color: blue\nsize: 1\n",
		dir + "/templates/_helpers.tpl": `{{- define "web.name" -}}{{ .Release.Name }}-web{{- end -}}` + "\n",
		dir + "/templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"web.name\" . }}\ndata:\n  color: {{ .Values.color | quote }}\n  size: {{ .Values.size | quote }}\n",
	}
}

func withFiles(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestRenderHelm: a path with a Chart.yaml becomes a Bundle whose spec.helm holds the packaged
// chart, the merged values (valuesFiles in order, then values) and the release name; rendering
// the same commit twice gives the same spec (no rewrite of an unchanged chart).
func TestRenderHelm(t *testing.T) {
	files := withFiles(chartFiles("apps/web"), map[string]string{
		"apps/web/drover.yaml": "defaultNamespace: web\nhelm:\n  releaseName: frontend\n  valuesFiles: [prod.yaml, ../shared.yaml]\n  values:\n    size: 3\n",
		"apps/web/prod.yaml":   "color: green\nsize: 2\nextra: {a: 1}\n",
		"apps/shared.yaml":     "extra: {b: 2}\n",
		"apps/web/README.md":   "docs\n",
	})
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"apps/*"}}}
	out, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].spec.Helm == nil || len(out[0].spec.Resources) != 0 {
		t.Fatalf("rendered %+v, want one Helm Bundle", out)
	}
	h := out[0].spec.Helm
	if h.ReleaseName != "frontend" || out[0].spec.DefaultNamespace != "web" {
		t.Errorf("release %q namespace %q", h.ReleaseName, out[0].spec.DefaultNamespace)
	}
	if got := string(h.Values.Raw); got != `{"color":"green","extra":{"a":1,"b":2},"size":3}` {
		t.Errorf("values %s", got)
	}
	again, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	if specHash(&again[0].spec) != specHash(&out[0].spec) {
		t.Error("the same commit rendered twice gives another Bundle spec")
	}
}

// TestRenderHelmHidesSecretValues: a chart whose template fails quoting a password value is
// RenderFailed naming the template, without the password.
func TestRenderHelmHidesSecretValues(t *testing.T) {
	files := withFiles(chartFiles("app"), map[string]string{
		"app/templates/check.yaml": `{{ if ne .Values.db.password "ok" }}{{ fail (printf "password %s rejected" .Values.db.password) }}{{ end }}` + "\n",
		"app/drover.yaml":          "helm:\n  values:\n    db:\n      password: hunter2-very-secret\n",
	})
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"app"}}}
	_, err := render(t.Context(), testCheckout(files), gr)
	if err == nil || !strings.Contains(err.Error(), "app/templates/check.yaml") || !strings.Contains(err.Error(), "(redacted) rejected") {
		t.Fatalf("error %v, want RenderFailed naming app/templates/check.yaml with the password redacted", err)
	}
	if strings.Contains(err.Error(), "hunter2-very-secret") {
		t.Errorf("the password is in the message: %v", err)
	}
}

// TestRenderDependsOn: drover.yaml's dependsOn becomes the Bundle's spec.dependsOn.
// TestRenderRolloutAndLabels: drover.yaml's rollout becomes the Bundle's spec.rollout and its
// labels the Bundle's labels (what another path's dependsOn selector matches).
func TestRenderRolloutAndLabels(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         fleetv1alpha1.BundleRollout
		labels       map[string]string
	}{
		{"number and paused", "rollout: {maxUnavailable: 2, paused: true}\nlabels: {tier: web}\n",
			fleetv1alpha1.BundleRollout{Paused: true, MaxUnavailable: ptr.To(intstr.FromInt32(2))}, map[string]string{"tier": "web"}},
		{"percentage", "rollout:\n  maxUnavailable: 25%\n", fleetv1alpha1.BundleRollout{MaxUnavailable: ptr.To(intstr.FromString("25%"))}, nil},
		{"none", "defaultNamespace: web\n", fleetv1alpha1.BundleRollout{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderOne(t, map[string]string{"app/cm.yaml": cm, "app/drover.yaml": tc.config}, "app")
			if !equality.Semantic.DeepEqual(r.spec.Rollout, tc.want) || !maps.Equal(r.labels, tc.labels) {
				t.Errorf("rollout %+v labels %v, want %+v %v", r.spec.Rollout, r.labels, tc.want, tc.labels)
			}
		})
	}
}

func TestRenderDependsOn(t *testing.T) {
	files := map[string]string{
		"apps/db/cm.yaml":      cm,
		"apps/web/cm.yaml":     cm,
		"apps/web/drover.yaml": "dependsOn:\n- name: r-apps-db\n- selector: {matchLabels: {tier: crds}}\n",
	}
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"apps/*"}}}
	out, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || len(out[0].spec.DependsOn) != 0 {
		t.Fatalf("rendered %+v", out)
	}
	deps := out[1].spec.DependsOn
	if len(deps) != 2 || deps[0].Name != "r-apps-db" || deps[1].Selector == nil || deps[1].Selector.MatchLabels["tier"] != "crds" {
		t.Errorf("dependsOn %+v", deps)
	}
}

// TestRenderFleetHelmWithoutChart: a fleet.yaml's helm options on a path without a chart (no
// Chart.yaml, no helm.chart or helm.repo), as Fleet repositories set them since Fleet deploys
// every bundle as a Helm release, leave the path plain manifests and are named as not used; a
// drover.yaml's still fail the path.
func TestRenderFleetHelmWithoutChart(t *testing.T) {
	for _, tc := range []struct {
		name, file, settings string
		warn                 []string
		fails                bool
	}{
		{"takeOwnership", "fleet.yaml", "helm: {takeOwnership: true}\n", []string{"helm.takeOwnership"}, false},
		{"releaseName and values", "fleet.yaml", "helm:\n  releaseName: x\n  values: {a: 1}\n",
			[]string{"helm.releaseName (the path has no Helm chart", "helm.values (the path has no Helm chart"}, false},
		{"customization values", "fleet.yaml", "helm: {releaseName: x}\ntargetCustomizations:\n- name: p\n  clusterName: c\n  helm: {values: {a: 2}}\n",
			[]string{"helm.releaseName (", "targetCustomizations[0].helm (the path has no Helm chart"}, false},
		{"drover.yaml stays strict", "drover.yaml", "helm: {releaseName: x}\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"app"}}}
			out, err := render(t.Context(), testCheckout(map[string]string{"app/cm.yaml": cm, "app/" + tc.file: tc.settings}), gr)
			if tc.fails {
				if err == nil || !strings.Contains(err.Error(), "helm.chart: no Chart.yaml") {
					t.Fatalf("error %v, want helm.chart: no Chart.yaml", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 1 || out[0].spec.Helm != nil || len(out[0].spec.Resources) != 1 {
				t.Fatalf("rendered %+v, want one Bundle of plain manifests", out)
			}
			w := strings.Join(out[0].warnings, "\n")
			for _, part := range tc.warn {
				if !strings.Contains(w, part) {
					t.Errorf("warnings %q do not name %q", w, part)
				}
			}
		})
	}
}

// TestRenderHelmChartURL: helm.chart as the http(s) URL of a chart archive (Fleet allows it) is
// downloaded, with the helm Secret's credentials; what cannot be used fails naming helm.chart.
func TestRenderHelmChartURL(t *testing.T) {
	files := map[string][]byte{}
	for f, c := range chartFiles("x") {
		files[strings.TrimPrefix(f, "x/")] = []byte(c)
	}
	archive, err := helmchart.Package(files)
	if err != nil {
		t.Fatal(err)
	}
	var gotAuth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		gotAuth.Store(user)
		switch r.URL.Path {
		case "/web-0.1.0.tgz":
			_, _ = w.Write(archive)
		case "/big.tgz":
			_, _ = w.Write(make([]byte, helmchart.MaxArchiveSize+1))
		case "/junk.tgz":
			_, _ = w.Write([]byte("not a chart"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, fleet string
		access      *helmAccess
		err         []string
		user        string
	}{
		{"downloaded", "helm:\n  chart: " + srv.URL + "/web-0.1.0.tgz\n  values: {color: red}\n", nil, nil, ""},
		{"with credentials", "helm:\n  chart: " + srv.URL + "/web-0.1.0.tgz\n",
			&helmAccess{client: srv.Client(), creds: &helmchart.Credentials{Username: "u", Password: "p"}}, nil, "u"},
		{"credentials not for this URL", "helm:\n  chart: " + srv.URL + "/web-0.1.0.tgz\n",
			&helmAccess{client: srv.Client(), creds: &helmchart.Credentials{Username: "u", Password: "p"}, only: regexp.MustCompile(`^https://other/`)}, nil, ""},
		{"not found", "helm: {chart: " + srv.URL + "/missing.tgz}\n", nil, []string{"app/fleet.yaml", "helm.chart", "404"}, ""},
		{"too large", "helm: {chart: " + srv.URL + "/big.tgz}\n", nil, []string{"helm.chart", "more than"}, ""},
		{"not a chart", "helm: {chart: " + srv.URL + "/junk.tgz}\n", nil, []string{"helm.chart", "is not a chart archive"}, ""},
		{"with helm.repo", "helm: {chart: " + srv.URL + "/web-0.1.0.tgz, repo: " + srv.URL + "}\n", nil, []string{"helm.chart", "leave helm.repo empty"}, ""},
		{"with helm.version", "helm: {chart: " + srv.URL + "/web-0.1.0.tgz, version: 1.0.0}\n", nil, []string{"helm.version", "leave helm.version empty"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotAuth.Store("")
			co := testCheckout(map[string]string{"app/fleet.yaml": tc.fleet})
			co.helm = tc.access
			gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"app"}}}
			out, err := render(t.Context(), co, gr)
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, part := range tc.err {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not name %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 1 || out[0].spec.Helm == nil || !bytes.Equal(out[0].spec.Helm.Chart, archive) {
				t.Fatalf("rendered %+v, want the downloaded chart", out)
			}
			if got := gotAuth.Load(); got != tc.user {
				t.Errorf("user sent %q, want %q", got, tc.user)
			}
		})
	}
}

// TestRenderFleetTemplatesDirectory: as in Fleet, a fleet.yaml path without a chart but with a
// templates/ directory is a Helm release: its templates are rendered with the fleet.yaml's values
// (per target customization too), and the path's other manifests are deployed as they are, "{{"
// and all. Without a fleet.yaml the directory is plain manifests, as drover has always read it.
func TestRenderFleetTemplatesDirectory(t *testing.T) {
	files := map[string]string{
		"app/fleet.yaml": "defaultNamespace: apps\nhelm:\n  values:\n    port: 1883\n    user: emqx\n" +
			"targetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  helm: {values: {user: prod-user}}\n",
		"app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  port: '{{ .Values.port }}'\n  user: {{ .Values.user }}\n",
		"app/raw/plain.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  literal: '{{ not a template }}'\n",
	}
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"app"}}}
	out, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].spec.Helm == nil || len(out[0].spec.Resources) != 0 {
		t.Fatalf("rendered %+v, want one Bundle of a Helm release", out)
	}
	if w := strings.Join(out[0].warnings, "\n"); strings.Contains(w, "helm.values") {
		t.Errorf("helm.values reported as unused: %s", w)
	}
	h := out[0].spec.Helm
	var values map[string]any
	if err := json.Unmarshal(h.Values.Raw, &values); err != nil {
		t.Fatal(err)
	}
	got, err := helmchart.Render(t.Context(), h.Chart, values, h.ReleaseName, "apps")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: " + h.ReleaseName + "-cfg", "port: '1883'", "user: emqx", "name: plain", "literal: '{{ not a template }}'"} {
		if !strings.Contains(got, want) {
			t.Errorf("the release renders\n%s\nwithout %q", got, want)
		}
	}
	if tcs := out[0].spec.TargetCustomizations; len(tcs) != 1 || tcs[0].HelmValues == nil || !strings.Contains(string(tcs[0].HelmValues.Raw), `"user":"prod-user"`) {
		t.Errorf("target customizations %+v, want prod's values", tcs)
	}

	// No fleet.yaml: drover's own reading, plain manifests (the template fails to parse as one).
	delete(files, "app/fleet.yaml")
	files["app/templates/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  port: '{{ .Values.port }}'\n"
	out, err = render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].spec.Helm != nil || len(out[0].spec.Resources) != 2 {
		t.Fatalf("rendered %+v, want one Bundle of two plain manifests", out)
	}
}

// TestRenderHelmValuesFrom: a fleet.yaml's (or drover.yaml's) helm.valuesFrom goes to the
// Bundle for the agents to read downstream, is not reported as unused, and the commit-time
// chart check does not fail on a value only the cluster has; an entry naming nothing is an
// error naming the key.
func TestRenderHelmValuesFrom(t *testing.T) {
	files := withFiles(chartFiles("app"), map[string]string{
		"app/templates/db.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\ndata:\n  host: {{ required \"db.host comes from the cluster\" .Values.db.host | quote }}\n",
		"app/fleet.yaml":        "helm:\n  valuesFrom:\n  - configMapKeyRef: {name: site}\n  - secretKeyRef: {name: db, namespace: infra, key: values}\n",
	})
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"app"}}}
	out, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].spec.Helm == nil {
		t.Fatalf("rendered %+v, want one Helm Bundle", out)
	}
	want := []fleetv1alpha1.HelmValuesFrom{{ConfigMapKeyRef: &fleetv1alpha1.ValuesKeyRef{Name: "site"}},
		{SecretKeyRef: &fleetv1alpha1.ValuesKeyRef{Name: "db", Namespace: "infra", Key: "values"}}}
	if got := out[0].spec.Helm.ValuesFrom; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("valuesFrom %+v, want %+v", got, want)
	}
	if w := strings.Join(out[0].warnings, "\n"); strings.Contains(w, "valuesFrom") {
		t.Errorf("valuesFrom reported: %s", w)
	}

	// A customization's are added after the path's, for its clusters only; its chart check
	// does not fail on the value only those clusters have either.
	files["app/fleet.yaml"] = "targetCustomizations:\n- name: edge\n  clusterSelector: {matchLabels: {env: edge}}\n" +
		"  helm:\n    valuesFrom: [{secretKeyRef: {name: db}}]\n"
	files["app/templates/db.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\ndata:\n  host: {{ .Values.dbHost | default \"localhost\" | quote }}\n" +
		"  {{- if .Values.edge }}{{ required \"edge clusters have it\" .Values.dbHost }}{{ end }}\n"
	files["app/fleet.yaml"] += "    values: {edge: true}\n"
	out, err = render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	if tcs := out[0].spec.TargetCustomizations; len(tcs) != 1 || !equality.Semantic.DeepEqual(tcs[0].HelmValuesFrom, []fleetv1alpha1.HelmValuesFrom{{SecretKeyRef: &fleetv1alpha1.ValuesKeyRef{Name: "db"}}}) ||
		len(out[0].spec.Helm.ValuesFrom) != 0 {
		t.Errorf("customizations %+v, path valuesFrom %+v; want the customization's own", tcs, out[0].spec.Helm.ValuesFrom)
	}

	files["app/fleet.yaml"] = "helm:\n  valuesFrom:\n  - {}\n"
	if _, err := render(t.Context(), testCheckout(files), gr); err == nil || !strings.Contains(err.Error(), "app/fleet.yaml: helm.valuesFrom[0]: set configMapKeyRef or secretKeyRef") {
		t.Errorf("error %v, want one naming helm.valuesFrom[0]", err)
	}
}
