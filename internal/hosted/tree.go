package hosted

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// ToTree converts a typed config to a JSON tree.
func ToTree(obj any) (map[string]any, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert config: %w", err)
	}
	return m, nil
}

// FromTree converts a JSON tree into a typed config.
func FromTree(m map[string]any, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, into); err != nil {
		return fmt.Errorf("convert config: %w", err)
	}
	return nil
}

func deepCopyTree(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return runtime.DeepCopyJSON(m)
}

// overlay is the effective desired state: upstream with every managed (non-nil) config field
// laid over it. Named lists in the config are the whole set.
func overlay(schema merge.Schema, upstream, config map[string]any) map[string]any {
	out := deepCopyTree(upstream)
	if out == nil {
		out = map[string]any{}
	}
	overlayInto(schema, nil, out, config)
	return out
}

func overlayInto(schema merge.Schema, path []string, dst, src map[string]any) {
	for k, v := range src {
		if v == nil {
			continue
		}
		p := append(slices.Clone(path), k)
		pat := join(p)
		if key, ok := schema.NamedLists[pat]; ok {
			dst[k] = overlayList(schema, append(p, "*"), key, dst[k], v)
			continue
		}
		sv, srcObj := v.(map[string]any)
		dv, dstObj := dst[k].(map[string]any)
		if srcObj && dstObj && !slices.Contains(schema.Maps, pat) {
			overlayInto(schema, p, dv, sv)
			continue
		}
		dst[k] = runtime.DeepCopyJSONValue(v)
	}
}

func overlayList(schema merge.Schema, path []string, key string, dst, src any) any {
	srcList, _ := src.([]any)
	dstList, _ := dst.([]any)
	byName := map[string]map[string]any{}
	for _, e := range dstList {
		if obj, ok := e.(map[string]any); ok {
			if n, ok := obj[key].(string); ok {
				byName[n] = obj
			}
		}
	}
	out := make([]any, 0, len(srcList))
	for _, e := range srcList {
		obj, ok := e.(map[string]any)
		if !ok {
			continue
		}
		n, _ := obj[key].(string)
		base := byName[n]
		if base == nil {
			base = map[string]any{}
		}
		overlayInto(schema, path, base, obj)
		out = append(out, base)
	}
	return out
}

func join(p []string) string {
	s := ""
	for i, x := range p {
		if i > 0 {
			s += "."
		}
		s += x
	}
	return s
}

func show(v any, has bool) string {
	if !has {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func equalStatus(a, b *v1.ClusterStatus) bool { return reflect.DeepEqual(a, b) }
