package gitrepo

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

const nsCM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: elsewhere\n"

// TestFleetYAML: a Fleet repository's fleet.yaml files are read with Fleet's meaning: every
// directory holding one is a Bundle (named as Fleet names it), namespace forces namespaced
// resources into it, helm and kustomize keys and targetCustomizations map to drover's,
// dependsOn names given by fleet.yaml's name map to drover's Bundle names, comparePatches to
// diff.ignore, labels to Bundle labels; keys drover does not support are listed by full key.
func TestFleetYAML(t *testing.T) {
	files := withFiles(chartFiles("apps/web"), map[string]string{
		"apps/web/fleet.yaml": `defaultNamespace: web
helm:
  releaseName: frontend
  values: {size: 2, host: "${ .ClusterLabels.host }"}
  takeOwnership: true
paused: true
rolloutStrategy:
  maxUnavailable: 10%
  partitions: [{name: canary, clusterName: c1}]
targetCustomizations:
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  helm: {values: {color: red}}
  yaml: {overlays: [prod]}
- name: group-only
  clusterGroup: prod-group
dependsOn:
- name: database
- selector: {matchLabels: {fleet.cattle.io/repo-name: r}}
  acceptedStates: [Ready, Modified]
diff:
  comparePatches:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
    namespace: web
    operations:
    - {op: remove, path: /spec/template/spec/hostNetwork}
    - {op: replace, path: /spec/x, value: 1}
    jsonPointers: [/spec/replicas]
imageScans: [{image: x}]
`,
		"apps/db/fleet.yaml": "name: database\nnamespace: db\nlabels: {tier: data}\ncorrectDrift: {enabled: true}\nkeepResources: true\n",
		"apps/db/cm.yaml":    cm + "---\n" + nsCM,
		"apps/db/ns.yaml":    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: db\n",
	})
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"apps"}}}
	out, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range out {
		names = append(names, r.name)
	}
	// Each directory with a fleet.yaml below the path "apps" is a Bundle, named as Fleet would.
	if !slices.Equal(names, []string{"r-apps-db", "r-apps-web"}) {
		t.Fatalf("Bundles %v", names)
	}
	db, web := out[0], out[1]

	t.Run("namespace", func(t *testing.T) {
		s := db.spec
		if s.DefaultNamespace != "db" || !s.CorrectDrift || !s.KeepResources || db.labels["tier"] != "data" {
			t.Errorf("db spec %+v labels %v", s, db.labels)
		}
		all := rawList(s.Resources)
		if !strings.Contains(all, `"name":"other","namespace":"db"`) || strings.Contains(all, "elsewhere") {
			t.Errorf("a resource naming another namespace is not moved into db:\n%s", all)
		}
		if strings.Contains(all, `"kind":"Namespace","metadata":{"name":"db","namespace"`) {
			t.Errorf("a cluster-scoped resource got a namespace:\n%s", all)
		}
		if len(db.warnings) != 0 {
			t.Errorf("db warnings %v", db.warnings)
		}
	})
	t.Run("helm and customizations", func(t *testing.T) {
		s := web.spec
		if s.Helm == nil || s.Helm.ReleaseName != "frontend" || s.DefaultNamespace != "web" {
			t.Fatalf("web spec %+v", s)
		}
		if len(s.TargetCustomizations) != 1 || s.TargetCustomizations[0].Name != "prod" ||
			string(s.TargetCustomizations[0].HelmValues.Raw) != `{"color":"red","host":"${ .ClusterLabels.host }","size":2}` {
			t.Errorf("customizations %+v", s.TargetCustomizations)
		}
	})
	t.Run("rollout", func(t *testing.T) {
		r := web.spec.Rollout
		if !r.Paused || r.MaxUnavailable == nil || r.MaxUnavailable.String() != "10%" || db.spec.Rollout.MaxUnavailable != nil || db.spec.Rollout.Paused {
			t.Errorf("web rollout %+v (want paused, maxUnavailable 10%%), db rollout %+v (want none)", r, db.spec.Rollout)
		}
	})
	t.Run("dependsOn", func(t *testing.T) {
		d := web.spec.DependsOn
		if len(d) != 2 || d[0].Name != "r-apps-db" || d[1].Selector.MatchLabels[fleetv1alpha1.GitRepoNameLabel] != "r" {
			t.Errorf("dependsOn %+v: fleet.yaml's name database is the Bundle r-apps-db; Fleet's repo-name label is drover's", d)
		}
	})
	t.Run("comparePatches", func(t *testing.T) {
		d := web.spec.Diff
		if d == nil || len(d.Ignore) != 1 || d.Ignore[0].Name != "web" || d.Ignore[0].Namespace != "web" ||
			!slices.Equal(d.Ignore[0].JSONPointers, []string{"/spec/replicas", "/spec/template/spec/hostNetwork"}) {
			t.Errorf("diff %+v", d)
		}
	})
	t.Run("unsupported keys named", func(t *testing.T) {
		if len(web.warnings) != 1 {
			t.Fatalf("warnings %v", web.warnings)
		}
		w := web.warnings[0]
		if strings.Contains(w, "rolloutStrategy.maxUnavailable") || strings.Contains(w, "paused") {
			t.Errorf("warning %q names a key drover reads", w)
		}
		for _, key := range []string{"apps/web/fleet.yaml: ", "helm.takeOwnership", "rolloutStrategy.partitions", "targetCustomizations[0].yaml.overlays",
			"targetCustomizations[1].clusterGroup", "targetCustomizations[1] (matches no cluster", "dependsOn[1].acceptedStates",
			"diff.comparePatches[0].operations[1]", "imageScans", "helm.values.host (Fleet templating"} {
			if !strings.Contains(w, key) {
				t.Errorf("warning %q does not name %s", w, key)
			}
		}
	})
}

// TestFleetYAMLBesideDroverYAML: drover.yaml wins, and the fleet.yaml not read is reported.
func TestFleetYAMLBesideDroverYAML(t *testing.T) {
	r := renderOne(t, map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "defaultNamespace: a\n", "app/fleet.yaml": "defaultNamespace: b\n"}, "app")
	if r.spec.DefaultNamespace != "a" || len(r.warnings) != 1 || !strings.Contains(r.warnings[0], "app/fleet.yaml: not read") {
		t.Errorf("defaultNamespace %q warnings %v", r.spec.DefaultNamespace, r.warnings)
	}
}

// TestFleetYAMLErrors: invalid values of supported fleet.yaml keys are errors naming file and key.
func TestFleetYAMLErrors(t *testing.T) {
	for _, tc := range []struct {
		name, fleet string
		parts       []string
	}{
		{"bad namespace", "namespace: Not_OK\n", []string{"app/fleet.yaml", "namespace", "Not_OK"}},
		{"wrong type", "defaultNamespace: [x]\n", []string{"app/fleet.yaml", "defaultNamespace"}},
		{"reserved label", "labels: {fleet.drover.io/x: y}\n", []string{"app/fleet.yaml", "labels", "fleet.drover.io/x"}},
		{"bad customization namespace", "targetCustomizations:\n- name: a\n  clusterName: c\n  namespace: Bad!\n", []string{"app/fleet.yaml", "targetCustomizations[0].namespace"}},
		{"not YAML", "helm: [\n", []string{"app/fleet.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"app"}}}
			_, err := render(t.Context(), testCheckout(map[string]string{"app/cm.yaml": cm, "app/fleet.yaml": tc.fleet}), gr)
			if err == nil {
				t.Fatal("no error")
			}
			for _, p := range tc.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("%q does not name %q", err, p)
				}
			}
		})
	}
}
