// Package content stores a Bundle's content once per distinct content, in content-addressed
// BundleContents of the Bundle's namespace, and deletes those no Bundle lists any more. Each
// cluster's right to read exactly the BundleContents its BundleDeployments reference is
// registration's (internal/registration/access), which owns every Role of a cluster's identities.
package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// FieldOwner is the field manager of the bundle controllers, which write BundleContents and
// the access Roles' rules.
const FieldOwner = "drover-bundle"

// Name is the name of the BundleContent of resources: "s-" + hex sha256 of their JSON; with a
// Helm chart, of the JSON of resources and helm. sum is the hex sha256.
func Name(resources []runtime.RawExtension, helm *fleetv1alpha1.BundleHelm) (name, sum string, err error) {
	var v any = resources
	if helm != nil {
		v = struct {
			Resources []runtime.RawExtension    `json:"resources"`
			Helm      *fleetv1alpha1.BundleHelm `json:"helm"`
		}{resources, helm}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", "", fmt.Errorf("encode resources: %w", err)
	}
	h := sha256.Sum256(b)
	sum = hex.EncodeToString(h[:])
	return "s-" + sum, sum, nil
}

// Store makes sure the BundleContent of resources (and helm) exists in namespace ns and returns
// its name. Content is immutable: an existing one is not written again.
func Store(ctx context.Context, c client.Client, ns string, resources []runtime.RawExtension, helm *fleetv1alpha1.BundleHelm) (string, error) {
	name, sum, err := Name(resources, helm)
	if err != nil {
		return "", reconcile.TerminalError(err)
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("BundleContent"))
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m)
	if err == nil || !apierrors.IsNotFound(err) {
		return name, err
	}
	bc := &fleetv1alpha1.BundleContent{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{fleetv1alpha1.ManagedLabel: "true"}},
		SHA256:     sum, Manifests: resources, Helm: helm,
	}
	if err := c.Create(ctx, bc, client.FieldOwner(FieldOwner)); client.IgnoreAlreadyExists(err) != nil {
		return "", fmt.Errorf("create content %s: %w", name, err)
	}
	return name, nil
}

// DeleteUnused deletes the BundleContents of ns among names that no Bundle but self lists.
// A Bundle that starts using one concurrently recreates it on its next pass.
func DeleteUnused(ctx context.Context, c client.Client, ns, self string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	var list fleetv1alpha1.BundleList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, n := range names {
		used := false
		for _, o := range list.Items {
			if o.Name != self && (o.Status.Content == n || slices.Contains(o.Status.Contents, n)) {
				used = true
				break
			}
		}
		if used {
			continue
		}
		// A pass that started from a Bundle status older than the previous pass's write names
		// contents that pass deleted already: the cache knows (a DELETE would be refused 404).
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("BundleContent"))
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, m); apierrors.IsNotFound(err) {
			continue
		}
		bc := &fleetv1alpha1.BundleContent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}
		if err := c.Delete(ctx, bc); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete unused content %s: %w", n, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Deleted unused content", "content", n)
	}
	return nil
}
