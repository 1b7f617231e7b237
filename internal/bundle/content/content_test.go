package content

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestName: a content's name is its address — the same resources (and chart) give the same
// name, any difference another; a Helm chart is part of it.
func TestName(t *testing.T) {
	cm := func(v string) []runtime.RawExtension {
		return []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"v":"` + v + `"}}`)}}
	}
	a, sum, err := Name(cm("1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, "s-") || len(sum) != 64 || a != "s-"+sum {
		t.Errorf("name %q sum %q: want s-<64 hex>", a, sum)
	}
	for _, tc := range []struct {
		name      string
		resources []runtime.RawExtension
		helm      *fleetv1alpha1.BundleHelm
		same      bool
	}{
		{"same resources", cm("1"), nil, true},
		{"other data", cm("2"), nil, false},
		{"with a chart", cm("1"), &fleetv1alpha1.BundleHelm{ReleaseName: "web"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _, err := Name(tc.resources, tc.helm)
			if err != nil {
				t.Fatal(err)
			}
			if (a == b) != tc.same {
				t.Errorf("%s vs %s: same %v, want %v", a, b, a == b, tc.same)
			}
		})
	}
}
