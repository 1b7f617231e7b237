package merge

import (
	"fmt"
	"slices"
	"sort"
)

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// toNamed indexes a list of objects by their key field.
func toNamed(v any, key string) map[string]any {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make(map[string]any, len(list))
	for _, e := range list {
		if obj, ok := e.(map[string]any); ok {
			if name, ok := obj[key].(string); ok {
				out[name] = obj
			}
		}
	}
	return out
}

func sortedStrings(v any) []string {
	list, ok := v.([]any)
	if !ok {
		if ss, ok := v.([]string); ok {
			out := slices.Clone(ss)
			sort.Strings(out)
			return out
		}
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		out = append(out, fmt.Sprint(e))
	}
	sort.Strings(out)
	return out
}

// Get returns the value at p in tree, and whether it is present.
func (s Schema) Get(tree map[string]any, p Path) (any, bool) {
	var cur any = tree
	for i, seg := range p {
		if seg.Field != "" {
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			v, ok := obj[seg.Field]
			if !ok || v == nil {
				return nil, false
			}
			cur = v
			continue
		}
		if key, named := s.NamedLists[p[:i].pattern()]; named {
			v, ok := toNamed(cur, key)[seg.Key]
			if !ok {
				return nil, false
			}
			cur = v
			continue
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := obj[seg.Key]
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// Set sets the value at p in tree (present) or removes it (!present), creating parents as
// needed. Removing a struct field sets it to nil (unmanaged).
func (s Schema) Set(tree map[string]any, p Path, v any, present bool) {
	if len(p) == 0 {
		return
	}
	parent := tree
	for i := 0; i < len(p)-1; i++ {
		seg := p[i]
		next := p[i+1]
		if seg.Field != "" {
			child, _ := parent[seg.Field].(map[string]any)
			if key, named := s.NamedLists[p[:i+1].pattern()]; named {
				// The next segment picks an element of the list stored at this field.
				list, _ := parent[seg.Field].([]any)
				idx := indexOf(list, key, next.Key)
				if i+1 == len(p)-1 {
					parent[seg.Field] = setElement(list, idx, v, present)
					return
				}
				if idx < 0 {
					list = append(list, map[string]any{key: next.Key})
					idx = len(list) - 1
					parent[seg.Field] = list
				}
				parent = list[idx].(map[string]any)
				i++ // consumed the element segment
				continue
			}
			if child == nil {
				child = map[string]any{}
				parent[seg.Field] = child
			}
			parent = child
			continue
		}
		child, _ := parent[seg.Key].(map[string]any)
		if child == nil {
			child = map[string]any{}
			parent[seg.Key] = child
		}
		parent = child
	}
	last := p[len(p)-1]
	name := last.Field
	if name == "" {
		name = last.Key
	}
	switch {
	case present:
		parent[name] = v
	case last.Field != "":
		parent[name] = nil
	default:
		delete(parent, name)
	}
}

func indexOf(list []any, key, name string) int {
	for i, e := range list {
		if obj, ok := e.(map[string]any); ok && obj[key] == name {
			return i
		}
	}
	return -1
}

func setElement(list []any, idx int, v any, present bool) []any {
	switch {
	case !present && idx >= 0:
		return append(list[:idx:idx], list[idx+1:]...)
	case !present:
		return list
	case idx >= 0:
		list[idx] = v
		return list
	default:
		if list == nil {
			list = []any{}
		}
		return append(list, v)
	}
}
