package gitrepo

import (
	"errors"
	"fmt"
	"reflect"
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
}

// fleetConfig is the part of Fleet's fleet.yaml drover reads. Keys outside it are reported.
type fleetConfig struct {
	Name                 string                           `json:"name,omitempty"`
	Labels               map[string]string                `json:"labels,omitempty"`
	DefaultNamespace     string                           `json:"defaultNamespace,omitempty"`
	Namespace            string                           `json:"namespace,omitempty"`
	KeepResources        bool                             `json:"keepResources,omitempty"`
	CorrectDrift         *fleetCorrectDrift               `json:"correctDrift,omitempty"`
	Helm                 *HelmConfig                      `json:"helm,omitempty"`
	Kustomize            *KustomizeConfig                 `json:"kustomize,omitempty"`
	TargetCustomizations []fleetTarget                    `json:"targetCustomizations,omitempty"`
	DependsOn            []fleetv1alpha1.BundleDependency `json:"dependsOn,omitempty"`
	Diff                 *fleetDiff                       `json:"diff,omitempty"`
	Paused               bool                             `json:"paused,omitempty"`
	RolloutStrategy      *fleetRollout                    `json:"rolloutStrategy,omitempty"`
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
	Name             string                `json:"name,omitempty"`
	ClusterName      string                `json:"clusterName,omitempty"`
	ClusterSelector  *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	DefaultNamespace string                `json:"defaultNamespace,omitempty"`
	Namespace        string                `json:"namespace,omitempty"`
	Helm             *TargetHelm           `json:"helm,omitempty"`
	Kustomize        *KustomizeConfig      `json:"kustomize,omitempty"`
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

// parseFleetConfig reads a fleet.yaml into the Config it means for drover, and lists what it
// could not use: keys drover does not support (full dotted paths) and values it cannot honour.
// Wrong types and invalid values of supported keys are errors naming the key.
func parseFleetConfig(data []byte) (*Config, []string, error) {
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, nil, errors.New(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
	}
	unsupported := unknownKeys(raw, reflect.TypeFor[fleetConfig](), "")
	var f fleetConfig
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, nil, errors.New(strings.TrimPrefix(strings.TrimPrefix(err.Error(), "error unmarshaling JSON: "), "while decoding JSON: "))
	}
	c := &Config{
		DefaultNamespace: f.DefaultNamespace,
		KeepResources:    f.KeepResources,
		Helm:             f.Helm,
		Kustomize:        f.Kustomize,
		DependsOn:        f.DependsOn,
		Labels:           f.Labels,
		fleet:            &fleetExtras{namespace: f.Namespace, name: f.Name},
	}
	if f.Paused || (f.RolloutStrategy != nil && f.RolloutStrategy.MaxUnavailable != nil) {
		c.Rollout = &fleetv1alpha1.BundleRollout{Paused: f.Paused}
		if f.RolloutStrategy != nil {
			c.Rollout.MaxUnavailable = f.RolloutStrategy.MaxUnavailable
		}
	}
	if f.CorrectDrift != nil {
		c.CorrectDrift = f.CorrectDrift.Enabled
	}
	if err := validNamespace("namespace", f.Namespace); err != nil {
		return nil, nil, err
	}
	if f.Namespace != "" {
		c.DefaultNamespace = f.Namespace
	}
	if f.Helm != nil {
		unsupported = append(unsupported, templated("helm.values", f.Helm.Values)...)
	}
	for i, d := range c.DependsOn {
		if d.Selector != nil {
			c.DependsOn[i].Selector = fleetSelector(d.Selector)
		}
	}
	for i, t := range f.TargetCustomizations {
		key := fmt.Sprintf("targetCustomizations[%d]", i)
		if t.ClusterName == "" && t.ClusterSelector == nil {
			// Only clusterGroup(Selector), already reported: it cannot match, so it is left out.
			unsupported = append(unsupported, key+" (matches no cluster without clusterName or clusterSelector: left out)")
			continue
		}
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("target-%d", i)
		}
		tc := TargetCustomization{Name: name, ClusterName: t.ClusterName, ClusterSelector: t.ClusterSelector,
			DefaultNamespace: t.DefaultNamespace, Helm: t.Helm, Kustomize: t.Kustomize, namespace: t.Namespace}
		if t.Helm != nil {
			unsupported = append(unsupported, templated(key+".helm.values", t.Helm.Values)...)
		}
		c.TargetCustomizations = append(c.TargetCustomizations, tc)
	}
	if f.Diff != nil {
		d, skipped := fleetIgnore(f.Diff.ComparePatches)
		c.Diff, unsupported = d, append(unsupported, skipped...)
	}
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	sort.Strings(unsupported)
	return c, unsupported, nil
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

// templated lists the keys of Helm values using Fleet's templating ("${ .ClusterLabels.env }"),
// which drover passes to the chart literally.
func templated(key string, v any) []string {
	switch v := v.(type) {
	case map[string]any:
		var out []string
		for k, sub := range v {
			out = append(out, templated(key+"."+k, sub)...)
		}
		return out
	case []any:
		var out []string
		for i, sub := range v {
			out = append(out, templated(fmt.Sprintf("%s[%d]", key, i), sub)...)
		}
		return out
	case string:
		if strings.Contains(v, "${") {
			return []string{key + " (Fleet templating ${ } is not supported: passed literally)"}
		}
	}
	return nil
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
// name another path of the same GitRepo by its fleet.yaml name to that path's Bundle name.
// Fleet's default bundle names (the GitRepo's name, "-", the path with "/" as "-") are drover's
// Bundle names already (up to 53 characters, where Fleet starts shortening names).
func mapFleetDependencies(out []rendered) {
	byFleetName := map[string]string{}
	for _, r := range out {
		if r.fleetName != "" {
			byFleetName[r.fleetName] = r.name
		}
	}
	if len(byFleetName) == 0 {
		return
	}
	for i := range out {
		for j, d := range out[i].spec.DependsOn {
			if n, ok := byFleetName[d.Name]; ok && d.Name != "" {
				out[i].spec.DependsOn[j].Name = n
			}
		}
	}
}
