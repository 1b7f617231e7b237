package gitrepo

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
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
- name: group-only
  clusterGroup: prod-group
- name: overlaid
  clusterSelector: {matchLabels: {env: edge}}
  yaml: {overlays: [edge]}
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
		if strings.Contains(w, "rolloutStrategy.maxUnavailable") {
			t.Errorf("warning %q names a key drover reads", w)
		}
		if !strings.Contains(w, "used with another meaning than Fleet's: paused (") {
			t.Errorf("warning %q does not say paused differs from Fleet's", w)
		}
		for _, key := range []string{"apps/web/fleet.yaml: ", "helm.takeOwnership", "rolloutStrategy.partitions",
			"targetCustomizations[1].clusterGroup", "targetCustomizations[1] (matches no cluster", "dependsOn[1].acceptedStates",
			"targetCustomizations[2] (yaml.overlays not supported by drover: the clusters it matches get nothing",
			"diff.comparePatches[0].operations[1]", "imageScans"} {
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
		{"bad overrideTargets selector", "overrideTargets:\n- clusterSelector: {matchExpressions: [{key: a, operator: Near}]}\n", []string{"app/fleet.yaml", "overrideTargets[0].clusterSelector"}},
		{"bad doNotDeploy selector", "targetCustomizations:\n- clusterSelector: {matchExpressions: [{key: a, operator: Near}]}\n  doNotDeploy: true\n", []string{"app/fleet.yaml", "targetCustomizations[0].clusterSelector"}},
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

// renderFleet renders the path "app" of a GitRepo targeting every cluster labelled env.
func renderFleet(t *testing.T, files map[string]string) rendered {
	t.Helper()
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"app"},
		Targets: []fleetv1alpha1.BundleTarget{gitRepoTarget}}}
	out, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("rendered %d Bundles, want 1", len(out))
	}
	return out[0]
}

var gitRepoTarget = fleetv1alpha1.BundleTarget{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpExists}}}}

func selector(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

// TestFleetYAMLNarrowsTargets: fleet.yaml keys that narrow where a path goes are honoured or,
// where drover cannot match Fleet, fail closed: doNotDeploy customizations exclude their
// clusters; customizations and overrideTargets entries needing a ClusterGroup match nothing;
// overrideTargets replace the GitRepo's targets. Each is reported by key when not used as Fleet
// uses it.
func TestFleetYAMLNarrowsTargets(t *testing.T) {
	everyone := &metav1.LabelSelector{}
	for _, tc := range []struct {
		name, fleet     string
		targets         []fleetv1alpha1.BundleTarget
		exclude         []fleetv1alpha1.BundleTarget
		customizations  []string
		warn, notWarned []string
	}{
		{
			name: "doNotDeploy excludes the clusters it matches",
			fleet: "targetCustomizations:\n- name: off\n  clusterSelector: {matchLabels: {env: dev}}\n  doNotDeploy: true\n" +
				"- name: one\n  clusterName: c1\n  doNotDeploy: true\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  namespace: p\n",
			targets:        []fleetv1alpha1.BundleTarget{gitRepoTarget},
			exclude:        []fleetv1alpha1.BundleTarget{{ClusterSelector: selector("env", "dev")}, {ClusterName: "c1"}},
			customizations: []string{"prod"},
			notWarned:      []string{"doNotDeploy"},
		},
		{
			name:      "doNotDeploy false deploys",
			fleet:     "targetCustomizations:\n- name: dev\n  clusterSelector: {matchLabels: {env: dev}}\n  doNotDeploy: false\n",
			targets:   []fleetv1alpha1.BundleTarget{gitRepoTarget},
			exclude:   nil,
			notWarned: []string{"doNotDeploy"}, customizations: []string{"dev"},
		},
		{
			name:    "doNotDeploy with a group and a selector excludes by the selector",
			fleet:   "targetCustomizations:\n- name: off\n  clusterGroup: g\n  clusterSelector: {matchLabels: {env: dev}}\n  doNotDeploy: true\n",
			targets: []fleetv1alpha1.BundleTarget{gitRepoTarget},
			exclude: []fleetv1alpha1.BundleTarget{{ClusterSelector: selector("env", "dev")}},
			warn:    []string{"targetCustomizations[0].clusterGroup", "targetCustomizations[0].doNotDeploy (drover has no ClusterGroups"},
		},
		{
			name:    "doNotDeploy for a group only deploys nowhere",
			fleet:   "targetCustomizations:\n- name: off\n  clusterGroupSelector: {matchLabels: {g: x}}\n  doNotDeploy: true\n",
			targets: []fleetv1alpha1.BundleTarget{gitRepoTarget},
			exclude: []fleetv1alpha1.BundleTarget{{ClusterSelector: everyone}},
			warn:    []string{"targetCustomizations[0].clusterGroupSelector", "targetCustomizations[0] (doNotDeploy for a ClusterGroup"},
		},
		{
			name: "a customization with a group and a selector is left out",
			fleet: "targetCustomizations:\n- name: grouped\n  clusterGroup: g\n  clusterSelector: {matchLabels: {env: prod}}\n  namespace: p\n" +
				"- name: byName\n  clusterGroupSelector: {matchLabels: {g: x}}\n  clusterName: c1\n  namespace: q\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n",
			targets:        []fleetv1alpha1.BundleTarget{gitRepoTarget},
			customizations: []string{"prod"},
			warn: []string{"targetCustomizations[0].clusterGroup,", "targetCustomizations[0] (matches no cluster: drover has no ClusterGroups",
				"targetCustomizations[1].clusterGroupSelector", "targetCustomizations[1] (matches no cluster"},
		},
		{
			name: "overrideTargets replace the GitRepo's targets",
			fleet: "overrideTargets:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n- clusterName: c1\n" +
				"- clusterGroup: g\n  clusterSelector: {matchLabels: {env: dev}}\n",
			targets:   []fleetv1alpha1.BundleTarget{{ClusterSelector: selector("env", "prod")}, {ClusterName: "c1"}},
			warn:      []string{"overrideTargets[2].clusterGroup", "overrideTargets[2] (matches no cluster: drover has no ClusterGroups"},
			notWarned: []string{"overrideTargets[0]", "overrideTargets[1]"},
		},
		{
			name:    "overrideTargets of groups only target no cluster",
			fleet:   "overrideTargets:\n- clusterGroup: g\n",
			targets: nil,
			warn:    []string{"overrideTargets[0].clusterGroup", "overrideTargets (no entry drover can match: the path is deployed to no cluster)"},
		},
		{
			name:    "an empty overrideTargets keeps the GitRepo's targets",
			fleet:   "overrideTargets: []\n",
			targets: []fleetv1alpha1.BundleTarget{gitRepoTarget},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderFleet(t, map[string]string{"app/cm.yaml": cm, "app/fleet.yaml": tc.fleet})
			if !equality.Semantic.DeepEqual(r.spec.Targets, tc.targets) {
				t.Errorf("targets %+v, want %+v", r.spec.Targets, tc.targets)
			}
			if !equality.Semantic.DeepEqual(r.spec.Exclude, tc.exclude) {
				t.Errorf("exclude %+v, want %+v", r.spec.Exclude, tc.exclude)
			}
			var names []string
			for _, c := range r.spec.TargetCustomizations {
				names = append(names, c.Name)
			}
			if !slices.Equal(names, tc.customizations) {
				t.Errorf("customizations %v, want %v", names, tc.customizations)
			}
			w := strings.Join(r.warnings, "\n")
			for _, part := range tc.warn {
				if !strings.Contains(w, part) {
					t.Errorf("warnings %q do not name %q", w, part)
				}
			}
			for _, part := range tc.notWarned {
				if strings.Contains(w, part) {
					t.Errorf("warnings %q name %q, which drover uses", w, part)
				}
			}
		})
	}
}

// TestFleetYAMLPaused: a paused fleet.yaml path is held: its Bundle is created targeting no
// cluster and stays so while it targets none; a Bundle already targeting clusters keeps its
// targets with rollout.paused. drover.yaml's rollout.paused keeps drover's meaning. The
// difference from Fleet is reported.
func TestFleetYAMLPaused(t *testing.T) {
	paused := renderFleet(t, map[string]string{"app/cm.yaml": cm, "app/fleet.yaml": "paused: true\n"})
	drover := renderFleet(t, map[string]string{"app/cm.yaml": cm, "app/drover.yaml": "rollout: {paused: true}\n"})
	running := renderFleet(t, map[string]string{"app/cm.yaml": cm, "app/fleet.yaml": "defaultNamespace: x\n"})
	deployed := &fleetv1alpha1.Bundle{Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{gitRepoTarget}}}
	held := &fleetv1alpha1.Bundle{}
	all := []fleetv1alpha1.BundleTarget{gitRepoTarget}
	for _, tc := range []struct {
		name string
		r    rendered
		cur  *fleetv1alpha1.Bundle
		want []fleetv1alpha1.BundleTarget
	}{
		{"a new paused path targets no cluster", paused, nil, nil},
		{"a paused path created held stays held", paused, held, nil},
		{"a paused path deployed before keeps its targets", paused, deployed, all},
		{"an unpaused path targets the GitRepo's targets", running, held, all},
		{"drover.yaml's paused keeps drover's meaning", drover, nil, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := holdTargets(&tc.r, tc.cur)
			if !equality.Semantic.DeepEqual(spec.Targets, tc.want) {
				t.Errorf("targets %+v, want %+v", spec.Targets, tc.want)
			}
			if tc.r.spec.Rollout.Paused != (tc.name != "an unpaused path targets the GitRepo's targets") {
				t.Errorf("rollout %+v", tc.r.spec.Rollout)
			}
		})
	}
	t.Run("reported", func(t *testing.T) {
		if w := strings.Join(paused.warnings, "\n"); !strings.Contains(w, "used with another meaning than Fleet's: paused (") ||
			!strings.Contains(w, "clusters that newly match get the current content") {
			t.Errorf("warnings %q do not say how paused differs", w)
		}
		if len(drover.warnings) != 0 {
			t.Errorf("drover.yaml warnings %v", drover.warnings)
		}
	})
}

// TestFleetYAMLKeysReported: keys are told apart: Fleet's keys drover does not use are "not
// supported by drover", others are unknown keys (typos); Fleet's values templating, new and
// legacy, is supported (and disablePreProcess with it), .ClusterValues included.
func TestFleetYAMLKeysReported(t *testing.T) {
	for _, tc := range []struct {
		name, fleet                 string
		unsupported, typos, differs []string
	}{
		{"typo at the top", "defaultNamepsace: x\nimageScans: [{image: x}]\n", []string{"imageScans"}, []string{"defaultNamepsace"}, nil},
		{"typo in a section", "helm:\n  takeOwnership: true\n  relaseName: x\nyaml: {overlay: [a]}\n", []string{"helm.takeOwnership"}, []string{"helm.relaseName", "yaml.overlay"}, nil},
		{"Fleet's maps", "namespaceLabels: {team: a}\ncorrectDrift: {force: true}\n", []string{"namespaceLabels.team", "correctDrift.force"}, nil, nil},
		{"typo in a customization", "targetCustomizations:\n- name: a\n  clusterName: c\n  yaml: {overlays: [x]}\n  clustrName: d\n",
			[]string{"targetCustomizations[0] (yaml.overlays not supported"}, []string{"targetCustomizations[0].clustrName"}, nil},
		{"templating", "helm:\n  values:\n    color: global.fleet.clusterLabels.env\n    host: \"${ .ClusterLabels.host }\"\n    plain: global\n", nil, nil, nil},
		{"templating off", "helm:\n  disablePreProcess: true\n  values:\n    host: \"${ .ClusterValues.host }\"\n", nil, nil, nil},
		{"valuesFrom", "helm:\n  valuesFrom:\n  - secretKeyRef: {name: db}\n", nil, nil, nil},
		{"valuesFrom in a customization", "targetCustomizations:\n- name: a\n  clusterName: c\n  helm: {valuesFrom: [{secretKeyRef: {name: db}}]}\n", nil, nil, nil},
		// The Cluster's spec.templateValues, as in Fleet.
		{"ClusterValues", "helm:\n  values:\n    host: \"${ .ClusterValues.host }\"\n    plain: global\n", nil, nil, nil},
		{"ClusterValues in a customization", "targetCustomizations:\n- name: a\n  clusterName: c\n  helm: {values: {list: [\"${ .ClusterValues.region }\"]}}\n", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rep, err := parseFleetConfig([]byte(tc.fleet))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.unsupported {
				if !slices.ContainsFunc(rep.unsupported, func(s string) bool { return strings.HasPrefix(s, k) }) {
					t.Errorf("not supported %q, want %q among them", rep.unsupported, k)
				}
			}
			if !slices.Equal(slices.Sorted(slices.Values(rep.unknown)), slices.Sorted(slices.Values(tc.typos))) {
				t.Errorf("unknown keys %q, want %q", rep.unknown, tc.typos)
			}
			if len(tc.unsupported) == 0 && len(rep.unsupported) > 0 {
				t.Errorf("not supported %q, want none", rep.unsupported)
			}
			if len(tc.differs) != len(rep.differs) {
				t.Errorf("used differently %q, want %q", rep.differs, tc.differs)
			}
			for _, k := range tc.differs {
				if !slices.ContainsFunc(rep.differs, func(s string) bool { return strings.HasPrefix(s, k) }) {
					t.Errorf("used differently %q, want %q among them", rep.differs, k)
				}
			}
			if strings.Contains(rep.String(), "plain") {
				t.Errorf("report %q names a plain value", rep.String())
			}
			if len(tc.typos) > 0 && !strings.Contains(rep.String(), "unknown keys (not in Fleet's fleet.yaml either: typo?), not used: "+tc.typos[0]) {
				t.Errorf("report %q does not call %s an unknown key", rep.String(), tc.typos[0])
			}
		})
	}
}

// TestFleetYAMLNeverWider: Fleet's repositories deploy to no cluster drover cannot serve as
// Fleet would (rancher/fleet-examples, as a migrating user points drover at them): targets
// (Fleet's older name of targetCustomizations, read first) count; the overlays/ directory holds
// customizations' overlays, not the path's manifests; a customization with overlays (either
// key) or a chart version of its own gets nothing, and says so.
func TestFleetYAMLNeverWider(t *testing.T) {
	files := map[string]string{
		"manifests/fleet.yaml": `namespace: example
targets:
- name: no-prod
  clusterSelector: {matchLabels: {env: prod}}
  doNotDeploy: true
- name: dev
  clusterSelector: {matchLabels: {env: dev}}
  overlays: [noreplication]
targetCustomizations:
- name: test
  clusterSelector: {matchLabels: {env: test}}
  yaml: {overlays: [scale3]}
`,
		"manifests/cm.yaml": cm,
		"manifests/overlays/noreplication/manifests/svc_patch.yaml": "spec:\n  selector: {role: master}\n",
		"manifests/overlays/scale3/manifests/deployment_patch.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n",
	}
	chart := withFiles(chartFiles("proxy"), map[string]string{"proxy/fleet.yaml": `targetCustomizations:
- name: newer
  clusterSelector: {matchLabels: {env: test}}
  helm: {version: 6.5.0}
`})
	for f, v := range chart {
		files[f] = v
	}
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"manifests", "proxy"}}}
	out, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatalf("render: %v (the overlays/ directory must not be read as manifests)", err)
	}
	if len(out) != 2 {
		t.Fatalf("%d Bundles, want 2", len(out))
	}
	excluded := func(r rendered) []string {
		var sel []string
		for _, e := range r.spec.Exclude {
			sel = append(sel, metav1.FormatLabelSelector(e.ClusterSelector))
		}
		return sel
	}
	m, p := out[0], out[1]
	if n := len(m.spec.Resources); n != 1 {
		t.Errorf("manifests: %d resources, want the path's ConfigMap only (not the overlays' files)", n)
	}
	if got := excluded(m); !slices.Equal(got, []string{"env=prod", "env=dev", "env=test"}) {
		t.Errorf("manifests excludes %v, want env=prod (targets doNotDeploy), env=dev (targets overlays), env=test (yaml.overlays)", got)
	}
	if len(m.warnings) != 1 || !strings.Contains(m.warnings[0], "targets[1] (yaml.overlays not supported by drover") ||
		!strings.Contains(m.warnings[0], "targetCustomizations[0] (yaml.overlays not supported by drover") {
		t.Errorf("manifests warnings %q", m.warnings)
	}
	if got := excluded(p); !slices.Equal(got, []string{"env=test"}) || len(p.warnings) != 1 || !strings.Contains(p.warnings[0], "targetCustomizations[0] (helm.version not supported by drover") {
		t.Errorf("proxy excludes %v, warnings %q: want env=test, whose customization asks for another chart version", got, p.warnings)
	}
}

// TestFleetYAMLTypeErrors: a value of the wrong type names the key in YAML's terms, and
// overrideTargets: true (an older Fleet's form) says what it is now.
func TestFleetYAMLTypeErrors(t *testing.T) {
	for _, tc := range []struct{ name, fleet, want string }{
		{"overrideTargets true", "overrideTargets: true\ntargets: [{clusterName: a}]\n", "key overrideTargets: want a list of targets"},
		{"a list for a string", "defaultNamespace: [a]\n", "key defaultNamespace: want a string, got an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parseFleetConfig([]byte(tc.fleet))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Go struct") {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestFleetDependsOnShortenedNames: a fleet.yaml depending on another path's Bundle by the name
// Fleet gives it (shortened with a hash past 53 characters, as rancher/fleet-examples'
// helm-multi-chart does) depends on that path's drover Bundle.
func TestFleetDependsOnShortenedNames(t *testing.T) {
	const crd = "single-cluster/helm-multi-chart/rancher-monitoring-crd"
	if got := fleetBundleNames("helm", crd); !slices.Contains(got, "helm-single-cluster-helm-multi-chart-rancher-mo-1cc89") {
		t.Fatalf("Fleet's names %v, want Fleet's helm-single-cluster-helm-multi-chart-rancher-mo-1cc89", got)
	}
	files := map[string]string{
		crd + "/fleet.yaml": "defaultNamespace: x\n",
		crd + "/cm.yaml":    cm,
		"single-cluster/helm-multi-chart/rancher-monitoring/fleet.yaml": "defaultNamespace: x\ndependsOn:\n- name: helm-single-cluster-helm-multi-chart-rancher-mo-1cc89\n",
		"single-cluster/helm-multi-chart/rancher-monitoring/cm.yaml":    strings.Replace(cm, "name: x", "name: mon", 1),
	}
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "helm"}, Spec: fleetv1alpha1.GitRepoSpec{Paths: []string{"single-cluster/helm-multi-chart"}}}
	out, err := render(t.Context(), testCheckout(files), gr)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by path: rancher-monitoring, then rancher-monitoring-crd.
	if len(out) != 2 || out[1].name != BundleName("helm", crd) || len(out[0].spec.DependsOn) != 1 || out[0].spec.DependsOn[0].Name != out[1].name {
		t.Fatalf("Bundles %+v: want %s to depend on %s", out, out[0].name, BundleName("helm", crd))
	}
}
