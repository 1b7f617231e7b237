package gitrepo

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
)

func renderOne(t *testing.T, files map[string]string, paths ...string) rendered {
	t.Helper()
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: paths}}
	out, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("rendered %d Bundles, want 1: %+v", len(out), out)
	}
	return out[0]
}

// TestRenderHelmTargetCustomizations: a customization's helm valuesFiles and values are merged
// over the path's (valuesFiles, values) into its complete values; one without helm keeps the
// path's values; names, selectors and namespaces are carried in order, so the first match wins
// on the Bundle as in drover.yaml.
func TestRenderHelmTargetCustomizations(t *testing.T) {
	files := withFiles(chartFiles("web"), map[string]string{
		"web/drover.yaml": `defaultNamespace: web
helm:
  valuesFiles: [common.yaml]
  values: {size: 2}
targetCustomizations:
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  defaultNamespace: web-prod
  helm:
    valuesFiles: [values-prod.yaml]
    values: {extra: {b: 2}}
- name: prod-eu
  clusterSelector: {matchLabels: {env: prod, region: eu}}
  helm: {values: {color: never}}
- name: c1
  clusterName: c1
  defaultNamespace: only-namespace
`,
		"web/common.yaml":      "color: green\nextra: {a: 1}\n",
		"web/values-prod.yaml": "color: red\nsize: 5\n",
	})
	r := renderOne(t, files, "web")
	if got := string(r.spec.Helm.Values.Raw); got != `{"color":"green","extra":{"a":1},"size":2}` {
		t.Errorf("path values %s", got)
	}
	tcs := r.spec.TargetCustomizations
	if len(tcs) != 3 || tcs[0].Name != "prod" || tcs[1].Name != "prod-eu" || tcs[2].Name != "c1" {
		t.Fatalf("customizations %+v", tcs)
	}
	if got := string(tcs[0].HelmValues.Raw); got != `{"color":"red","extra":{"a":1,"b":2},"size":5}` {
		t.Errorf("prod values %s: want the path's, then values-prod.yaml, then values", got)
	}
	if tcs[0].DefaultNamespace != "web-prod" || tcs[0].ClusterSelector.MatchLabels["env"] != "prod" {
		t.Errorf("prod %+v", tcs[0])
	}
	if tcs[2].HelmValues != nil || tcs[2].ClusterName != "c1" || tcs[2].DefaultNamespace != "only-namespace" {
		t.Errorf("c1 %+v: no values of its own", tcs[2])
	}
	// The path's values are not changed by the customizations' merges.
	if got := string(r.spec.Helm.Values.Raw); got != `{"color":"green","extra":{"a":1},"size":2}` {
		t.Errorf("path values after customizations %s", got)
	}
	// A change of a customization changes its values only: the chart (packaged without
	// drover.yaml) and the path's values stay, so the other clusters get no new version.
	files["web/drover.yaml"] = strings.Replace(files["web/drover.yaml"], "extra: {b: 2}", "extra: {b: 3}", 1)
	again := renderOne(t, files, "web")
	if !bytes.Equal(again.spec.Helm.Chart, r.spec.Helm.Chart) || string(again.spec.Helm.Values.Raw) != string(r.spec.Helm.Values.Raw) {
		t.Error("changing a customization's values changed the chart or the path's values")
	}
	if string(again.spec.TargetCustomizations[0].HelmValues.Raw) == string(tcs[0].HelmValues.Raw) {
		t.Error("the customization's values did not change")
	}
	// First match wins: a prod cluster in eu gets prod's values, not prod-eu's.
	b := &fleetv1alpha1.Bundle{Spec: r.spec}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"c1", map[string]string{"env": "prod", "region": "eu"}, "prod"},
		{"c2", map[string]string{"env": "dev"}, ""},
		{"c1", map[string]string{"env": "dev"}, "c1"},
	} {
		c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Labels: tc.labels, UID: types.UID(tc.name)}}
		got, err := bundle.Customization(b, c)
		if err != nil {
			t.Fatal(err)
		}
		if name := ""; got != nil && got.Name != tc.want || got == nil && tc.want != name {
			t.Errorf("cluster %s %v: customization %+v, want %q", tc.name, tc.labels, got, tc.want)
		}
	}
}

// TestRenderKustomizeTargetCustomizations: kustomize.dir renders an overlay for the path, a
// customization's kustomize.dir its own overlay for its clusters; the overlays' files are not
// manifests of the path; a customization changing only the namespace shares the path's content.
func TestRenderKustomizeTargetCustomizations(t *testing.T) {
	files := map[string]string{
		"app/base/kustomization.yaml":          "resources: [cm.yaml]\n",
		"app/base/cm.yaml":                     cm,
		"app/overlays/dev/kustomization.yaml":  "resources: [../../base]\nnamePrefix: dev-\n",
		"app/overlays/prod/kustomization.yaml": "resources: [../../base]\nnamePrefix: prod-\npatches:\n- path: patch.yaml\n",
		"app/overlays/prod/patch.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  env: prod\n",
		"app/drover.yaml": `kustomize: {dir: overlays/dev}
targetCustomizations:
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  kustomize: {dir: overlays/prod}
- name: ns-only
  clusterName: c9
  defaultNamespace: other
`,
	}
	r := renderOne(t, files, "app")
	if len(r.spec.Resources) != 1 || !strings.Contains(string(r.spec.Resources[0].Raw), `"name":"dev-x"`) {
		t.Fatalf("path resources %s: want the dev overlay's only (not the overlays' files as manifests)", rawList(r.spec.Resources))
	}
	tcs := r.spec.TargetCustomizations
	if len(tcs) != 2 {
		t.Fatalf("customizations %+v", tcs)
	}
	if got := rawList(tcs[0].Resources); !strings.Contains(got, `"name":"prod-x"`) || !strings.Contains(got, `"env":"prod"`) || len(tcs[0].Resources) != 1 {
		t.Errorf("prod resources %s", got)
	}
	if tcs[1].Resources != nil || tcs[1].DefaultNamespace != "other" {
		t.Errorf("ns-only %+v: no content of its own", tcs[1])
	}

	// Without kustomize.dir and a kustomization at the path, clusters no customization matches
	// get the path's manifests: here the base's, not the overlays' patch.
	files["app/drover.yaml"] = "targetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  kustomize: {dir: overlays/prod}\n"
	r = renderOne(t, files, "app")
	if len(r.spec.Resources) != 1 || !strings.Contains(string(r.spec.Resources[0].Raw), `"name":"x"`) {
		t.Errorf("path resources %s: want base/cm.yaml only", rawList(r.spec.Resources))
	}
}

func rawList(rs []runtime.RawExtension) string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Raw))
	}
	return strings.Join(out, "\n")
}

// TestRenderDiffIgnore: drover.yaml's diff.ignore becomes the Bundle's spec.diff.
func TestRenderDiffIgnore(t *testing.T) {
	r := renderOne(t, map[string]string{
		"app/cm.yaml":     cm,
		"app/drover.yaml": "diff:\n  ignore:\n  - {apiVersion: apps/v1, kind: Deployment, name: web, jsonPointers: [/spec/replicas]}\n",
	}, "app")
	if d := r.spec.Diff; d == nil || len(d.Ignore) != 1 || d.Ignore[0].Kind != "Deployment" || d.Ignore[0].Name != "web" ||
		!slices.Equal(d.Ignore[0].JSONPointers, []string{"/spec/replicas"}) {
		t.Errorf("spec.diff %+v", r.spec.Diff)
	}
}

// TestCustomizationErrorsNameFileAndKey: invalid targetCustomizations, kustomize and diff
// settings are RenderFailed errors naming the file and the key.
func TestCustomizationErrorsNameFileAndKey(t *testing.T) {
	sel := "  clusterSelector: {matchLabels: {env: prod}}\n"
	kust := map[string]string{"app/cm.yaml": cm, "app/o/kustomization.yaml": "resources: [../cm.yaml]\n"}
	var many strings.Builder
	many.WriteString("targetCustomizations:\n")
	for i := range 33 {
		many.WriteString("- name: t" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + "\n  clusterName: c\n")
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		parts []string
	}{
		{"no name", withFiles(kust, map[string]string{"app/drover.yaml": "targetCustomizations:\n- clusterName: c\n"}),
			[]string{"app/drover.yaml", "targetCustomizations[0].name", "required"}},
		{"duplicate name", withFiles(kust, map[string]string{"app/drover.yaml": "targetCustomizations:\n- name: a\n  clusterName: c\n- name: a\n  clusterName: d\n"}),
			[]string{"app/drover.yaml", "targetCustomizations[1].name", `"a"`}},
		{"name not a label value", withFiles(kust, map[string]string{"app/drover.yaml": "targetCustomizations:\n- name: 'a b'\n  clusterName: c\n"}),
			[]string{"app/drover.yaml", "targetCustomizations[0].name"}},
		{"matches nothing", withFiles(kust, map[string]string{"app/drover.yaml": "targetCustomizations:\n- name: a\n"}),
			[]string{"app/drover.yaml", "targetCustomizations[0]", "clusterName and/or clusterSelector"}},
		{"bad selector", withFiles(kust, map[string]string{"app/drover.yaml": "targetCustomizations:\n- name: a\n  clusterSelector: {matchExpressions: [{key: env, operator: Nope}]}\n"}),
			[]string{"app/drover.yaml", "targetCustomizations[0].clusterSelector"}},
		{"unknown nested key", withFiles(kust, map[string]string{"app/drover.yaml": "targetCustomizations:\n- name: a\n" + sel + "  helm: {valueFiles: [x.yaml]}\n  yaml: {overlays: [x]}\n"}),
			[]string{"app/drover.yaml", `"targetCustomizations[0].helm.valueFiles"`, `"targetCustomizations[0].yaml.overlays"`}},
		{"too many", withFiles(kust, map[string]string{"app/drover.yaml": many.String()}), []string{"app/drover.yaml", "targetCustomizations: 33 entries"}},
		{"helm values for manifests", withFiles(kust, map[string]string{"app/drover.yaml": "targetCustomizations:\n- name: a\n" + sel + "  helm: {values: {x: 1}}\n"}),
			[]string{"app/drover.yaml", "targetCustomizations[0].helm", "not a Helm chart"}},
		{"kustomize for a chart", withFiles(chartFiles("app"), map[string]string{"app/drover.yaml": "targetCustomizations:\n- name: a\n" + sel + "  kustomize: {dir: o}\n"}),
			[]string{"app/drover.yaml", "targetCustomizations[0].kustomize"}},
		{"overlay without kustomization", withFiles(kust, map[string]string{"app/drover.yaml": "targetCustomizations:\n- name: a\n" + sel + "  kustomize: {dir: nope}\n"}),
			[]string{"app/drover.yaml", "targetCustomizations[0].kustomize.dir", "no kustomization.yaml in app/nope"}},
		{"overlay outside the repository", withFiles(kust, map[string]string{"app/drover.yaml": "kustomize: {dir: ../../x}\n"}),
			[]string{"app/drover.yaml", "kustomize.dir", "outside the repository"}},
		{"overlay fails", withFiles(kust, map[string]string{"app/bad/kustomization.yaml": "resources: [missing.yaml]\n",
			"app/drover.yaml": "targetCustomizations:\n- name: a\n" + sel + "  kustomize: {dir: bad}\n"}),
			[]string{"app/bad/kustomization.yaml", "targetCustomizations[0].kustomize.dir", "missing.yaml"}},
		{"customization values file missing", withFiles(chartFiles("app"), map[string]string{"app/drover.yaml": "targetCustomizations:\n- name: a\n" + sel + "  helm: {valuesFiles: [prod.yaml]}\n"}),
			[]string{"app/drover.yaml", "targetCustomizations[0].helm.valuesFiles", "app/prod.yaml"}},
		{"chart fails with a customization's values", withFiles(chartFiles("app"), map[string]string{
			"app/templates/check.yaml": "{{ if .Values.broken }}{{ fail \"broken\" }}{{ end }}\n",
			"app/drover.yaml":          "targetCustomizations:\n- name: bad\n" + sel + "  helm: {values: {broken: true}}\n"}),
			[]string{"app/templates/check.yaml", "targetCustomizations[0] (bad)"}},
		{"bad diff pointer", withFiles(kust, map[string]string{"app/drover.yaml": "diff:\n  ignore:\n  - {apiVersion: v1, kind: ConfigMap, jsonPointers: [spec]}\n"}),
			[]string{"app/drover.yaml", "diff.ignore[0].jsonPointers[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"app"}}}
			_, err := render(t.Context(), testCheckout(tc.files), gr)
			var se *syncError
			if !errors.As(err, &se) || se.reason != fleetv1alpha1.ReasonRenderFailed {
				t.Fatalf("error %v, want RenderFailed", err)
			}
			for _, p := range tc.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("%q does not name %q", err, p)
				}
			}
		})
	}
}
