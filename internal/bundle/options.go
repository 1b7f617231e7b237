package bundle

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// DeploymentOptions are the options of the BundleDeployments of a Bundle with spec s: how every
// targeted cluster's agent applies its content. `drover bundle diff` uses them to compare a
// proposed Bundle spec with what a cluster runs on equal terms.
func DeploymentOptions(s *fleetv1alpha1.BundleSpec) fleetv1alpha1.BundleDeploymentOptions {
	return fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: s.DefaultNamespace, ForceConflicts: s.ForceConflicts,
		CorrectDrift: s.CorrectDrift, KeepResources: s.KeepResources, Diff: s.Diff.DeepCopy(), ForceSyncGeneration: s.ForceSyncGeneration}
}

// Customization returns the first target customization of b that cluster c matches (Fleet's
// rule), or nil: c then gets the Bundle's own content and options.
func Customization(b *fleetv1alpha1.Bundle, c *fleetv1alpha1.Cluster) (*fleetv1alpha1.BundleTargetCustomization, error) {
	for i := range b.Spec.TargetCustomizations {
		tc := &b.Spec.TargetCustomizations[i]
		ok, err := matchAny([]fleetv1alpha1.BundleTarget{{ClusterName: tc.ClusterName, ClusterSelector: tc.ClusterSelector}}, c)
		if err != nil {
			return nil, err
		}
		if ok {
			return tc, nil
		}
	}
	return nil, nil
}

// Variant is the content (resources or Helm chart and values) and options the clusters of
// target customization tc of a Bundle with spec s get; with tc nil, the Bundle's own.
func Variant(s *fleetv1alpha1.BundleSpec, tc *fleetv1alpha1.BundleTargetCustomization) ([]runtime.RawExtension, *fleetv1alpha1.BundleHelm, fleetv1alpha1.BundleDeploymentOptions) {
	resources, helm, opts := s.Resources, s.Helm, DeploymentOptions(s)
	if tc == nil {
		return resources, helm, opts
	}
	if tc.DefaultNamespace != "" {
		opts.DefaultNamespace = tc.DefaultNamespace
	}
	if len(tc.Resources) > 0 {
		resources = tc.Resources
	}
	if helm != nil && tc.HelmValues != nil {
		h := *helm
		h.Values = tc.HelmValues
		helm = &h
	}
	if helm != nil && len(tc.HelmValuesFrom) > 0 {
		h := *helm
		h.ValuesFrom = slices.Clone(helm.ValuesFrom)
		for _, f := range tc.HelmValuesFrom {
			if !slices.ContainsFunc(h.ValuesFrom, func(g fleetv1alpha1.HelmValuesFrom) bool { return equality.Semantic.DeepEqual(f, g) }) {
				h.ValuesFrom = append(h.ValuesFrom, f)
			}
		}
		helm = &h
	}
	return resources, helm, opts
}

// ClusterVariant is Variant for cluster c, with templated Helm values
// (BundleHelm.TemplateValues) rendered for it: the rendered values are returned apart from the
// content (nil when the Bundle's values are not templated), which holds the template.
func ClusterVariant(s *fleetv1alpha1.BundleSpec, tc *fleetv1alpha1.BundleTargetCustomization, c *fleetv1alpha1.Cluster) ([]runtime.RawExtension, *fleetv1alpha1.BundleHelm, fleetv1alpha1.BundleDeploymentOptions, *runtime.RawExtension, error) {
	resources, helm, opts := Variant(s, tc)
	if helm == nil || !helm.TemplateValues {
		return resources, helm, opts, nil, nil
	}
	values, err := RenderValues(helm.Values, c)
	if err != nil {
		return resources, helm, opts, nil, err
	}
	if values == nil {
		values = &runtime.RawExtension{Raw: []byte("{}")}
	}
	return resources, helm, opts, values, nil
}
