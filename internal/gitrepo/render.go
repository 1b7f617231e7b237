package gitrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// ConfigFile is the per-path settings file.
const ConfigFile = "drover.yaml"

// maxResources is the most manifests a Bundle holds (its CRD's limit).
const maxResources = 1000

// Config is a path's drover.yaml.
type Config struct {
	// DefaultNamespace is the namespace of namespaced resources without one.
	DefaultNamespace string `json:"defaultNamespace,omitempty"`
	// CorrectDrift, ForceConflicts and KeepResources are the Bundle options of the same names.
	CorrectDrift   bool `json:"correctDrift,omitempty"`
	ForceConflicts bool `json:"forceConflicts,omitempty"`
	KeepResources  bool `json:"keepResources,omitempty"`
	// Helm deploys a chart as a Helm release (see HelmConfig).
	Helm *HelmConfig `json:"helm,omitempty"`
	// DependsOn names the Bundles (by name, or by label selector) that must be ready on a
	// cluster before this path's Bundle is deployed there (Bundle spec.dependsOn).
	DependsOn []fleetv1alpha1.BundleDependency `json:"dependsOn,omitempty"`
	// Kustomize renders a kustomization directory of the path instead of the path itself.
	Kustomize *KustomizeConfig `json:"kustomize,omitempty"`
	// TargetCustomizations give some of the targeted clusters other Helm values, another
	// kustomization directory or another defaultNamespace: the first one a cluster matches
	// applies (Bundle spec.targetCustomizations).
	TargetCustomizations []TargetCustomization `json:"targetCustomizations,omitempty"`
	// Diff says which downstream differences are not drift (Bundle spec.diff).
	Diff *fleetv1alpha1.BundleDiff `json:"diff,omitempty"`
	// Rollout limits how a new commit reaches the clusters running the previous one (Bundle
	// spec.rollout): maxUnavailable (a number, or a percentage of the targeted clusters) and
	// paused.
	Rollout *fleetv1alpha1.BundleRollout `json:"rollout,omitempty"`
	// Labels are the Bundle's own labels, for other paths' dependsOn selectors (not
	// fleet.drover.io/ keys, which drover sets).
	Labels map[string]string `json:"labels,omitempty"`

	// Read from a fleet.yaml only (see fleetyaml.go).
	fleet *fleetExtras
}

// rendered is the Bundle content of one path.
type rendered struct {
	name string
	path string
	spec fleetv1alpha1.BundleSpec
	// labels are extra Bundle labels (fleet.yaml's labels).
	labels map[string]string
	// fleetName is the bundle name a fleet.yaml's name key gave this path in Fleet.
	fleetName string
	// warnings name what of the path's settings file drover did not use (fleet.yaml keys it
	// does not support).
	warnings []string
	// holdNew (a paused fleet.yaml) creates the Bundle targeting no cluster, and keeps it so
	// while it targets none: in Fleet a paused bundle deploys nowhere (see holdTargets).
	holdNew bool
}

// matchPaths returns the directories of co matching any of the globs (default: the root),
// sorted. Hidden directories (a segment starting with ".") match only a glob naming them.
func matchPaths(co *checkout, globs []string) ([]string, error) {
	if len(globs) == 0 {
		globs = []string{"."}
	}
	var out []string
	seen := map[string]bool{}
	for _, g := range globs {
		g = cleanPath(g)
		if _, err := path.Match(g, ""); err != nil {
			return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "spec.paths: %q is not a valid glob", g)
		}
		for _, d := range co.dirs {
			if ok, _ := path.Match(g, d); ok && !seen[d] && (!hidden(d) || g == d) {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func cleanPath(p string) string {
	p = path.Clean("/" + strings.TrimSpace(p))
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}

func hidden(p string) bool {
	for _, s := range strings.Split(p, "/") {
		if strings.HasPrefix(s, ".") && s != "." {
			return true
		}
	}
	return false
}

// under reports whether file f is inside directory dir.
func under(f, dir string) bool {
	return dir == "." || strings.HasPrefix(f, dir+"/")
}

// render turns every matching path of co into a Bundle spec for gr. A path's files are the
// manifests below it, except those in hidden directories and in deeper matching paths (which are
// Bundles of their own). Directories without any manifest are skipped.
func render(ctx context.Context, co *checkout, gr *fleetv1alpha1.GitRepo) ([]rendered, error) {
	paths, err := matchPaths(co, gr.Spec.Paths)
	if err != nil {
		return nil, err
	}
	paths = withFleetDirs(co, paths)
	files := make([]string, 0, len(co.files))
	for f := range co.files {
		files = append(files, f)
	}
	sort.Strings(files)
	var out []rendered
	names := map[string]string{}
	for _, p := range paths {
		var own []string
		for _, f := range files {
			if !under(f, p) || hidden(strings.TrimPrefix(f, p+"/")) {
				continue
			}
			deeper := false
			for _, q := range paths {
				if q != p && under(q, p) && q != "." && under(f, q) {
					deeper = true
					break
				}
			}
			if !deeper {
				own = append(own, f)
			}
		}
		if len(own) == 0 {
			continue
		}
		r, err := renderPath(ctx, co, gr, p, own)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		if other, dup := names[r.name]; dup {
			return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "paths %q and %q would both be Bundle %s: rename one directory", other, p, r.name)
		}
		names[r.name] = p
		out = append(out, *r)
	}
	mapFleetDependencies(gr.Name, out)
	return out, nil
}

// renderPath renders one path from its files (sorted slash paths below it). It returns nil for
// a path with only a drover.yaml and no manifests.
func renderPath(ctx context.Context, co *checkout, gr *fleetv1alpha1.GitRepo, p string, files []string) (*rendered, error) {
	rel := func(f string) string { return strings.TrimPrefix(f, p+"/") }
	var cfg Config
	var manifests, warnings []string
	kustomization, cfgFile, fleetFile, chart, fleetChart := "", "", "", false, false
	for _, f := range files {
		switch rel(f) {
		case ConfigFile:
			c, err := parseConfig(co.files[f])
			if err != nil {
				return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s", p, f, err.Error())
			}
			cfg, cfgFile = *c, f
			continue
		case FleetFile:
			fleetFile = f
			continue
		case chartFile:
			chart = true
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
			kustomization = f
		}
		if b := path.Base(f); b == ConfigFile || b == FleetFile || b == chartFile || isKustomization(b) {
			continue // settings of a path that does not match spec.paths, or a Kustomize base
		}
		manifests = append(manifests, f)
	}
	switch {
	case fleetFile != "" && cfgFile != "":
		warnings = append(warnings, fmt.Sprintf("%s: not read: the path has a %s, which drover reads instead", fleetFile, ConfigFile))
	case fleetFile != "":
		c, rep, err := parseFleetConfig(co.files[fleetFile])
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s", p, fleetFile, err.Error())
		}
		cfg, cfgFile = *c, fleetFile
		if !chart && kustomization == "" && cfg.Kustomize == nil && (cfg.Helm == nil || cfg.Helm.Chart == "" && cfg.Helm.Repo == "") &&
			slices.ContainsFunc(manifests, func(f string) bool { return under(f, joinPath(p, "templates")) }) {
			// Fleet makes a chart of a chartless path with a templates/ directory: its files
			// are Helm templates rendered with the fleet.yaml's values, the path's other
			// manifests are deployed as they are, in the same release.
			fleetChart = true
		}
		if !chart && !fleetChart {
			rep.unsupported = append(rep.unsupported, cfg.withoutChartlessHelm()...)
		}
		if !rep.empty() {
			warnings = append(warnings, fmt.Sprintf("%s: %s", fleetFile, rep.String()))
		}
	}
	if cfg.fleet != nil {
		// Fleet's overlays/NAME directories hold what customizations' yaml.overlays add or
		// patch for their clusters, never the path's own manifests (drover does not apply
		// overlays: a customization naming one gets nothing, see parseFleetConfig).
		overlays := joinPath(p, "overlays")
		manifests = slices.DeleteFunc(manifests, func(f string) bool { return under(f, overlays) })
	}
	// Files of the kustomization directories drover.yaml names are Kustomize's input, not
	// manifests of the path.
	if dirs := cfg.kustomizeDirs(p); len(dirs) > 0 {
		manifests = slices.DeleteFunc(manifests, func(f string) bool {
			return slices.ContainsFunc(dirs, func(d string) bool { return under(f, d) })
		})
	}
	r := &rendered{name: BundleName(gr.Name, p), path: p, warnings: warnings, spec: fleetv1alpha1.BundleSpec{
		DefaultNamespace: cfg.DefaultNamespace,
		Targets:          cfg.targets(gr),
		Exclude:          cfg.exclude(),
		CorrectDrift:     cfg.CorrectDrift,
		ForceConflicts:   cfg.ForceConflicts,
		KeepResources:    cfg.KeepResources,
		DependsOn:        cfg.DependsOn,
		// A redeploy asked of the GitRepo is one of each of its Bundles.
		ForceSyncGeneration: gr.Spec.ForceSyncGeneration,
		Diff:                cfg.Diff,
	}, labels: cfg.Labels}
	if cfg.Rollout != nil {
		r.spec.Rollout = *cfg.Rollout
	}
	if cfg.fleet != nil {
		r.fleetName, r.holdNew = cfg.fleet.name, cfg.fleet.paused
	}
	if chart || fleetChart || cfg.Helm != nil {
		// A Helm chart (the path's own, or named by drover.yaml): the Bundle is its release.
		if cfg.Kustomize != nil {
			return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: kustomize: a Helm chart's path cannot be rendered with Kustomize", p, orChart(cfgFile, p))
		}
		source := withoutSettings(co, p)
		if fleetChart {
			source = templatesChart(source, p, r.name, manifests)
		}
		h, custom, err := renderHelm(ctx, source, gr, p, cfgFile, &cfg)
		if err != nil {
			return nil, err
		}
		r.spec.Helm, r.spec.TargetCustomizations = h, custom
		return r, checkSize(r, cfgFile)
	}
	var resources []runtime.RawExtension
	switch {
	case cfg.Kustomize != nil:
		dir := joinPath(p, cfg.Kustomize.Dir)
		var err error
		if resources, err = kustomizeResources(co, p, dir, cfgFile, "kustomize.dir"); err != nil {
			return nil, err
		}
	case kustomization != "":
		out, err := kustomizeBuild(co, p)
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s", p, kustomization, err.Error())
		}
		if resources, err = parseManifests(out); err != nil {
			return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: output: %s", p, kustomization, err.Error())
		}
	default:
		if len(manifests) == 0 && len(cfg.TargetCustomizations) == 0 {
			return nil, nil
		}
		defined := map[objectKey]string{} // where each object is defined
		for _, f := range manifests {
			docs, err := parseManifests(co.files[f])
			if err != nil {
				return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s", p, f, err.Error())
			}
			for _, d := range docs {
				k, err := keyOf(d)
				if err != nil {
					return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s", p, f, err.Error())
				}
				if other, ok := defined[k]; ok {
					// Applied twice, the later copy would win by file order: never what anyone meant.
					return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s is defined in %s too: define each object once per path", p, f, k, other)
				}
				defined[k] = f
			}
			resources = append(resources, docs...)
		}
	}
	if len(resources) > maxResources {
		return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %d manifests, more than %d: split it into several paths", p, len(resources), maxResources)
	}
	resources, err := inNamespace(resources, cfg.namespace())
	if err != nil {
		return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: namespace: %s", p, cfgFile, err.Error())
	}
	r.spec.Resources = resources
	if r.spec.TargetCustomizations, err = customizeResources(co, p, cfgFile, &cfg, resources); err != nil {
		return nil, err
	}
	return r, checkSize(r, cfgFile)
}

// templatesChart is co with path p made a chart as Fleet makes one of a chartless path with a
// templates/ directory: a Chart.yaml named name, and for each of the path's other manifests a
// template that outputs it as it is (not rendered: a "{{" in it stays), so that one release
// holds them all. A values.yaml stays the chart's default values.
func templatesChart(co *checkout, p, name string, manifests []string) *checkout {
	c := *co
	c.files = maps.Clone(co.files)
	c.files[joinPath(p, chartFile)] = []byte("apiVersion: v2\nname: " + name + "\nversion: 0.0.0\ndescription: made by drover of the path's templates/ directory, as Fleet does\n")
	templates := joinPath(p, "templates")
	for _, f := range manifests {
		rel := strings.TrimPrefix(f, p+"/")
		if under(f, templates) || rel == "values.yaml" || rel == "values.yml" {
			continue
		}
		c.files[joinPath(templates, "zz-drover-raw-"+strings.ReplaceAll(rel, "/", "_"))] = []byte(fmt.Sprintf("{{ .Files.Get %q }}\n", rel))
	}
	return &c
}

// withoutSettings is co without path p's drover.yaml and fleet.yaml, so that a chart at p is
// packaged without them: a change of its settings (a target customization's values) must not
// change the chart every cluster gets.
func withoutSettings(co *checkout, p string) *checkout {
	cfg, fleet := joinPath(p, ConfigFile), joinPath(p, FleetFile)
	_, hasCfg := co.files[cfg]
	_, hasFleet := co.files[fleet]
	if !hasCfg && !hasFleet {
		return co
	}
	if co.charts == nil {
		co.charts = map[string]repoChart{} // shared with the copy: downloads stay cached
	}
	c := *co
	c.files = maps.Clone(co.files)
	delete(c.files, cfg)
	delete(c.files, fleet)
	return &c
}

// parseConfig reads a drover.yaml: unknown keys and invalid values are errors naming the key.
func parseConfig(data []byte) (*Config, error) {
	c := &Config{}
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, errors.New(strings.TrimPrefix(strings.TrimPrefix(err.Error(), "error unmarshaling JSON: "), "while decoding JSON: "))
	}
	if unknown := unknownKeys(raw, reflect.TypeFor[Config](), ""); len(unknown) > 0 {
		return nil, fmt.Errorf("unknown key %s", strings.Join(quoteAll(unknown), ", "))
	}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, decodeError(err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeError says which key of a settings file has a value of the wrong type, in YAML's terms
// ("key correctDrift: want true or false, got an array"), not Go's.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		got := "a " + te.Value
		if strings.ContainsAny(te.Value[:min(1, len(te.Value))], "aeiou") {
			got = "an " + te.Value
		}
		return fmt.Errorf("key %s: want %s, got %s", te.Field, kindOf(te.Type), got)
	}
	return errors.New(strings.TrimPrefix(strings.TrimPrefix(err.Error(), "error unmarshaling JSON: "), "while decoding JSON: "))
}

// kindOf says what a value of t is written as in YAML, for errors.
func kindOf(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a map"
	case reflect.Pointer:
		return kindOf(t.Elem())
	}
	return "a " + t.String()
}

// validate checks the values of a drover.yaml (or of a fleet.yaml, once mapped): errors name
// the key, and every invalid key is reported at once (one commit fixes them all).
func (c *Config) validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(validNamespace("defaultNamespace", c.DefaultNamespace))
	if len(c.DependsOn) > 32 {
		add(fmt.Errorf("dependsOn: %d entries, at most 32", len(c.DependsOn)))
	}
	for i, d := range c.DependsOn {
		switch {
		case (d.Name == "") == (d.Selector == nil):
			add(fmt.Errorf("dependsOn[%d]: set exactly one of name and selector", i))
		case d.Name != "":
			if errs := validation.IsDNS1123Subdomain(d.Name); len(errs) > 0 {
				add(fmt.Errorf("dependsOn[%d].name: %q is not a Bundle name: %s", i, d.Name, strings.Join(errs, "; ")))
			}
		default:
			if _, err := metav1.LabelSelectorAsSelector(d.Selector); err != nil {
				add(fmt.Errorf("dependsOn[%d].selector: %w", i, err))
			}
		}
	}
	if c.Kustomize != nil {
		add(validDir("kustomize.dir", c.Kustomize.Dir))
	}
	if err := c.Diff.Validate(); err != nil {
		add(fmt.Errorf("diff.%w", err))
	}
	add(c.validateRollout())
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 || strings.HasPrefix(k, fleetv1alpha1.LabelPrefix) {
			add(fmt.Errorf("labels: %q is not a label key drover can set (%s)", k, strings.Join(append(errs, "not "+fleetv1alpha1.LabelPrefix+"*"), "; ")))
		}
		if errs := validation.IsValidLabelValue(c.Labels[k]); len(errs) > 0 {
			add(fmt.Errorf("labels.%s: %q: %s", k, c.Labels[k], strings.Join(errs, "; ")))
		}
	}
	errs = append(errs, c.validateCustomizations()...)
	return joinErrors(errs)
}

// joinErrors is errs on one line, "; "-separated (a condition message), or nil.
func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("%d errors: %s", len(errs), strings.Join(msgs, "; "))
}

// validateRollout checks rollout.maxUnavailable: a number ≥ 0 or a percentage from 0% to 100%.
func (c *Config) validateRollout() error {
	if c.Rollout == nil || c.Rollout.MaxUnavailable == nil {
		return nil
	}
	mu := c.Rollout.MaxUnavailable
	bad := func(why string) error {
		return fmt.Errorf("rollout.maxUnavailable: %q %s: give a number of clusters (2) or a percentage of the targeted clusters (\"25%%\")", mu.String(), why)
	}
	if mu.Type == intstr.Int {
		if mu.IntVal < 0 {
			return bad("is negative")
		}
		return nil
	}
	pct, ok := strings.CutSuffix(mu.StrVal, "%")
	v, err := strconv.Atoi(pct)
	switch {
	case !ok || err != nil:
		return bad("is not a number or a percentage")
	case v < 0 || v > 100:
		return bad("is not between 0% and 100%")
	}
	return nil
}

func validNamespace(key, ns string) error {
	if ns == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("%s: %q is not a namespace name: %s", key, ns, strings.Join(errs, "; "))
	}
	return nil
}

// parseManifests decodes a YAML (multi-document) or JSON file into manifests. Empty documents
// are skipped; every other must have apiVersion, kind and metadata.name.
func parseManifests(data []byte) ([]runtime.RawExtension, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []runtime.RawExtension
	for i := 1; ; i++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document %d: apiVersion, kind and metadata.name are required", i)
		}
		b, err := u.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, runtime.RawExtension{Raw: b})
	}
}

// objectKey identifies an object in a path's manifests: its group, kind, namespace as written
// and name.
type objectKey struct{ group, kind, namespace, name string }

func (k objectKey) String() string {
	kind := k.kind
	if k.group != "" {
		kind += "." + k.group
	}
	if k.namespace != "" {
		return kind + " " + k.namespace + "/" + k.name
	}
	return kind + " " + k.name
}

func keyOf(raw runtime.RawExtension) (objectKey, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw.Raw); err != nil {
		return objectKey{}, err
	}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return objectKey{}, err
	}
	return objectKey{gv.Group, u.GetKind(), u.GetNamespace(), u.GetName()}, nil
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// maxNameLength keeps Bundle names usable as label values.
const maxNameLength = validation.LabelValueMaxLength

// BundleName is the name of the Bundle of path p of GitRepo repo: "<repo>-<path>" with "/" and
// other characters invalid in names turned into "-", lowercased; the root path is "<repo>". A
// name longer than 63 characters is cut and ends in a hash of the untruncated name, so it stays
// stable and unique.
func BundleName(repo, p string) string {
	full := repo
	if p = cleanPath(p); p != "." {
		full = repo + "-" + p
	}
	n := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(full), "-"), "-")
	if len(n) <= maxNameLength {
		return n
	}
	h := sha256.Sum256([]byte(full))
	return strings.TrimRight(n[:maxNameLength-9], "-") + "-" + hex.EncodeToString(h[:])[:8]
}

// specHash identifies a rendered Bundle spec (with its labels, when it has some), so unchanged
// Bundles are not written.
func specHash(s any) string {
	b, _ := json.Marshal(s)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:16]
}
