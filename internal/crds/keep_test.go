package crds

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/droverhq/drover/internal/version"
)

func TestParseRelease(t *testing.T) {
	for v, want := range map[string]any{
		"v1.2.3":                            [3]int{1, 2, 3},
		"v0.4.0":                            [3]int{0, 4, 0},
		"v1.2.3-4-gabcdef0":                 [3]int{1, 2, 3},
		"v1.2.3-4-gabcdef0-dirty":           [3]int{1, 2, 3},
		"v1.3.0-rc.1":                       [3]int{1, 3, 0},
		"v1.2.4-0.20261203120000-abcdef012": [3]int{1, 2, 4},
		"v10.20.30+meta":                    [3]int{10, 20, 30},
		version.Dev:                         nil,
		"v0.0.0-dev-abc1234-dirty":          nil,
		"v0.0.0":                            nil,
		version.Unknown:                     nil,
		"":                                  nil,
		"1.2.3":                             nil,
		"v1.2":                              nil,
		"v1.2.x":                            nil,
		"v1.+2.3":                           nil,
		"v01.2.3":                           nil,
	} {
		got, ok := parseRelease(v)
		if w, isRel := want.([3]int); isRel != ok || (ok && got != w) {
			t.Errorf("parseRelease(%q) = %v, %v; want %v", v, got, ok, want)
		}
	}
}

// TestKeepVersions: the schema guard sees versions, served or stored, that the binary lacks.
func TestKeepVersions(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var embedded *apiextensionsv1.CustomResourceDefinition
	for _, crd := range all {
		if crd.Name == "gitrepos.fleet.drover.io" {
			embedded = crd
		}
	}
	if embedded == nil {
		t.Fatal("no embedded GitRepo CRD")
	}
	if keep, why := Keep(embedded.DeepCopy(), embedded, "v1.0.0"); keep {
		t.Errorf("the embedded CRD itself is kept: %s", why)
	}

	stored := embedded.DeepCopy()
	stored.Status.StoredVersions = []string{"v1alpha1", "v1beta1"}
	if keep, why := Keep(stored, embedded, "v1.0.0"); !keep || !strings.Contains(why, "stored version v1beta1") {
		t.Errorf("a CRD with objects stored as v1beta1: keep %v (%s), want kept", keep, why)
	}

	served := embedded.DeepCopy()
	v := served.Spec.Versions[0].DeepCopy()
	v.Name, v.Storage = "v1beta1", false
	served.Spec.Versions = append(served.Spec.Versions, *v)
	if keep, why := Keep(served, embedded, version.Dev); !keep || !strings.Contains(why, "version v1beta1") {
		t.Errorf("a CRD serving v1beta1: keep %v (%s), want kept", keep, why)
	}
	// An older release's stamp: its upgrade is authoritative.
	served.Annotations = map[string]string{VersionAnnotation: "v0.9.0"}
	if keep, why := Keep(served, embedded, "v1.0.0"); keep {
		t.Errorf("a CRD applied by an older release is kept: %s", why)
	}

	nested := embedded.DeepCopy()
	nested.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["x"] = apiextensionsv1.JSONSchemaProps{
		Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"y": {Type: "string"}},
		}},
	}
	keep, why := Keep(nested, embedded, "v1.0.0")
	if !keep || !strings.Contains(why, "field v1alpha1.status.x, field v1alpha1.status.x[].y") {
		t.Errorf("a CRD with status.x[].y: keep %v (%s), want kept, naming both", keep, why)
	}
}
