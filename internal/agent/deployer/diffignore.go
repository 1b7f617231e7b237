package deployer

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// Ignored fields (spec.diff.ignore of the Bundle, in the BundleDeployment's options) belong to
// someone else downstream: an HPA owns a Deployment's /spec/replicas, a mutating webhook an
// annotation. The agent treats them so:
//
//   - drift detection leaves them out: a change at or below an ignored pointer is not
//     Modified, and so never triggers correctDrift;
//   - when the agent creates an object, the manifest's value is applied (the initial replicas);
//   - every later apply of an existing object (a new deployment ID, a drift correction of
//     another field, forced or not) carries the live value of each ignored field instead of the
//     manifest's, and leaves out an ignored field that is absent downstream. Applying the value
//     a field already has never conflicts and changes nothing, so the other manager's value
//     stays and keeps its ownership: the agent never fights it, even with correctDrift. A change
//     of an ignored field in the manifest therefore only reaches objects created afterwards.
//
// A pointer into a list (/spec/template/spec/containers/0/image) is followed by index; an
// ignored list element absent downstream is left as the manifest has it.

// diffIgnore returns the reference tokens of the JSON pointers bd's options ignore for u
// (resolved: its namespace set). Pointers that do not parse (the CRD schema refuses them) are
// skipped.
func diffIgnore(bd *fleetv1alpha1.BundleDeployment, u *unstructured.Unstructured) [][]string {
	d := bd.Spec.Options.Diff
	if d == nil {
		return nil
	}
	var out [][]string
	for _, ig := range d.Ignore {
		if !ig.Matches(u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()) {
			continue
		}
		for _, p := range ig.JSONPointers {
			if tokens, err := fleetv1alpha1.ParseJSONPointer(p); err == nil {
				out = append(out, tokens)
			}
		}
	}
	return out
}

// keepIgnored makes obj, about to be applied, carry live's value at each ignored path, or not
// set the path when live does not have it (see above).
func (r *Reconciler) keepIgnored(ctx context.Context, bd *fleetv1alpha1.BundleDeployment, obj, live *unstructured.Unstructured) error {
	skip := diffIgnore(bd, obj)
	if len(skip) == 0 {
		return nil
	}
	if live == nil {
		live = &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		if err := r.Downstream.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			if apierrors.IsNotFound(err) {
				return nil // created now: the manifest's values apply
			}
			return fmt.Errorf("read %s to keep its ignored fields: %w", describe(obj), err)
		}
	}
	for _, tokens := range skip {
		if v, ok := pointerGet(live.Object, tokens); ok {
			pointerSet(obj.Object, tokens, runtime.DeepCopyJSONValue(v))
		} else {
			pointerRemove(obj.Object, tokens)
		}
	}
	return nil
}

// pointerGet returns the value at tokens.
func pointerGet(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[t]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// pointerSet sets the value at tokens, creating missing objects on the way; a list index out
// of range (or a scalar on the way) leaves root unchanged.
func pointerSet(root map[string]any, tokens []string, value any) {
	if len(tokens) == 0 {
		return
	}
	var cur any = root
	for i, t := range tokens {
		last := i == len(tokens)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[t] = value
				return
			}
			next, ok := c[t]
			if !ok || next == nil {
				next = map[string]any{}
				c[t] = next
			}
			cur = next
		case []any:
			idx, err := strconv.Atoi(t)
			if err != nil || idx < 0 || idx >= len(c) {
				return
			}
			if last {
				c[idx] = value
				return
			}
			cur = c[idx]
		default:
			return
		}
	}
}

// pointerRemove deletes the map key at tokens (list elements are left alone: removing one
// would shift the others).
func pointerRemove(root map[string]any, tokens []string) {
	if len(tokens) == 0 {
		return
	}
	parent, ok := pointerGet(root, tokens[:len(tokens)-1])
	if m, isMap := parent.(map[string]any); ok && isMap {
		delete(m, tokens[len(tokens)-1])
	}
}
