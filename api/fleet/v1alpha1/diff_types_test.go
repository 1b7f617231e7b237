package v1alpha1

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseJSONPointer(t *testing.T) {
	for _, tc := range []struct {
		pointer string
		want    []string
		err     string
	}{
		{"/spec/replicas", []string{"spec", "replicas"}, ""},
		{"/metadata/annotations/example.com~1owner", []string{"metadata", "annotations", "example.com/owner"}, ""},
		{"/a~0b/~01", []string{"a~b", "~1"}, ""},
		{"/spec/template/spec/containers/0/image", []string{"spec", "template", "spec", "containers", "0", "image"}, ""},
		{"/", []string{""}, ""},
		{"", nil, "must start with"},
		{"spec/replicas", nil, "must start with"},
		{"/a~2", nil, "must be escaped"},
		{"/a~", nil, "must be escaped"},
	} {
		t.Run(tc.pointer, func(t *testing.T) {
			got, err := ParseJSONPointer(tc.pointer)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseJSONPointer(%q) = %q, %v; want error %q", tc.pointer, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseJSONPointer(%q) = %q, %v; want %q", tc.pointer, got, err, tc.want)
			}
		})
	}
}

func TestBundleDiffValidate(t *testing.T) {
	ok := BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}
	for _, tc := range []struct {
		name string
		diff *BundleDiff
		err  string
	}{
		{"nil", nil, ""},
		{"valid", &BundleDiff{Ignore: []BundleDiffIgnore{ok}}, ""},
		{"no kind", &BundleDiff{Ignore: []BundleDiffIgnore{ok, {APIVersion: "v1", JSONPointers: []string{"/data"}}}}, "ignore[1]: apiVersion and kind are required"},
		{"no pointers", &BundleDiff{Ignore: []BundleDiffIgnore{{APIVersion: "v1", Kind: "ConfigMap"}}}, "ignore[0]: jsonPointers is empty"},
		{"bad pointer", &BundleDiff{Ignore: []BundleDiffIgnore{{APIVersion: "v1", Kind: "ConfigMap", JSONPointers: []string{"/data", "data"}}}}, `ignore[0].jsonPointers[1]: JSON pointer "data"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.diff.Validate()
			if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Validate() = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestBundleDiffIgnoreMatches(t *testing.T) {
	rule := BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	for _, tc := range []struct {
		name                          string
		rule                          BundleDiffIgnore
		apiVersion, kind, ns, objName string
		want                          bool
	}{
		{"same", rule, "apps/v1", "Deployment", "a", "web", true},
		{"other name", rule, "apps/v1", "Deployment", "a", "api", false},
		{"other kind", rule, "apps/v1", "StatefulSet", "a", "web", false},
		{"other version", rule, "apps/v1beta1", "Deployment", "a", "web", false},
		{"any name", BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment"}, "apps/v1", "Deployment", "a", "api", true},
		{"namespace given", BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "b"}, "apps/v1", "Deployment", "a", "web", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rule.Matches(tc.apiVersion, tc.kind, tc.ns, tc.objName); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}
