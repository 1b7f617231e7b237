package gitrepo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/deployer"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/helmchart"
)

// chartFile marks a Helm chart's directory.
const chartFile = "Chart.yaml"

// HelmConfig is the helm key of a path's drover.yaml (Fleet's fleet.yaml keys of the same names).
type HelmConfig struct {
	// Chart is a chart directory relative to the path (default: the path itself, when it has a
	// Chart.yaml), or with Repo the chart's name in that repository, or the http(s):// URL of a
	// chart archive (.tgz), or an oci:// reference.
	Chart string `json:"chart,omitempty"`
	// Repo is the URL of an HTTP(S) Helm repository (its index.yaml) holding Chart.
	Repo string `json:"repo,omitempty"`
	// Version is the chart version in Repo: exact or a semver constraint (default: the latest
	// stable one).
	Version string `json:"version,omitempty"`
	// ReleaseName is the Helm release's name (default: the Bundle's name).
	ReleaseName string `json:"releaseName,omitempty"`
	// Values override the chart's values, after ValuesFiles.
	Values map[string]any `json:"values,omitempty"`
	// ValuesFiles are YAML files relative to the path, merged in order over the chart's values.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// TemplateValues renders the values per cluster (Bundle spec.helm.templateValues: ${ }
	// templates over the cluster's name, namespace, labels and annotations).
	TemplateValues bool `json:"templateValues,omitempty"`
	// ValuesFrom are ConfigMap and Secret keys the agent reads on the downstream cluster and
	// merges over the values (Bundle spec.helm.valuesFrom): secrets that never enter Git.
	ValuesFrom []fleetv1alpha1.HelmValuesFrom `json:"valuesFrom,omitempty"`

	// template: the values are Fleet's template, rendered per cluster (a fleet.yaml's, unless
	// helm.disablePreProcess); drover.yaml's values are used as written.
	template bool
}

// repoChart is a chart downloaded from a Helm repository or an OCI registry.
type repoChart struct {
	archive []byte
	version string
	source  string // where it came from, for messages
}

// renderHelm makes the Helm part of path p's Bundle: the chart (the path's own, a directory of
// the repository, or one downloaded from a Helm repository), the merged values and the release
// name, and the target customizations with their complete values. It renders the chart as
// `helm template` would (once per customization with values of its own), so a chart that
// cannot render is a RenderFailed naming its file, and the Bundles of the last good commit
// stay. cfgFile names the drover.yaml or fleet.yaml ("" when there is none).
func renderHelm(ctx context.Context, co *checkout, gr *fleetv1alpha1.GitRepo, p, cfgFile string, cfg *Config) (*fleetv1alpha1.BundleHelm, []fleetv1alpha1.BundleTargetCustomization, error) {
	h := cfg.Helm
	if h == nil {
		h = &HelmConfig{}
	}
	where := cfgFile
	if where == "" {
		where = joinPath(p, chartFile)
	}
	fail := func(file, format string, args ...any) error {
		return failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s", p, file, fmt.Sprintf(format, args...))
	}
	var archive []byte
	chartDir, source := "", ""
	switch {
	case h.Repo != "" || strings.HasPrefix(h.Chart, helmchart.OCIScheme) || isURL(h.Chart):
		access := co.helm
		if access == nil {
			access = defaultHelmAccess
		}
		var err error
		if archive, source, err = access.chart(ctx, co, h); err != nil {
			return nil, nil, fail(where, "%s", err.Error())
		}
	default:
		chartDir = p
		if h.Chart != "" {
			chartDir = cleanPath(path.Join(p, h.Chart))
			if strings.HasPrefix(chartDir, "../") || chartDir == ".." {
				return nil, nil, fail(where, "helm.chart %q is outside the repository", h.Chart)
			}
		}
		files := filesUnder(co, chartDir)
		if _, ok := files[chartFile]; !ok {
			return nil, nil, fail(where, "helm.chart: no %s in %s", chartFile, chartDir)
		}
		var err error
		if archive, err = helmchart.Package(files); err != nil {
			return nil, nil, fail(joinPath(chartDir, chartFile), "%s", err.Error())
		}
	}
	values := map[string]any{}
	if err := addValues(co, p, where, "helm", values, h.ValuesFiles, h.Values); err != nil {
		return nil, nil, err
	}
	release := h.ReleaseName
	if release == "" {
		release = helmchart.ReleaseName(BundleName(gr.Name, p))
	} else if err := helmchart.ValidReleaseName(release); err != nil {
		return nil, nil, fail(where, "helm.releaseName: %s", err.Error())
	}
	// A fleet.yaml's templated values are rendered per cluster by the bundle controller: here
	// they are only parsed (a chart rendered with "${ ... }" in place of a number would fail).
	templated := (h.template || h.TemplateValues) && (bundle.Templated(values) || slices.ContainsFunc(cfg.TargetCustomizations, func(tc TargetCustomization) bool {
		return tc.Helm != nil && bundle.Templated(tc.Helm.Values)
	}))
	validFrom := func(key string, from []fleetv1alpha1.HelmValuesFrom) error {
		for i, f := range from {
			for _, ref := range []*fleetv1alpha1.ValuesKeyRef{f.ConfigMapKeyRef, f.SecretKeyRef} {
				if ref != nil && ref.Name == "" {
					return fail(where, "%s.valuesFrom[%d]: name is empty", key, i)
				}
			}
			if f.ConfigMapKeyRef == nil && f.SecretKeyRef == nil {
				return fail(where, "%s.valuesFrom[%d]: set configMapKeyRef or secretKeyRef", key, i)
			}
		}
		return nil
	}
	if err := validFrom("helm", h.ValuesFrom); err != nil {
		return nil, nil, err
	}
	// fromCluster: part of the values are read by the agents downstream (valuesFrom).
	check := func(values map[string]any, ns, key string, fromCluster bool) error {
		if fromCluster && !templated {
			// Part of the values is on the downstream clusters: the chart can only be
			// rendered there (a `required` value from a Secret would fail here).
			return nil
		}
		if templated {
			if err := bundle.ParseValuesTemplate(values); err != nil {
				if key == "" {
					return fail(where, "helm.values: %s", err.Error())
				}
				return fail(where, "%s.helm.values: %s", strings.Fields(key)[0], err.Error())
			}
			return nil
		}
		if ns == "" {
			ns = "default"
		}
		_, err := helmchart.Render(ctx, archive, values, release, ns)
		if err == nil {
			return nil
		}
		// Helm's message may quote values (a template's fail): hide the sensitive ones.
		msg := helmchart.Redact(err.Error(), values, deployer.Sensitive)
		file := where
		var re *helmchart.RenderError
		if errors.As(err, &re) && re.File != "" {
			if chartDir != "" {
				file = joinPath(chartDir, re.File)
			} else {
				file = source + ": " + re.File
			}
		} else if source != "" {
			file = source
		}
		if key != "" {
			return fail(file, "the chart does not render with the values of %s: %s", key, msg)
		}
		return fail(file, "the chart does not render: %s", msg)
	}
	if err := check(values, cfg.DefaultNamespace, "", len(h.ValuesFrom) > 0); err != nil {
		return nil, nil, err
	}
	out := &fleetv1alpha1.BundleHelm{Chart: archive, ReleaseName: release, TemplateValues: templated, ValuesFrom: h.ValuesFrom}
	if len(values) > 0 {
		raw, err := json.Marshal(values)
		if err != nil {
			return nil, nil, fail(where, "helm values: %s", err.Error())
		}
		out.Values = &runtime.RawExtension{Raw: raw}
	}
	var custom []fleetv1alpha1.BundleTargetCustomization
	for i := range cfg.TargetCustomizations {
		tc := &cfg.TargetCustomizations[i]
		key := fmt.Sprintf("targetCustomizations[%d]", i)
		if tc.Kustomize != nil {
			return nil, nil, fail(where, "%s.kustomize: a Helm chart's path cannot be rendered with Kustomize", key)
		}
		btc := tc.bundleCustomization()
		if tc.Helm != nil {
			own, err := cloneValues(values)
			if err != nil {
				return nil, nil, fail(where, "helm values: %s", err.Error())
			}
			if err := addValues(co, p, where, key+".helm", own, tc.Helm.ValuesFiles, tc.Helm.Values); err != nil {
				return nil, nil, err
			}
			if err := validFrom(key+".helm", tc.Helm.ValuesFrom); err != nil {
				return nil, nil, err
			}
			btc.HelmValuesFrom = tc.Helm.ValuesFrom
			ns := btc.DefaultNamespace
			if ns == "" {
				ns = cfg.DefaultNamespace
			}
			if err := check(own, ns, key+" ("+tc.Name+")", len(h.ValuesFrom) > 0 || len(tc.Helm.ValuesFrom) > 0); err != nil {
				return nil, nil, err
			}
			raw, err := json.Marshal(own)
			if err != nil {
				return nil, nil, fail(where, "%s.helm values: %s", key, err.Error())
			}
			btc.HelmValues = &runtime.RawExtension{Raw: raw}
		}
		custom = append(custom, btc)
	}
	return out, custom, nil
}

// addValues merges the values files (relative to path p, in order) and then values into into.
// key names the settings' key in errors ("helm", "targetCustomizations[0].helm").
func addValues(co *checkout, p, where, key string, into map[string]any, files []string, values map[string]any) error {
	for _, vf := range files {
		f := cleanPath(path.Join(p, vf))
		data, ok := co.files[f]
		if !ok {
			return failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: %s.valuesFiles: %s not found", p, where, key, f)
		}
		var v map[string]any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: %s: not a YAML map of values: %s", p, f, err.Error())
		}
		helmchart.MergeValues(into, v)
	}
	helmchart.MergeValues(into, values)
	return nil
}

// cloneValues deep-copies Helm values (mergeValues changes its destination in place).
func cloneValues(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(b, &out)
}

// filesUnder returns every file of the commit below dir, by path relative to dir.
func filesUnder(co *checkout, dir string) map[string][]byte {
	out := map[string][]byte{}
	for _, m := range []map[string][]byte{co.files, co.other} {
		for f, data := range m {
			if under(f, dir) {
				out[strings.TrimPrefix(f, dir+"/")] = data
			}
		}
	}
	return out
}

func joinPath(dir, f string) string {
	if dir == "." {
		return f
	}
	return dir + "/" + f
}
