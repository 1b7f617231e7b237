package server

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// LastAppliedAnnotation is kubectl's copy of the whole object as last applied (kubectl apply
// client-side): as large as the object itself, and for a Secret its data, even in a
// metadata-only cache.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// CacheOptions is the controller manager's cache as drover server sets it up.
//
//   - Every cached object loses its managedFields and kubectl's last-applied-configuration
//     annotation (TransformForCache): no controller reads either from the cache. A Bundle or
//     GitRepo applied with kubectl would otherwise be held twice, and a Secret applied with
//     kubectl, watched as metadata only cluster-wide (the importer's, hosted sync's and
//     migration's Secret watches), would bring its data into the cache through the annotation.
//   - The strings that many cached objects repeat (namespaces, label and annotation keys and
//     values, owner references, finalizers; a BundleDeployment's deployment IDs, content
//     reference, options and resource states) are shared between them instead of held once
//     per object (intern). Nothing changes in any value: strings are immutable, so sharing is
//     invisible to readers. The 51,000 BundleDeployments of 1,000 clusters × 51 Bundles repeat
//     the same seven label keys, their Bundle's labels, deployment ID and content name.
//   - ConfigMaps are cached in SystemNamespace only. The one ConfigMap the controllers read
//     through the cache is registration's settings (config.DefaultRef, drover-system/
//     drover-registration; the token and import controllers watch it); without the
//     restriction every ConfigMap of the management cluster (kube-root-ca.crt in each of its
//     namespaces, one per fleet cluster, and whatever else it runs) is held in full.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: TransformForCache,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{SystemNamespace: {}}},
		},
	}
}

// TransformForCache strips an object's managedFields and its last-applied-configuration
// annotation before it enters the cache. Objects the controllers read from the cache and then
// send back whole (the bundle controller's Update of a BundleDeployment) lose that annotation
// on the server too: drover's own objects never carry it (the controllers create them), and
// managedFields sent empty are left as they are by the API server.
func TransformForCache(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil // not an object (a tombstone): as it is
	}
	// Nil-checked: setting nil managedFields on an object that has none can panic
	// (kubernetes/kubernetes#124337), as cache.TransformStripManagedFields notes.
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	if a := obj.GetAnnotations(); a != nil {
		if _, ok := a[LastAppliedAnnotation]; ok {
			delete(a, LastAppliedAnnotation)
			if len(a) == 0 {
				a = nil
			}
			obj.SetAnnotations(a)
		}
	}
	switch o := in.(type) {
	case *metav1.PartialObjectMetadata:
		internMeta(&o.ObjectMeta)
	case *fleetv1alpha1.BundleDeployment:
		internMeta(&o.ObjectMeta)
		internBundleDeployment(o)
	case *fleetv1alpha1.Bundle:
		internMeta(&o.ObjectMeta)
	case *fleetv1alpha1.Cluster:
		internMeta(&o.ObjectMeta)
	}
	return in, nil
}

// internMax is the longest string interned: longer ones (a Bundle's spec-hash annotation is
// short; a message or a certificate is not worth hashing) are kept as decoded.
const internMax = 256

// intern returns the canonical copy of s (unique.Make: held weakly, freed when no object uses
// it any more).
func intern(s string) string {
	if s == "" || len(s) > internMax {
		return s
	}
	return unique.Make(s).Value()
}

// internMap is m with its keys and values interned (a new map: an existing key cannot be
// replaced in place).
func internMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

// internMeta interns what objects of a kind share: not name, UID or resourceVersion.
func internMeta(m *metav1.ObjectMeta) {
	m.Namespace = intern(m.Namespace)
	m.GenerateName = intern(m.GenerateName)
	m.Labels, m.Annotations = internMap(m.Labels), internMap(m.Annotations)
	for i := range m.Finalizers {
		m.Finalizers[i] = intern(m.Finalizers[i])
	}
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name, r.UID = intern(r.APIVersion), intern(r.Kind), intern(r.Name), types.UID(intern(string(r.UID)))
	}
}

// internBundleDeployment interns what the BundleDeployments of one Bundle on every cluster
// share: its spec (deployment ID, content, options) and, as the agents report it, the state
// of the same resources.
func internBundleDeployment(bd *fleetv1alpha1.BundleDeployment) {
	s := &bd.Spec
	s.DeploymentID = intern(s.DeploymentID)
	s.Options.DefaultNamespace = intern(s.Options.DefaultNamespace)
	if s.Content != nil {
		s.Content.Namespace, s.Content.Name, s.Content.SHA256 = intern(s.Content.Namespace), intern(s.Content.Name), intern(s.Content.SHA256)
	}
	st := &bd.Status
	st.AppliedDeploymentID = intern(st.AppliedDeploymentID)
	for i := range st.Resources {
		r := &st.Resources[i]
		r.APIVersion, r.Kind, r.Namespace, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Namespace), intern(r.Name)
		r.State, r.Message = intern(r.State), intern(r.Message)
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
	}
	if d := st.Display; d != nil {
		d.DeploymentID, d.State, d.Message = intern(d.DeploymentID), intern(d.State), intern(d.Message)
	}
}
