package server

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/config"
)

// fullBundleDeployment has every field a controller reads set, as an agent's report makes it.
func fullBundleDeployment(cluster string) *fleetv1alpha1.BundleDeployment {
	now := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	return &fleetv1alpha1.BundleDeployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "fleet.drover.io/v1alpha1", Kind: "BundleDeployment"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "cluster-" + cluster, Name: "app", UID: types.UID("uid-app-" + cluster), ResourceVersion: "42", Generation: 3,
			Labels: map[string]string{"fleet.drover.io/bundle-name": "app", "fleet.drover.io/bundle-namespace": "drover-default",
				"fleet.drover.io/cluster": cluster, "fleet.drover.io/managed": "true"},
			Annotations: map[string]string{"note": "kept", LastAppliedAnnotation: `{"big":"copy"}`},
			Finalizers:  []string{"fleet.drover.io/finalizer"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "fleet.drover.io/v1alpha1", Kind: "Bundle", Name: "app", UID: "b-uid",
				Controller: ptr.To(true)}},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "drover-bundle", Operation: metav1.ManagedFieldsOperationUpdate}},
			DeletionTimestamp: &now,
		},
		Spec: fleetv1alpha1.BundleDeploymentSpec{
			DeploymentID: "s-0123456789ab:cafe",
			Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: "default", ForceConflicts: true, CorrectDrift: true,
				ForceSyncGeneration: 2, Diff: &fleetv1alpha1.BundleDiff{}},
			Manifests: []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}},
			Content: &fleetv1alpha1.ContentReference{Namespace: "drover-default", Name: "app-0123456789-0",
				SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		},
		Status: fleetv1alpha1.BundleDeploymentStatus{
			AppliedDeploymentID: "s-0123456789ab:cafe", AppliedSyncGeneration: 2, Ready: true, NonModified: true,
			Resources: []fleetv1alpha1.ResourceState{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "x", State: "Modified", Message: "data.a"}},
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: now,
				Reason: "Ready", Message: "all ready"}},
			Display: &fleetv1alpha1.BundleDeploymentDisplay{DeploymentID: "s-0123456789ab:cafe", State: "Ready", Message: "m", DriftCorrected: "d"},
		},
	}
}

// decode is obj as the cache's informer gets it: decoded from JSON, every string its own.
func decode[T any](t *testing.T, obj any) *T {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func transform(t *testing.T, obj any) {
	t.Helper()
	out, err := TransformForCache(obj)
	if err != nil || out != obj {
		t.Fatalf("transform: %v, same object %v", err, out == obj)
	}
}

// The transform drops managedFields and the last-applied annotation and nothing else: every
// other field of a BundleDeployment (what the bundle and access controllers read, and send
// back whole in an Update) is as decoded.
func TestTransformForCacheKeepsEverythingElse(t *testing.T) {
	want := fullBundleDeployment("c1")
	got := decode[fleetv1alpha1.BundleDeployment](t, want)
	transform(t, got)
	want.ManagedFields = nil
	delete(want.Annotations, LastAppliedAnnotation)
	if !reflect.DeepEqual(got, decode[fleetv1alpha1.BundleDeployment](t, want)) {
		t.Errorf("transformed:\n%+v\nwant:\n%+v", got, want)
	}

	// The other kinds it interns, and metadata-only objects (the Secret, Role and
	// BundleContent watches: owner references and deletion time are read from them).
	for _, obj := range []client.Object{
		&fleetv1alpha1.Cluster{ObjectMeta: want.ObjectMeta, Spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc"},
			Status: fleetv1alpha1.ClusterStatus{Namespace: "cluster-c1"}},
		&fleetv1alpha1.Bundle{ObjectMeta: want.ObjectMeta, Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: "default", Resources: want.Spec.Manifests}},
		&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: want.ObjectMeta},
		&corev1.ConfigMap{ObjectMeta: want.ObjectMeta, Data: map[string]string{"apiServerURL": "https://x"}},
	} {
		in := obj.DeepCopyObject().(client.Object)
		in.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "m"}})
		a := in.GetAnnotations()
		a[LastAppliedAnnotation] = "{}"
		in.SetAnnotations(a)
		got := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
		raw, _ := json.Marshal(in)
		if err := json.Unmarshal(raw, got); err != nil {
			t.Fatal(err)
		}
		transform(t, got)
		wantObj := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
		raw, _ = json.Marshal(obj)
		_ = json.Unmarshal(raw, wantObj)
		if !reflect.DeepEqual(got, wantObj) {
			t.Errorf("%T transformed:\n%+v\nwant:\n%+v", obj, got, wantObj)
		}
	}

	// Only annotation: none left (nil, as decoded without it).
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LastAppliedAnnotation: "{}"}}}
	transform(t, m)
	if m.Annotations != nil {
		t.Errorf("annotations %v, want nil", m.Annotations)
	}
	// Not an object (a tombstone): passed through.
	if out, err := TransformForCache("x"); out != "x" || err != nil {
		t.Errorf("non-object: %v %v", out, err)
	}
}

// Two BundleDeployments decoded separately share the strings they repeat once cached.
func TestTransformForCacheSharesStrings(t *testing.T) {
	a := decode[fleetv1alpha1.BundleDeployment](t, fullBundleDeployment("c1"))
	b := decode[fleetv1alpha1.BundleDeployment](t, fullBundleDeployment("c2"))
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	if same(a.Spec.DeploymentID, b.Spec.DeploymentID) {
		t.Fatal("decoded strings already shared: the test shows nothing")
	}
	transform(t, a)
	transform(t, b)
	for name, pair := range map[string][2]string{
		"deploymentID":  {a.Spec.DeploymentID, b.Spec.DeploymentID},
		"content name":  {a.Spec.Content.Name, b.Spec.Content.Name},
		"content sha":   {a.Spec.Content.SHA256, b.Spec.Content.SHA256},
		"label value":   {a.Labels["fleet.drover.io/bundle-name"], b.Labels["fleet.drover.io/bundle-name"]},
		"resource kind": {a.Status.Resources[0].Kind, b.Status.Resources[0].Kind},
		"condition":     {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
		"owner UID":     {string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("%s not shared", name)
		}
	}
	for ka := range a.Labels {
		for kb := range b.Labels {
			if ka == kb && !same(ka, kb) {
				t.Errorf("label key %s not shared", ka)
			}
		}
	}
}

// The ConfigMap cache covers the registration settings the token and import controllers read
// through it (drover server never sets another config.Ref).
func TestCacheOptionsConfigMapsOfSystemNamespace(t *testing.T) {
	if config.DefaultNamespace != SystemNamespace {
		t.Fatalf("registration settings in %s, ConfigMaps cached in %s only", config.DefaultNamespace, SystemNamespace)
	}
	o := CacheOptions()
	for obj, by := range o.ByObject {
		if _, ok := obj.(*corev1.ConfigMap); !ok {
			t.Errorf("unexpected ByObject %T", obj)
			continue
		}
		if _, ok := by.Namespaces[config.DefaultNamespace]; !ok || len(by.Namespaces) != 1 {
			t.Errorf("ConfigMap namespaces %v", by.Namespaces)
		}
	}
	if o.DefaultTransform == nil {
		t.Error("no transform")
	}
}
