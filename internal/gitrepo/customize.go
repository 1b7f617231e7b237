package gitrepo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// maxCustomizations is the most target customizations a path has (the Bundle CRD's limit).
const maxCustomizations = 32

// maxBundleBytes bounds a rendered Bundle's spec: Bundles are stored in etcd (1.5 MiB per
// object), with their target customizations' content.
const maxBundleBytes = 1_400_000

// KustomizeConfig is the kustomize key of drover.yaml (and fleet.yaml).
type KustomizeConfig struct {
	// Dir is a directory holding a kustomization.yaml, relative to the path.
	Dir string `json:"dir,omitempty"`
}

// TargetCustomization is one entry of drover.yaml's targetCustomizations: the targeted
// clusters it matches (clusterName and/or clusterSelector) get its Helm values merged over the
// path's, or its kustomization directory rendered instead of the path's, and/or its
// defaultNamespace. The first matching entry applies.
type TargetCustomization struct {
	// Name identifies the customization (required, unique in the file; a label value).
	Name string `json:"name"`
	// ClusterName matches the Cluster of that name.
	ClusterName string `json:"clusterName,omitempty"`
	// ClusterSelector matches Clusters by label.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// DefaultNamespace replaces the path's defaultNamespace.
	DefaultNamespace string `json:"defaultNamespace,omitempty"`
	// Helm values for the matching clusters (a Helm path only): valuesFiles then values are
	// merged over the path's helm values.
	Helm *TargetHelm `json:"helm,omitempty"`
	// Kustomize renders this kustomization directory (relative to the path) for the matching
	// clusters instead of the path's content (a path of manifests or Kustomize only).
	Kustomize *KustomizeConfig `json:"kustomize,omitempty"`

	// namespace (fleet.yaml's targetCustomizations[].namespace) forces every namespaced
	// resource of the matching clusters into it.
	namespace string
	// fleetKey is the entry's key in its fleet.yaml ("targetCustomizations[2]"), for messages.
	fleetKey string
}

// TargetHelm is the helm key of a target customization.
type TargetHelm struct {
	// Values are merged over the path's values, after ValuesFiles.
	Values map[string]any `json:"values,omitempty"`
	// ValuesFiles are YAML files relative to the path, merged in order over the path's values.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// ValuesFrom are added after the path's helm.valuesFrom (read by the agents downstream).
	ValuesFrom []fleetv1alpha1.HelmValuesFrom `json:"valuesFrom,omitempty"`
}

// bundleCustomization is tc's part of the Bundle's customization, without content.
func (tc *TargetCustomization) bundleCustomization() fleetv1alpha1.BundleTargetCustomization {
	out := fleetv1alpha1.BundleTargetCustomization{Name: tc.Name, ClusterName: tc.ClusterName,
		ClusterSelector: tc.ClusterSelector.DeepCopy(), DefaultNamespace: tc.DefaultNamespace}
	if tc.namespace != "" {
		out.DefaultNamespace = tc.namespace
	}
	return out
}

// namespace is the namespace every namespaced resource of the path is forced into (fleet.yaml's
// namespace key; drover.yaml has none).
func (c *Config) namespace() string {
	if c.fleet == nil {
		return ""
	}
	return c.fleet.namespace
}

// kustomizeDirs are the repository directories of path p that c renders with Kustomize.
func (c *Config) kustomizeDirs(p string) []string {
	var out []string
	if c.Kustomize != nil && c.Kustomize.Dir != "" {
		out = append(out, path.Clean(path.Join(p, c.Kustomize.Dir)))
	}
	for _, tc := range c.TargetCustomizations {
		if tc.Kustomize != nil && tc.Kustomize.Dir != "" {
			out = append(out, path.Clean(path.Join(p, tc.Kustomize.Dir)))
		}
	}
	return slices.DeleteFunc(out, func(d string) bool { return d == path.Clean(p) })
}

// validateCustomizations checks targetCustomizations, every entry and key.
func (c *Config) validateCustomizations() []error {
	if len(c.TargetCustomizations) > maxCustomizations {
		return []error{fmt.Errorf("targetCustomizations: %d entries, at most %d", len(c.TargetCustomizations), maxCustomizations)}
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	seen := map[string]int{}
	for i, tc := range c.TargetCustomizations {
		key := fmt.Sprintf("targetCustomizations[%d]", i)
		switch {
		case tc.Name == "":
			add(fmt.Errorf("%s.name: required", key))
		case len(validation.IsValidLabelValue(tc.Name)) > 0:
			add(fmt.Errorf("%s.name: %q must be 63 characters or less of letters, digits, '-', '_' and '.', starting and ending with a letter or digit", key, tc.Name))
		default:
			if j, dup := seen[tc.Name]; dup {
				add(fmt.Errorf("%s.name: %q is also the name of targetCustomizations[%d]", key, tc.Name, j))
			} else {
				seen[tc.Name] = i
			}
		}
		if tc.ClusterName == "" && tc.ClusterSelector == nil {
			add(fmt.Errorf("%s (%s): set clusterName and/or clusterSelector (without either it matches no cluster)", key, tc.Name))
		}
		if tc.ClusterSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(tc.ClusterSelector); err != nil {
				add(fmt.Errorf("%s.clusterSelector: %w", key, err))
			}
		}
		add(validNamespace(key+".defaultNamespace", tc.DefaultNamespace))
		add(validNamespace(key+".namespace", tc.namespace))
		if tc.Kustomize != nil {
			add(validDir(key+".kustomize.dir", tc.Kustomize.Dir))
		}
	}
	return errs
}

func validDir(key, dir string) error {
	switch {
	case strings.TrimSpace(dir) == "":
		return fmt.Errorf("%s: required", key)
	case path.IsAbs(dir):
		return fmt.Errorf("%s: %q must be relative to the path", key, dir)
	}
	return nil
}

// kustomizeResources renders the kustomization directory dir (a repository path) for path p;
// key names the setting of cfgFile that names it.
func kustomizeResources(co *checkout, p, dir, cfgFile, key string) ([]runtime.RawExtension, error) {
	dir = path.Clean(dir)
	if dir == ".." || strings.HasPrefix(dir, "../") {
		return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s: %s is outside the repository", p, cfgFile, key, dir)
	}
	kfile := ""
	for _, k := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, ok := co.files[joinPath(dir, k)]; ok {
			kfile = joinPath(dir, k)
			break
		}
	}
	if kfile == "" {
		return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s: no kustomization.yaml in %s", p, cfgFile, key, dir)
	}
	out, err := kustomizeBuild(co, dir)
	if err != nil {
		return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s (%s): %s", p, kfile, key, err.Error())
	}
	resources, err := parseManifests(out)
	if err != nil {
		return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s (%s): output: %s", p, kfile, key, err.Error())
	}
	if len(resources) > maxResources {
		return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s (%s): %d manifests, more than %d", p, kfile, key, len(resources), maxResources)
	}
	return resources, nil
}

// customizeResources renders the target customizations of a path of manifests or Kustomize:
// a customization with a kustomization directory gets its output as resources, one forcing a
// namespace (fleet.yaml) the path's resources in that namespace. Resources equal to the path's
// own are left out (the clusters share the path's content).
func customizeResources(co *checkout, p, cfgFile string, cfg *Config, own []runtime.RawExtension) ([]fleetv1alpha1.BundleTargetCustomization, error) {
	var out []fleetv1alpha1.BundleTargetCustomization
	for i := range cfg.TargetCustomizations {
		tc := &cfg.TargetCustomizations[i]
		key := fmt.Sprintf("targetCustomizations[%d]", i)
		if tc.Helm != nil {
			return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s.helm: the path is not a Helm chart (set helm in the path's settings, or add a Chart.yaml)", p, orChart(cfgFile, p), key)
		}
		btc := tc.bundleCustomization()
		resources := own
		if tc.Kustomize != nil {
			var err error
			if resources, err = kustomizeResources(co, p, path.Join(p, tc.Kustomize.Dir), cfgFile, key+".kustomize.dir"); err != nil {
				return nil, err
			}
		}
		ns := tc.namespace
		if ns == "" && tc.Kustomize != nil {
			ns = cfg.namespace()
		}
		resources, err := inNamespace(resources, ns)
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s.namespace: %s", p, cfgFile, key, err.Error())
		}
		if !sameResources(resources, own) {
			btc.Resources = resources
			if len(resources) == 0 {
				// An overlay rendering nothing: an empty object list is no override, so say so.
				return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s: renders no resources", p, cfgFile, key)
			}
		}
		out = append(out, btc)
	}
	return out, nil
}

func sameResources(a, b []runtime.RawExtension) bool {
	return slices.EqualFunc(a, b, func(x, y runtime.RawExtension) bool { return bytes.Equal(x.Raw, y.Raw) })
}

// inNamespace puts every resource that names a namespace into ns (fleet.yaml's namespace: the
// agent gives the namespaced ones without a namespace the Bundle's defaultNamespace, which is
// set to ns too, so cluster-scoped ones stay cluster-scoped). ns "" changes nothing.
func inNamespace(resources []runtime.RawExtension, ns string) ([]runtime.RawExtension, error) {
	if ns == "" {
		return resources, nil
	}
	out := make([]runtime.RawExtension, len(resources))
	for i, r := range resources {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(r.Raw); err != nil {
			return nil, fmt.Errorf("resource %d: %w", i+1, err)
		}
		if u.GetNamespace() == "" || u.GetNamespace() == ns {
			out[i] = r
			continue
		}
		u.SetNamespace(ns)
		b, err := u.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("resource %d: %w", i+1, err)
		}
		out[i] = runtime.RawExtension{Raw: b}
	}
	return out, nil
}

// checkSize refuses a Bundle too large to be stored.
func checkSize(r *rendered, cfgFile string) error {
	b, err := json.Marshal(&r.spec)
	if err != nil {
		return failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: encode the Bundle: %s", r.path, err.Error())
	}
	if len(b) <= maxBundleBytes {
		return nil
	}
	why := "split it into several paths"
	if len(r.spec.TargetCustomizations) > 0 {
		why = fmt.Sprintf("each of the %d target customizations of %s adds its content: use fewer, or split the path", len(r.spec.TargetCustomizations), orChart(cfgFile, r.path))
	}
	return failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: the Bundle would be %d bytes, more than %d: %s", r.path, len(b), maxBundleBytes, why)
}

// orChart names the settings file in a message, or the path's settings file to create.
func orChart(cfgFile, p string) string {
	if cfgFile != "" {
		return cfgFile
	}
	return joinPath(p, ConfigFile)
}

// unknownKeys lists the keys of v (decoded YAML or JSON) that the type t does not have, as
// dotted paths with list indexes ("helm.valueFiles", "targetCustomizations[1].yaml.overlays"; an
// unknown section by its keys), sorted.
// Maps of arbitrary keys (Helm values, labels) and raw objects are not looked into.
func unknownKeys(v any, t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok || t == reflect.TypeFor[runtime.RawExtension]() {
			return nil
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields[name] = f.Type
		}
		for k, sub := range m {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			ft, ok := fields[k]
			if !ok {
				// An unknown section is named by its keys ("rolloutStrategy.partitions").
				if sm, isMap := sub.(map[string]any); isMap && len(sm) > 0 {
					for sk := range sm {
						out = append(out, key+"."+sk)
					}
				} else {
					out = append(out, key)
				}
				continue
			}
			out = append(out, unknownKeys(sub, ft, key)...)
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			return nil
		}
		for i, e := range l {
			out = append(out, unknownKeys(e, t.Elem(), prefix+"["+strconv.Itoa(i)+"]")...)
		}
	}
	sort.Strings(out)
	return out
}

func quoteAll(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strconv.Quote(k)
	}
	return out
}
