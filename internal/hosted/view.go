package hosted

import (
	"reflect"
	"sort"
	"strings"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// FieldView is one field of a cluster's effective desired state, as the CLI shows it.
type FieldView struct {
	Path     string
	Value    string // effective: the managed config value, else upstream
	Managed  bool
	Upstream string // the provider's value
	Drift    bool   // managed and different from upstream (being pushed, or to be adopted)
}

// View flattens a cluster into its effective desired state: upstreamSpec overlaid with every
// managed config field, one row per leaf field, sorted by path.
func View(p Provider, c *v1.Cluster, upstream map[string]any) ([]FieldView, error) {
	config, err := p.Config(c)
	if err != nil {
		return nil, err
	}
	schema := p.Schema()
	eff := overlay(schema, upstream, config)
	var rows []FieldView
	var walk func(path merge.Path, v any)
	walk = func(path merge.Path, v any) {
		pat := patternOf(path)
		if key, ok := schema.NamedLists[pat]; ok {
			for name, e := range namedIndex(v, key) {
				walk(append(clonePath(path), merge.Segment{Key: name}), e)
			}
			return
		}
		if m, ok := v.(map[string]any); ok {
			isMap := containsStr(schema.Maps, pat)
			for k, e := range m {
				seg := merge.Segment{Field: k}
				if isMap {
					seg = merge.Segment{Key: k}
				}
				if !isMap && len(path) > 0 && path[len(path)-1].Key != "" && k == "name" {
					continue // the element's key is in its path
				}
				walk(append(clonePath(path), seg), e)
			}
			return
		}
		cv, managed := schema.Get(config, path)
		uv, _ := schema.Get(upstream, path)
		if !managed {
			// A managed collection manages its elements, present or not.
			for i := len(path) - 1; i > 0 && !managed; i-- {
				if _, ok := schema.Get(config, path[:i]); ok && (containsStr(schema.Maps, patternOf(path[:i])) || schema.NamedLists[patternOf(path[:i])] != "") {
					managed = true
				}
			}
		}
		rows = append(rows, FieldView{
			Path: path.String(), Value: show(v, true), Managed: managed, Upstream: show(uv, uv != nil),
			// Never read from the provider (upstream nil): its values are unknown, not different.
			Drift: managed && cv != nil && upstream != nil && !reflect.DeepEqual(cv, uv),
		})
	}
	walk(nil, eff)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Path < rows[j].Path })
	return rows, nil
}

func patternOf(p merge.Path) string {
	parts := make([]string, 0, len(p))
	for _, s := range p {
		if s.Field != "" {
			parts = append(parts, s.Field)
		} else {
			parts = append(parts, "*")
		}
	}
	return strings.Join(parts, ".")
}

func clonePath(p merge.Path) merge.Path { return append(merge.Path{}, p...) }

func namedIndex(v any, key string) map[string]any {
	out := map[string]any{}
	list, _ := v.([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			if n, ok := m[key].(string); ok {
				out[n] = m
			}
		}
	}
	return out
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
