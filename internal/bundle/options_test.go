package bundle

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestVariantValuesFrom: a customization's helmValuesFrom come after the Bundle's, an entry the
// Bundle has already is not repeated (Fleet's merge), and the Bundle's own list is not changed.
func TestVariantValuesFrom(t *testing.T) {
	t.Parallel()
	cm := fleetv1alpha1.HelmValuesFrom{ConfigMapKeyRef: &fleetv1alpha1.ValuesKeyRef{Name: "site"}}
	sec := fleetv1alpha1.HelmValuesFrom{SecretKeyRef: &fleetv1alpha1.ValuesKeyRef{Name: "db", Key: "edge.yaml"}}
	s := &fleetv1alpha1.BundleSpec{Helm: &fleetv1alpha1.BundleHelm{ReleaseName: "web", ValuesFrom: []fleetv1alpha1.HelmValuesFrom{cm}}}
	_, h, _ := Variant(s, &fleetv1alpha1.BundleTargetCustomization{Name: "edge", HelmValuesFrom: []fleetv1alpha1.HelmValuesFrom{*cm.DeepCopy(), sec}})
	if want := []fleetv1alpha1.HelmValuesFrom{cm, sec}; !equality.Semantic.DeepEqual(h.ValuesFrom, want) {
		t.Errorf("customization's valuesFrom %+v, want %+v", h.ValuesFrom, want)
	}
	if len(s.Helm.ValuesFrom) != 1 {
		t.Errorf("the Bundle's own valuesFrom changed: %+v", s.Helm.ValuesFrom)
	}
	if _, h, _ := Variant(s, &fleetv1alpha1.BundleTargetCustomization{Name: "other"}); !equality.Semantic.DeepEqual(h.ValuesFrom, s.Helm.ValuesFrom) {
		t.Errorf("a customization without valuesFrom gets %+v", h.ValuesFrom)
	}
}
