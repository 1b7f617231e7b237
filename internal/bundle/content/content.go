// Package content stores a Bundle's content in BundleContents of the Bundle's namespace and
// deletes those no Bundle lists any more. Each cluster's right to read exactly the
// BundleContents its BundleDeployments reference is registration's
// (internal/registration/access), which owns every Role of a cluster's identities.
//
// A version's content goes in one of its Bundle's content slots (per target customization),
// names that later versions reuse once nothing references them, so that a commit changes a
// cluster's BundleDeployment and not its access Role: the Role names slots 0 and 1, between
// which commits alternate (Grants). BundleDeployments name the sha256 the slot must hold.
// Agents that do not check it (fleetv1alpha1.AgentFeatureContentSlots) get immutable
// content-addressed BundleContents instead (Store).
package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

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

const (
	// BundleLabel on a content slot names its Bundle (the label BundleDeployments carry too).
	BundleLabel = fleetv1alpha1.LabelPrefix + "bundle-name"
	// SHA256Annotation on a content slot is the sha256 of the version it holds, so that the
	// slot holding a version is found in the metadata cache.
	SHA256Annotation = fleetv1alpha1.LabelPrefix + "sha256"
	// MaxSlots is how many versions of one Bundle's customization may be referenced at once
	// (the current one and those a halted or paused rollout still runs).
	MaxSlots = 16
	// granted is how many slots every access Role names per referenced slot set: a commit
	// moves the clusters from one to the other.
	granted = 2
)

// SlotBase is the name prefix of the content slots of Bundle bundle's customization variant
// ("": the Bundle's own version): a readable prefix of the Bundle's name and a hash of both, so
// that no two (Bundle, customization) pairs share slots.
func SlotBase(bundle, variant string) string {
	h := sha256.Sum256([]byte(strconv.Itoa(len(bundle)) + ":" + bundle + "/" + variant))
	p := bundle
	if len(p) > 40 {
		p = strings.TrimRight(p[:40], "-.")
	}
	return p + "-" + hex.EncodeToString(h[:5])
}

// SlotName is the name of slot i of base.
func SlotName(base string, i int) string { return base + "-" + strconv.Itoa(i) }

// Grants are the BundleContent names a cluster's access Role lists for a content reference: a
// slot reference's first two slots (whichever a commit moves it to) and its own; a
// content-addressed one's own name.
func Grants(ref fleetv1alpha1.ContentReference) []string {
	i := strings.LastIndexByte(ref.Name, '-')
	if ref.SHA256 == "" || i < 0 {
		return []string{ref.Name}
	}
	if _, err := strconv.Atoi(ref.Name[i+1:]); err != nil {
		return []string{ref.Name}
	}
	out := make([]string, 0, granted+1)
	for n := range granted {
		out = append(out, SlotName(ref.Name[:i], n))
	}
	if !slices.Contains(out, ref.Name) {
		out = append(out, ref.Name)
	}
	return out
}

// StoreSlot stores resources (and helm) in a content slot of Bundle b's customization variant
// and returns the slot's name and the content's sha256: the slot that holds them already, else
// the first slot that inUse does not name (it is created, or overwritten). inUse names the slots
// BundleDeployments may still reference; those are never overwritten.
func StoreSlot(ctx context.Context, c client.Client, b *fleetv1alpha1.Bundle, variant string, resources []runtime.RawExtension,
	helm *fleetv1alpha1.BundleHelm, inUse func(name string) bool) (name, sum string, err error) {
	_, sum, err = Name(resources, helm)
	if err != nil {
		return "", "", reconcile.TerminalError(err)
	}
	base := SlotBase(b.Name, variant)
	var free *metav1.PartialObjectMetadata // the slot to write
	for i := range MaxSlots {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("BundleContent"))
		n := SlotName(base, i)
		err := c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: n}, m)
		if err != nil && !apierrors.IsNotFound(err) {
			return "", "", fmt.Errorf("read content slot %s: %w", n, err)
		}
		exists := err == nil
		if exists && m.Annotations[SHA256Annotation] == sum {
			return n, sum, nil
		}
		if free == nil && !inUse(n) {
			if !exists {
				m.Name, m.Namespace = n, b.Namespace
			}
			free = m
		}
		// Slots are used from the first: past the granted ones, the first missing slot ends
		// them (a version in a later one is stored again, not lost).
		if !exists && i >= granted-1 && free != nil {
			break
		}
	}
	if free == nil {
		return "", "", fmt.Errorf("content of Bundle %s: all %d content slots hold versions its BundleDeployments still reference "+
			"(a rollout held at many versions); resume or finish the rollout", b.Name, MaxSlots)
	}
	bc := &fleetv1alpha1.BundleContent{
		ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: free.Name, ResourceVersion: free.ResourceVersion,
			Labels:      map[string]string{fleetv1alpha1.ManagedLabel: "true", BundleLabel: b.Name},
			Annotations: map[string]string{SHA256Annotation: sum}},
		SHA256: sum, Manifests: resources, Helm: helm,
	}
	if free.ResourceVersion != "" {
		// Unreferenced since: a later version reuses it (agents check the sha256).
		if err := c.Update(ctx, bc, client.FieldOwner(FieldOwner)); err != nil {
			return "", "", fmt.Errorf("write content slot %s: %w", bc.Name, err)
		}
	} else if err := c.Create(ctx, bc, client.FieldOwner(FieldOwner)); err != nil {
		return "", "", fmt.Errorf("create content slot %s: %w", bc.Name, err)
	}
	return bc.Name, sum, nil
}

// DeleteSlots deletes every content slot of Bundle bundle in ns (the Bundle is gone).
func DeleteSlots(ctx context.Context, c client.Client, ns, bundle string) error {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("BundleContentList"))
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{BundleLabel: bundle}); err != nil {
		return fmt.Errorf("list content slots: %w", err)
	}
	for i := range list.Items {
		m := &list.Items[i]
		m.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("BundleContent"))
		if err := c.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete content slot %s: %w", m.Name, err)
		}
	}
	return nil
}
