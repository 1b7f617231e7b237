package deployer

import (
	"fmt"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

func deploymentObj(ns, name string, replicas int64, image string, annotations map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name, "namespace": ns}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": image}}}}}}}
}

func bdIgnoring(rules ...fleetv1alpha1.BundleDiffIgnore) *fleetv1alpha1.BundleDeployment {
	return &fleetv1alpha1.BundleDeployment{Spec: fleetv1alpha1.BundleDeploymentSpec{
		Options: fleetv1alpha1.BundleDeploymentOptions{Diff: &fleetv1alpha1.BundleDiff{Ignore: rules}}}}
}

// TestDiffIgnore: the fields diff.ignore names, and everything below them, are not drift;
// other fields of the same object, and the same field of objects the rule does not match, are.
func TestDiffIgnore(t *testing.T) {
	replicas := fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", JSONPointers: []string{"/spec/replicas"}}
	for _, tc := range []struct {
		name          string
		bd            *fleetv1alpha1.BundleDeployment
		desired, live *unstructured.Unstructured
		want          []string
	}{
		{"no rules", &fleetv1alpha1.BundleDeployment{}, deploymentObj("a", "web", 1, "web:1", nil), deploymentObj("a", "web", 5, "web:1", nil),
			[]string{"spec.replicas: want 1, have 5"}},
		{"replicas ignored", bdIgnoring(replicas), deploymentObj("a", "web", 1, "web:1", nil), deploymentObj("a", "web", 5, "web:1", nil), nil},
		{"another field still drift", bdIgnoring(replicas), deploymentObj("a", "web", 1, "web:1", nil), deploymentObj("a", "web", 5, "web:2", nil),
			[]string{`spec.template.spec.containers[0].image: want "web:1", have "web:2"`}},
		{"other name not ignored", bdIgnoring(replicas), deploymentObj("a", "api", 1, "web:1", nil), deploymentObj("a", "api", 5, "web:1", nil),
			[]string{"spec.replicas: want 1, have 5"}},
		{"namespace must match when given", bdIgnoring(fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "b", JSONPointers: []string{"/spec/replicas"}}),
			deploymentObj("a", "web", 1, "web:1", nil), deploymentObj("a", "web", 5, "web:1", nil), []string{"spec.replicas: want 1, have 5"}},
		{"everything below a pointer", bdIgnoring(fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", JSONPointers: []string{"/spec/template"}}),
			deploymentObj("a", "web", 1, "web:1", nil), deploymentObj("a", "web", 1, "web:2", nil), nil},
		{"list element by index", bdIgnoring(fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", JSONPointers: []string{"/spec/template/spec/containers/0/image"}}),
			deploymentObj("a", "web", 1, "web:1", nil), deploymentObj("a", "web", 1, "web:2", nil), nil},
		{"escaped annotation key", bdIgnoring(fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", JSONPointers: []string{"/metadata/annotations/example.com~1owner"}}),
			deploymentObj("a", "web", 1, "web:1", map[string]any{"example.com/owner": "a", "keep": "x"}),
			deploymentObj("a", "web", 1, "web:1", map[string]any{"example.com/owner": "b", "keep": "y"}),
			[]string{`metadata.annotations.keep: want "x", have "y"`}},
		{"a prefix of the pointer is not ignored", bdIgnoring(replicas), deploymentObj("a", "web", 1, "web:1", nil),
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "a"}}},
			[]string{`spec: want {"replicas":1,"template":{"spec":{"containers":[{"image":"web:1","name":"web"..., have <none>`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reports(diffObjects(tc.desired.Object, tc.live.Object, diffIgnore(tc.bd, tc.desired)...))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("diff = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestKeepIgnored: an apply of an existing object carries the live values of its ignored
// fields (so it neither conflicts with nor reverts their owner), and leaves out an ignored
// field absent downstream.
func TestKeepIgnored(t *testing.T) {
	rule := func(ptrs ...string) *fleetv1alpha1.BundleDeployment {
		return bdIgnoring(fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", JSONPointers: ptrs})
	}
	for _, tc := range []struct {
		name      string
		bd        *fleetv1alpha1.BundleDeployment
		obj, live *unstructured.Unstructured
		want      *unstructured.Unstructured
	}{
		{"replicas from live", rule("/spec/replicas"), deploymentObj("a", "web", 1, "web:2", nil), deploymentObj("a", "web", 7, "web:1", nil),
			deploymentObj("a", "web", 7, "web:2", nil)},
		{"no rule: manifest wins", &fleetv1alpha1.BundleDeployment{}, deploymentObj("a", "web", 1, "web:2", nil), deploymentObj("a", "web", 7, "web:1", nil),
			deploymentObj("a", "web", 1, "web:2", nil)},
		{"annotation created from live", rule("/metadata/annotations/owner"), deploymentObj("a", "web", 1, "web:1", nil),
			deploymentObj("a", "web", 1, "web:1", map[string]any{"owner": "hpa"}), deploymentObj("a", "web", 1, "web:1", map[string]any{"owner": "hpa"})},
		{"absent downstream: left out", rule("/metadata/annotations/owner"), deploymentObj("a", "web", 1, "web:1", map[string]any{"owner": "me", "x": "y"}),
			deploymentObj("a", "web", 1, "web:1", nil), deploymentObj("a", "web", 1, "web:1", map[string]any{"x": "y"})},
		{"list element from live", rule("/spec/template/spec/containers/0/image"), deploymentObj("a", "web", 1, "web:2", nil),
			deploymentObj("a", "web", 1, "web:1", nil), deploymentObj("a", "web", 1, "web:1", nil)},
		{"list index out of range: unchanged", rule("/spec/template/spec/containers/3/image"), deploymentObj("a", "web", 1, "web:2", nil),
			deploymentObj("a", "web", 1, "web:1", nil), deploymentObj("a", "web", 1, "web:2", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{}
			if err := r.keepIgnored(t.Context(), tc.bd, tc.obj, tc.live); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tc.obj.Object, tc.want.Object) {
				t.Errorf("applied\n%v\nwant\n%v", tc.obj.Object, tc.want.Object)
			}
		})
	}
}

// TestDiffIgnoreSchema: the API server refuses a Bundle whose diff.ignore holds a malformed JSON
// pointer or lacks the kind, and accepts a valid one.
func TestDiffIgnoreSchema(t *testing.T) {
	ns := env.Namespace(t)
	for i, tc := range []struct {
		name  string
		rule  fleetv1alpha1.BundleDiffIgnore
		valid bool
	}{
		{"valid", fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", JSONPointers: []string{"/spec/replicas", "/metadata/annotations/a~1b"}}, true},
		{"no leading slash", fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", JSONPointers: []string{"spec/replicas"}}, false},
		{"bad escape", fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", JSONPointers: []string{"/metadata/annotations/a~2b"}}, false},
		{"whole document", fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment", JSONPointers: []string{""}}, false},
		{"no pointers", fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", Kind: "Deployment"}, false},
		{"no kind", fleetv1alpha1.BundleDiffIgnore{APIVersion: "apps/v1", JSONPointers: []string{"/spec/replicas"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("b%d", i)},
				Spec: fleetv1alpha1.BundleSpec{Diff: &fleetv1alpha1.BundleDiff{Ignore: []fleetv1alpha1.BundleDiffIgnore{tc.rule}}}}
			err := env.Client.Create(t.Context(), b)
			if tc.valid != (err == nil) || err != nil && !apierrors.IsInvalid(err) {
				t.Errorf("create: %v, want valid=%v", err, tc.valid)
			}
			if verr := b.Spec.Diff.Validate(); tc.valid != (verr == nil) {
				t.Errorf("BundleDiff.Validate = %v, disagrees with the API server (valid=%v)", verr, tc.valid)
			}
		})
	}
}
