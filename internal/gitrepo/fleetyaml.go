package gitrepo

import (
	"crypto/md5" //nolint:gosec // Fleet's Bundle names, not security
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// FleetFile is Fleet's per-path settings file. A path with a fleet.yaml and no drover.yaml is
// read with Fleet's meaning for the keys drover supports; the others are reported by name in
// the GitRepo's ConfigSupported condition (reason UnsupportedFleetKeys), never silently
// ignored. As in Fleet, every directory below a matching path that holds a fleet.yaml is a path
// (a Bundle) of its own.
const FleetFile = "fleet.yaml"

// fleetRepoLabel is Fleet's label naming a Bundle's GitRepo; dependsOn selectors on it are
// read as drover's GitRepoNameLabel.
const fleetRepoLabel = "fleet.cattle.io/repo-name"

// fleetExtras is what a fleet.yaml sets that drover.yaml has no key for.
type fleetExtras struct {
	// namespace forces every namespaced resource into it (fleet.yaml's namespace).
	namespace string
	// name is the bundle name Fleet would give the path (fleet.yaml's name): dependsOn entries
	// naming it are mapped to drover's Bundle name of the path.
	name string
	// override says targets replace the GitRepo's targets for the path (overrideTargets); with
	// no entry drover can match, the path targets no cluster.
	override bool
	targets  []fleetv1alpha1.BundleTarget
	// exclude are the clusters doNotDeploy customizations match (Bundle spec.exclude).
	exclude []fleetv1alpha1.BundleTarget
	// paused is fleet.yaml's paused: in Fleet a paused bundle deploys nowhere new, so a path
	// whose Bundle does not exist yet gets one targeting no cluster (see holdNew).
	paused bool
}

// fleetReport is what of a fleet.yaml drover does not use as Fleet does, for the GitRepo's
// ConfigSupported condition.
type fleetReport struct {
	// unsupported are Fleet's keys drover does not support (full dotted keys, some with why).
	unsupported []string
	// unknown are keys Fleet's fleet.yaml does not have either (typos).
	unknown []string
	// differs are keys drover uses with a meaning narrower or wider than Fleet's.
	differs []string
}

func (r *fleetReport) empty() bool {
	return len(r.unsupported) == 0 && len(r.unknown) == 0 && len(r.differs) == 0
}

// String is the report on one line: each group named, keys sorted.
func (r *fleetReport) String() string {
	var parts []string
	for _, g := range []struct {
		what string
		keys []string
	}{
		{"not supported by drover, not used", r.unsupported},
		{"unknown keys (not in Fleet's fleet.yaml either: typo?), not used", r.unknown},
		{"used with another meaning than Fleet's", r.differs},
	} {
		if len(g.keys) > 0 {
			parts = append(parts, g.what+": "+strings.Join(slices.Sorted(slices.Values(g.keys)), ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// fleetConfig is the part of Fleet's fleet.yaml drover reads. Keys outside it are reported.
type fleetConfig struct {
	Name                 string             `json:"name,omitempty"`
	Labels               map[string]string  `json:"labels,omitempty"`
	DefaultNamespace     string             `json:"defaultNamespace,omitempty"`
	Namespace            string             `json:"namespace,omitempty"`
	KeepResources        bool               `json:"keepResources,omitempty"`
	CorrectDrift         *fleetCorrectDrift `json:"correctDrift,omitempty"`
	Helm                 *fleetHelm         `json:"helm,omitempty"`
	Kustomize            *KustomizeConfig   `json:"kustomize,omitempty"`
	TargetCustomizations []fleetTarget      `json:"targetCustomizations,omitempty"`
	// Targets is Fleet's older name of targetCustomizations: Fleet reads its entries first.
	Targets         []fleetTarget                    `json:"targets,omitempty"`
	DependsOn       []fleetv1alpha1.BundleDependency `json:"dependsOn,omitempty"`
	Diff            *fleetDiff                       `json:"diff,omitempty"`
	Paused          bool                             `json:"paused,omitempty"`
	RolloutStrategy *fleetRollout                    `json:"rolloutStrategy,omitempty"`
	OverrideTargets []fleetGitTarget                 `json:"overrideTargets,omitempty"`
}

// fleetHelm is fleet.yaml's helm: drover.yaml's keys, and disablePreProcess.
type fleetHelm struct {
	Chart       string         `json:"chart,omitempty"`
	Repo        string         `json:"repo,omitempty"`
	Version     string         `json:"version,omitempty"`
	ReleaseName string         `json:"releaseName,omitempty"`
	Values      map[string]any `json:"values,omitempty"`
	ValuesFiles []string       `json:"valuesFiles,omitempty"`
	// ValuesFrom are read by the agent on the downstream cluster.
	ValuesFrom []fleetv1alpha1.HelmValuesFrom `json:"valuesFrom,omitempty"`
	// DisablePreProcess: the values are not a template; they are passed as written.
	DisablePreProcess bool `json:"disablePreProcess,omitempty"`
}

// config is drover's Helm settings for h: Fleet's values are a template unless
// disablePreProcess.
func (h *fleetHelm) config() *HelmConfig {
	if h == nil {
		return nil
	}
	return &HelmConfig{Chart: h.Chart, Repo: h.Repo, Version: h.Version, ReleaseName: h.ReleaseName,
		Values: h.Values, ValuesFiles: h.ValuesFiles, ValuesFrom: h.ValuesFrom, template: !h.DisablePreProcess}
}

// fleetGitTarget is an entry of Fleet's overrideTargets (a GitRepo target).
type fleetGitTarget struct {
	Name                 string                `json:"name,omitempty"`
	ClusterName          string                `json:"clusterName,omitempty"`
	ClusterSelector      *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	ClusterGroup         string                `json:"clusterGroup,omitempty"`
	ClusterGroupSelector *metav1.LabelSelector `json:"clusterGroupSelector,omitempty"`
}

// fleetRollout is the part of Fleet's rolloutStrategy drover has: its maxUnavailable means
// drover's rollout.maxUnavailable; partitions are reported as not supported.
type fleetRollout struct {
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

type fleetCorrectDrift struct {
	Enabled bool `json:"enabled,omitempty"`
}

type fleetTarget struct {
	Name                 string                `json:"name,omitempty"`
	ClusterName          string                `json:"clusterName,omitempty"`
	ClusterSelector      *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	ClusterGroup         string                `json:"clusterGroup,omitempty"`
	ClusterGroupSelector *metav1.LabelSelector `json:"clusterGroupSelector,omitempty"`
	DoNotDeploy          bool                  `json:"doNotDeploy,omitempty"`
	DefaultNamespace     string                `json:"defaultNamespace,omitempty"`
	Namespace            string                `json:"namespace,omitempty"`
	Helm                 *fleetTargetHelm      `json:"helm,omitempty"`
	Kustomize            *KustomizeConfig      `json:"kustomize,omitempty"`
	YAML                 *fleetYAML            `json:"yaml,omitempty"`
	// Overlays is the older place of yaml.overlays.
	Overlays []string `json:"overlays,omitempty"`
}

// fleetTargetHelm is a customization's helm: drover's keys, and a chart of its own, which
// drover does not support (its clusters get nothing rather than the path's chart).
type fleetTargetHelm struct {
	Values      map[string]any                 `json:"values,omitempty"`
	ValuesFiles []string                       `json:"valuesFiles,omitempty"`
	ValuesFrom  []fleetv1alpha1.HelmValuesFrom `json:"valuesFrom,omitempty"`
	Chart       string                         `json:"chart,omitempty"`
	Repo        string                         `json:"repo,omitempty"`
	Version     string                         `json:"version,omitempty"`
}

// fleetYAML is a customization's yaml: the overlays (overlays/NAME of the path) Fleet applies
// to the clusters it matches, which drover does not support.
type fleetYAML struct {
	Overlays []string `json:"overlays,omitempty"`
}

// notDeployable names what of a customization drover cannot give its clusters (an overlay, a
// chart, repository or version of its own): deploying the path as it is there would give them
// other content than Fleet does, so they get nothing. "" when there is nothing.
func (t *fleetTarget) notDeployable() string {
	var what []string
	if t.YAML != nil && len(t.YAML.Overlays) > 0 || len(t.Overlays) > 0 {
		what = append(what, "yaml.overlays")
	}
	if h := t.Helm; h != nil {
		for _, k := range []struct {
			key string
			set bool
		}{{"helm.chart", h.Chart != ""}, {"helm.repo", h.Repo != ""}, {"helm.version", h.Version != ""}} {
			if k.set {
				what = append(what, k.key)
			}
		}
	}
	return strings.Join(what, ", ")
}

// groupKeys names the ClusterGroup keys an entry sets (drover has no ClusterGroups).
func groupKeys(key, group string, groupSelector *metav1.LabelSelector) []string {
	var out []string
	if group != "" {
		out = append(out, key+".clusterGroup")
	}
	if groupSelector != nil {
		out = append(out, key+".clusterGroupSelector")
	}
	return out
}

type fleetDiff struct {
	ComparePatches []fleetComparePatch `json:"comparePatches,omitempty"`
}

type fleetComparePatch struct {
	APIVersion   string           `json:"apiVersion,omitempty"`
	Kind         string           `json:"kind,omitempty"`
	Name         string           `json:"name,omitempty"`
	Namespace    string           `json:"namespace,omitempty"`
	Operations   []fleetOperation `json:"operations,omitempty"`
	JSONPointers []string         `json:"jsonPointers,omitempty"`
}

type fleetOperation struct {
	Op    string `json:"op,omitempty"`
	Path  string `json:"path,omitempty"`
	Value any    `json:"value,omitempty"`
}

// parseFleetConfig reads a fleet.yaml into the Config it means for drover, and reports what it
// could not use as Fleet would: Fleet keys drover does not support and values it cannot honour
// (full dotted paths), keys Fleet does not have either, and keys whose meaning differs. Where
// drover cannot match Fleet, it narrows where content goes, never widens it. Wrong types and
// invalid values of supported keys are errors naming the key.
func parseFleetConfig(data []byte) (*Config, *fleetReport, error) {
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, nil, errors.New(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
	}
	rep := &fleetReport{}
	for _, k := range unknownKeys(raw, reflect.TypeFor[fleetConfig](), "") {
		if isFleetKey(k) {
			rep.unsupported = append(rep.unsupported, k)
		} else {
			rep.unknown = append(rep.unknown, k)
		}
	}
	var f fleetConfig
	if err := yaml.Unmarshal(data, &f); err != nil {
		if m, ok := raw.(map[string]any); ok {
			if _, old := m["overrideTargets"].(bool); old {
				return nil, nil, errors.New("key overrideTargets: want a list of targets (clusterName, clusterSelector), as Fleet reads it now, got true (an older Fleet's form, with the targets under targets)")
			}
		}
		return nil, nil, decodeError(err)
	}
	ex := &fleetExtras{namespace: f.Namespace, name: f.Name, paused: f.Paused}
	c := &Config{
		DefaultNamespace: f.DefaultNamespace,
		KeepResources:    f.KeepResources,
		Helm:             f.Helm.config(),
		Kustomize:        f.Kustomize,
		DependsOn:        f.DependsOn,
		Labels:           f.Labels,
		fleet:            ex,
	}
	if f.Paused || (f.RolloutStrategy != nil && f.RolloutStrategy.MaxUnavailable != nil) {
		c.Rollout = &fleetv1alpha1.BundleRollout{Paused: f.Paused}
		if f.RolloutStrategy != nil {
			c.Rollout.MaxUnavailable = f.RolloutStrategy.MaxUnavailable
		}
	}
	if f.Paused {
		rep.differs = append(rep.differs, "paused (a path first seen paused gets a Bundle targeting no cluster until paused is removed; "+
			"once its Bundle is deployed, existing clusters keep their version but clusters that newly match get the current content, where Fleet deploys nothing)")
	}
	if f.CorrectDrift != nil {
		c.CorrectDrift = f.CorrectDrift.Enabled
	}
	var errs []error
	if err := validNamespace("namespace", f.Namespace); err != nil {
		errs = append(errs, err)
	}
	if f.Namespace != "" {
		c.DefaultNamespace = f.Namespace
	}
	for i, d := range c.DependsOn {
		if d.Selector != nil {
			c.DependsOn[i].Selector = fleetSelector(d.Selector)
		}
	}
	// Fleet reads targets (the older name) before targetCustomizations, as one list.
	type entry struct {
		key string
		t   fleetTarget
	}
	var entries []entry
	for i, t := range f.Targets {
		entries = append(entries, entry{fmt.Sprintf("targets[%d]", i), t})
	}
	for i, t := range f.TargetCustomizations {
		entries = append(entries, entry{fmt.Sprintf("targetCustomizations[%d]", i), t})
	}
	for i, e := range entries {
		key, t := e.key, e.t
		group := groupKeys(key, t.ClusterGroup, t.ClusterGroupSelector)
		rep.unsupported = append(rep.unsupported, group...)
		byCluster := t.ClusterName != "" || t.ClusterSelector != nil
		what := t.notDeployable()
		switch {
		case what != "" && byCluster && !t.DoNotDeploy:
			// Its clusters would get the path as it is, not what Fleet gives them: nothing.
			errs = append(errs, validSelector(key+".clusterSelector", t.ClusterSelector))
			ex.exclude = append(ex.exclude, fleetv1alpha1.BundleTarget{ClusterName: t.ClusterName, ClusterSelector: t.ClusterSelector})
			rep.unsupported = append(rep.unsupported, key+" ("+what+" not supported by drover: the clusters it matches get nothing from this path)")
			continue
		case t.DoNotDeploy && byCluster:
			// The clusters it matches get nothing: excluded from the Bundle. Stricter than
			// Fleet's first match when an earlier customization matches them too.
			errs = append(errs, validSelector(key+".clusterSelector", t.ClusterSelector))
			ex.exclude = append(ex.exclude, fleetv1alpha1.BundleTarget{ClusterName: t.ClusterName, ClusterSelector: t.ClusterSelector})
			if len(group) > 0 {
				rep.differs = append(rep.differs, key+".doNotDeploy (drover has no ClusterGroups: the clusters its clusterName/clusterSelector match are excluded, whatever their group)")
			}
			continue
		case t.DoNotDeploy && len(group) > 0:
			// Which clusters the group holds is unknown to drover: deploy to none (fail closed).
			ex.exclude = append(ex.exclude, fleetv1alpha1.BundleTarget{ClusterSelector: &metav1.LabelSelector{}})
			rep.unsupported = append(rep.unsupported, key+" (doNotDeploy for a ClusterGroup, which drover does not have: the path is deployed to no cluster; select the clusters by clusterName or clusterSelector)")
			continue
		case len(group) > 0:
			// Fleet matches a cluster in the group that also matches the rest: in drover, none.
			rep.unsupported = append(rep.unsupported, key+" (matches no cluster: drover has no ClusterGroups: left out)")
			continue
		case !byCluster:
			rep.unsupported = append(rep.unsupported, key+" (matches no cluster without clusterName or clusterSelector: left out)")
			continue
		case t.DoNotDeploy:
			continue
		}
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("target-%d", i)
		}
		tc := TargetCustomization{Name: name, ClusterName: t.ClusterName, ClusterSelector: t.ClusterSelector,
			DefaultNamespace: t.DefaultNamespace, Kustomize: t.Kustomize, namespace: t.Namespace, fleetKey: key}
		if t.Helm != nil {
			tc.Helm = &TargetHelm{Values: t.Helm.Values, ValuesFiles: t.Helm.ValuesFiles, ValuesFrom: t.Helm.ValuesFrom}
		}
		c.TargetCustomizations = append(c.TargetCustomizations, tc)
	}
	if len(ex.exclude) > maxTargets {
		errs = append(errs, fmt.Errorf("targetCustomizations: %d with doNotDeploy or content drover does not support, at most %d", len(ex.exclude), maxTargets))
	}
	if len(f.OverrideTargets) > 0 {
		// They replace the GitRepo's targets for this path. An entry drover cannot match is left
		// out: with none left, the path targets no cluster.
		ex.override = true
		for i, t := range f.OverrideTargets {
			key := fmt.Sprintf("overrideTargets[%d]", i)
			group := groupKeys(key, t.ClusterGroup, t.ClusterGroupSelector)
			rep.unsupported = append(rep.unsupported, group...)
			switch {
			case len(group) > 0:
				rep.unsupported = append(rep.unsupported, key+" (matches no cluster: drover has no ClusterGroups: left out)")
				continue
			case t.ClusterName == "" && t.ClusterSelector == nil:
				rep.unsupported = append(rep.unsupported, key+" (matches no cluster without clusterName or clusterSelector: left out)")
				continue
			}
			errs = append(errs, validSelector(key+".clusterSelector", t.ClusterSelector))
			ex.targets = append(ex.targets, fleetv1alpha1.BundleTarget{ClusterName: t.ClusterName, ClusterSelector: t.ClusterSelector})
		}
		if len(ex.targets) == 0 {
			rep.differs = append(rep.differs, "overrideTargets (no entry drover can match: the path is deployed to no cluster)")
		}
		if len(ex.targets) > maxTargets {
			errs = append(errs, fmt.Errorf("overrideTargets: %d entries, at most %d", len(ex.targets), maxTargets))
		}
	}
	if f.Diff != nil {
		d, skipped := fleetIgnore(f.Diff.ComparePatches)
		c.Diff, rep.unsupported = d, append(rep.unsupported, skipped...)
	}
	if err := joinErrors(slices.DeleteFunc(errs, func(err error) bool { return err == nil })); err != nil {
		return nil, nil, err
	}
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	return c, rep, nil
}

// maxTargets is the most targets (and excludes) a Bundle has (its CRD's limit).
const maxTargets = 100

func validSelector(key string, s *metav1.LabelSelector) error {
	if s == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// targets are the clusters the path's Bundle targets: fleet.yaml's overrideTargets replace the
// GitRepo's targets.
func (c *Config) targets(gr *fleetv1alpha1.GitRepo) []fleetv1alpha1.BundleTarget {
	if c.fleet != nil && c.fleet.override {
		return c.fleet.targets
	}
	return gr.Spec.Targets
}

// exclude are the clusters the path's Bundle leaves out (fleet.yaml's doNotDeploy customizations).
func (c *Config) exclude() []fleetv1alpha1.BundleTarget {
	if c.fleet == nil {
		return nil
	}
	return c.fleet.exclude
}

// withoutChartlessHelm drops a fleet.yaml's helm options from a path without a chart (no
// Chart.yaml, no helm.chart or helm.repo), and its customizations' helm values, naming each:
// Fleet deploys every bundle as a Helm release, so Fleet repositories set them on plain
// manifests, which drover deploys as they are. drover.yaml keeps failing on them.
func (c *Config) withoutChartlessHelm() []string {
	const why = " (the path has no Helm chart: its manifests are deployed as they are, not as a Helm release)"
	if c.fleet == nil || c.Helm != nil && (c.Helm.Chart != "" || c.Helm.Repo != "") {
		return nil
	}
	var out []string
	if h := c.Helm; h != nil {
		for _, k := range []struct {
			key string
			set bool
		}{{"helm.releaseName", h.ReleaseName != ""}, {"helm.version", h.Version != ""}, {"helm.values", len(h.Values) > 0}, {"helm.valuesFiles", len(h.ValuesFiles) > 0}} {
			if k.set {
				out = append(out, k.key+why)
			}
		}
		c.Helm = nil
	}
	tcs := slices.Clone(c.TargetCustomizations)
	for i := range tcs {
		if tcs[i].Helm != nil {
			out = append(out, tcs[i].fleetKey+".helm"+why)
			tcs[i].Helm = nil
		}
	}
	c.TargetCustomizations = tcs
	return out
}

// fleetIgnore maps Fleet's diff.comparePatches to drover's diff.ignore: jsonPointers, and the
// paths of "remove" operations (Fleet's way to ignore a field), are ignored fields. Other
// operations, and patches without apiVersion or kind, are listed as not supported.
func fleetIgnore(patches []fleetComparePatch) (*fleetv1alpha1.BundleDiff, []string) {
	var skipped []string
	d := &fleetv1alpha1.BundleDiff{}
	for i, p := range patches {
		key := fmt.Sprintf("diff.comparePatches[%d]", i)
		pointers := append([]string(nil), p.JSONPointers...)
		for j, op := range p.Operations {
			if op.Op == "remove" && op.Path != "" {
				pointers = append(pointers, op.Path)
				continue
			}
			skipped = append(skipped, fmt.Sprintf("%s.operations[%d] (op %q: only remove is supported)", key, j, op.Op))
		}
		switch {
		case p.APIVersion == "" || p.Kind == "":
			skipped = append(skipped, key+" (no apiVersion or kind: left out)")
		case len(pointers) == 0:
			skipped = append(skipped, key+" (no jsonPointers: left out)")
		default:
			d.Ignore = append(d.Ignore, fleetv1alpha1.BundleDiffIgnore{APIVersion: p.APIVersion, Kind: p.Kind,
				Name: p.Name, Namespace: p.Namespace, JSONPointers: pointers})
		}
	}
	if len(d.Ignore) == 0 {
		return nil, skipped
	}
	return d, skipped
}

// fleetSelector reads Fleet's GitRepo label in a dependsOn selector as drover's.
func fleetSelector(s *metav1.LabelSelector) *metav1.LabelSelector {
	s = s.DeepCopy()
	if v, ok := s.MatchLabels[fleetRepoLabel]; ok {
		delete(s.MatchLabels, fleetRepoLabel)
		s.MatchLabels[fleetv1alpha1.GitRepoNameLabel] = v
	}
	for i := range s.MatchExpressions {
		if s.MatchExpressions[i].Key == fleetRepoLabel {
			s.MatchExpressions[i].Key = fleetv1alpha1.GitRepoNameLabel
		}
	}
	return s
}

// withFleetDirs adds to paths every directory below one of them that holds a fleet.yaml (not
// in a hidden directory): in Fleet each is a bundle of its own.
func withFleetDirs(co *checkout, paths []string) []string {
	seen := map[string]bool{}
	for _, p := range paths {
		seen[p] = true
	}
	out := paths
	for _, d := range co.dirs {
		if seen[d] {
			continue
		}
		if _, ok := co.files[joinPath(d, FleetFile)]; !ok {
			continue
		}
		for _, p := range paths {
			if under(d, p) && !hidden(strings.TrimPrefix(d, p+"/")) && (p != "." || !hidden(d)) {
				seen[d] = true
				out = append(out, d)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// mapFleetDependencies maps the dependsOn names of the Bundles read from fleet.yaml files that
// name another path of the same GitRepo, by its fleet.yaml name or by the name Fleet gives its
// Bundle, to that path's Bundle name. Fleet's default names ("<gitrepo>-<path>") are drover's up
// to 53 characters; longer ones Fleet shortens with a hash (fleetBundleNames), which fleet.yaml
// files then name.
func mapFleetDependencies(repo string, out []rendered) {
	byFleetName := map[string]string{}
	for _, r := range out {
		for _, n := range fleetBundleNames(repo, r.path) {
			byFleetName[n] = r.name
		}
	}
	for _, r := range out {
		if r.fleetName != "" {
			byFleetName[r.fleetName] = r.name // an explicit name wins
		}
	}
	for i := range out {
		for j, d := range out[i].spec.DependsOn {
			if n, ok := byFleetName[d.Name]; ok && d.Name != "" {
				out[i].spec.DependsOn[j].Name = n
			}
		}
	}
}

var (
	fleetDisallowed = regexp.MustCompile(`[^a-zA-Z0-9-]+`)
	fleetMultiDash  = regexp.MustCompile(`-+`)
	fleetValidName  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// fleetBundleNames are the names Fleet gives the Bundle of path p of GitRepo repo (its
// name.HelmReleaseName of "<repo>-<path>": cleaned up, and past Helm's 53 characters cut with a
// hash), with the hash of today's Fleet (SHA-256) and of older ones (MD5).
func fleetBundleNames(repo, p string) []string {
	str := repo
	if p = cleanPath(p); p != "." {
		str = repo + "-" + p
	}
	var out []string
	for _, hash := range []func(string) string{
		func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) },
		func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }, //nolint:gosec // Fleet's name, not security
	} {
		s := strings.ReplaceAll(str, "/", "-")
		if s != strings.ToLower(s) || fleetDisallowed.MatchString(s) {
			s += "-" + hash(s)[:8]
		}
		s = strings.Trim(fleetMultiDash.ReplaceAllString(fleetDisallowed.ReplaceAllLiteralString(strings.ToLower(s), "-"), "-"), "-")
		switch {
		case !fleetValidName.MatchString(s):
			s = hash(str)[:24]
		case len(s) > 53:
			s = s[:47] + "-" + hash(s)[:5]
		}
		out = append(out, s)
	}
	return out
}
