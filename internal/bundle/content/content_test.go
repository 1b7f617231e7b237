package content

import (
	"slices"
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

// TestSlotBase: no two (Bundle, customization) pairs share slots, even where joining their
// names would; names stay valid and short for long Bundle names.
func TestSlotBase(t *testing.T) {
	pairs := [][2]string{{"a-b", ""}, {"a", "b"}, {"a", "-b"}, {"a-", "b"}, {"web", ""}, {"web", "prod"}, {strings.Repeat("x", 253), "prod"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		base := SlotBase(p[0], p[1])
		if prev, ok := seen[base]; ok {
			t.Errorf("%v and %v share slots %s", prev, p, base)
		}
		seen[base] = p
		if n := SlotName(base, MaxSlots-1); len(n) > 63 || strings.HasSuffix(base, ".") {
			t.Errorf("%v: slot name %q (%d characters)", p, n, len(n))
		}
	}
}

// TestGrants: a slot reference grants the first two slots (a commit moves to the other one) and
// its own; a content-addressed reference, or a name that is no slot, only itself.
func TestGrants(t *testing.T) {
	base := SlotBase("web", "")
	for _, tc := range []struct {
		name string
		ref  fleetv1alpha1.ContentReference
		want []string
	}{
		{"slot 0", fleetv1alpha1.ContentReference{Name: SlotName(base, 0), SHA256: "ab"}, []string{base + "-0", base + "-1"}},
		{"slot 1", fleetv1alpha1.ContentReference{Name: SlotName(base, 1), SHA256: "ab"}, []string{base + "-0", base + "-1"}},
		{"slot 3, a rollout held at older versions", fleetv1alpha1.ContentReference{Name: SlotName(base, 3), SHA256: "ab"},
			[]string{base + "-0", base + "-1", base + "-3"}},
		{"content-addressed", fleetv1alpha1.ContentReference{Name: "s-0123"}, []string{"s-0123"}},
		{"sha256 but no slot number", fleetv1alpha1.ContentReference{Name: "web-x", SHA256: "ab"}, []string{"web-x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Grants(tc.ref); !slices.Equal(got, tc.want) {
				t.Errorf("Grants(%+v) = %v, want %v", tc.ref, got, tc.want)
			}
		})
	}
}
