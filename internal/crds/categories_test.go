package crds

import (
	"slices"
	"testing"
)

// TestCategories: `kubectl get drover -A` lists every kind a user works with, and `kubectl get
// fleet -A` (what Fleet users type) the fleet side; neither lists BundleContents, which are
// storage and large.
func TestCategories(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no CRDs loaded")
	}
	for _, crd := range all {
		t.Run(crd.Name, func(t *testing.T) {
			cats := crd.Spec.Names.Categories
			var want []string
			switch {
			case crd.Spec.Names.Kind == "BundleContent":
			case crd.Spec.Group == "fleet.drover.io":
				want = []string{"drover", "fleet"}
			default:
				want = []string{"drover"}
			}
			if !slices.Equal(cats, want) {
				t.Errorf("categories %v, want %v", cats, want)
			}
		})
	}
}
