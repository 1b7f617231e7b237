// Package merge is the provider-neutral three-way merge at the heart of hosted-cluster sync.
//
// It compares, field by field, the last config that was applied (base), the current config
// (desired; nil = unmanaged) and the provider's real state (upstream), and says which fields to
// push, which to adopt and which conflict. Pushing only what the user changed since the last
// sync — never the whole stale config — is what keeps console and Terraform changes from being
// lost (the race the incumbent documents).
//
// Configs are JSON trees (map[string]any, as from runtime.DefaultUnstructuredConverter). A Schema
// says which objects are maps (every key is a value: tags, labels), which lists are keyed by name
// (node groups), and which lists are sets (order does not matter). Everything else is a struct
// whose nil fields are unmanaged, or an atomic leaf.
package merge

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Policy decides what happens to a field changed only upstream.
type Policy int

const (
	// Adopt takes upstream changes into the config.
	Adopt Policy = iota
	// Enforce pushes the config back over upstream changes.
	Enforce
)

// Schema describes the shape of a config. Patterns are dotted field paths with "*" for any map
// key or list element name, e.g. "nodeGroups.*.labels".
type Schema struct {
	// Maps are objects whose keys are data (absence of a key in a managed map is meaningful).
	Maps []string
	// NamedLists are lists of objects keyed by a field; pattern → key field.
	NamedLists map[string]string
	// Sets are lists of scalars compared without regard to order.
	Sets []string
}

// Segment is one step of a Path: a struct field, a map key or a named-list element.
type Segment struct {
	Field string // struct field name, or "" for Key
	Key   string // map key or list element name
}

// Path addresses one field of a config.
type Path []Segment

// String renders a path as users read it: nodeGroups[ng-1].desiredSize, tags[env].
func (p Path) String() string {
	var b strings.Builder
	for _, s := range p {
		if s.Field != "" {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Field)
		} else {
			b.WriteString("[" + s.Key + "]")
		}
	}
	return b.String()
}

// Top is the first field of the path (e.g. "nodeGroups").
func (p Path) Top() string {
	if len(p) == 0 {
		return ""
	}
	return p[0].Field
}

func (p Path) pattern() string {
	var parts []string
	for _, s := range p {
		if s.Field != "" {
			parts = append(parts, s.Field)
		} else {
			parts = append(parts, "*")
		}
	}
	return strings.Join(parts, ".")
}

func (p Path) child(s Segment) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, s)
}

// Change is one field that differs. Absent values (a map key or list element that does not
// exist on that side) have the matching Has* false.
type Change struct {
	Path        Path
	Config      any
	HasConfig   bool
	Upstream    any
	HasUpstream bool
	Base        any
	HasBase     bool
}

func (c Change) String() string {
	return fmt.Sprintf("%s: config %s, upstream %s", c.Path, show(c.Config, c.HasConfig), show(c.Upstream, c.HasUpstream))
}

func show(v any, has bool) string {
	if !has {
		return "(absent)"
	}
	return fmt.Sprintf("%v", v)
}

// Result is the outcome of a merge.
type Result struct {
	// Push are fields to make true upstream, with the config's value: drover-side changes,
	// conflicts (drover wins) and, under Enforce, reverts of upstream drift.
	Push []Change
	// Adopt are upstream-only changes to take into the config (Adopt policy).
	Adopt []Change
	// Conflicts are fields changed on both sides since the last sync (also in Push).
	Conflicts []Change
	// Reverts are upstream-only changes rolled back under Enforce (also in Push).
	Reverts []Change
}

// InSync reports whether nothing needs doing.
func (r Result) InSync() bool { return len(r.Push) == 0 && len(r.Adopt) == 0 }

// ThreeWay merges base (last applied config), config (desired) and upstream (real state).
// A nil base means nothing was applied yet: every managed difference counts as a drover change.
func ThreeWay(schema Schema, policy Policy, base, config, upstream map[string]any) Result {
	m := merger{schema: schema, policy: policy}
	m.object(nil, base, base != nil, config, upstream)
	return m.res
}

type merger struct {
	schema Schema
	policy Policy
	res    Result
}

// object merges a struct: only keys with a non-nil config value are managed.
func (m *merger) object(p Path, base map[string]any, hasBase bool, config, upstream map[string]any) {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := config[k]
		if c == nil {
			continue // unmanaged
		}
		b, hb := base[k]
		hb = hb && hasBase && b != nil
		u, hu := upstream[k]
		hu = hu && u != nil
		m.value(p.child(Segment{Field: k}), b, hb, c, u, hu)
	}
}

func (m *merger) value(p Path, b any, hb bool, c any, u any, hu bool) {
	pat := p.pattern()
	if key, ok := m.schema.NamedLists[pat]; ok {
		m.collection(p, toNamed(b, key), hb, toNamed(c, key), toNamed(u, key), true)
		return
	}
	if contains(m.schema.Maps, pat) {
		bm, _ := b.(map[string]any)
		cm, _ := c.(map[string]any)
		um, _ := u.(map[string]any)
		m.collection(p, bm, hb, cm, um, false)
		return
	}
	if cm, ok := c.(map[string]any); ok {
		bm, _ := b.(map[string]any)
		um, _ := u.(map[string]any)
		m.object(p, bm, hb, cm, um)
		return
	}
	m.leaf(Change{Path: p, Config: c, HasConfig: true, Upstream: u, HasUpstream: hu, Base: b, HasBase: hb})
}

// collection merges a map or a named list, where presence of each key is part of the value.
func (m *merger) collection(p Path, base map[string]any, hasBase bool, config, upstream map[string]any, named bool) {
	keys := map[string]bool{}
	for _, mm := range []map[string]any{base, config, upstream} {
		for k := range mm {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		cp := p.child(Segment{Key: k})
		b, hb := base[k]
		hb = hb && hasBase
		c, hc := config[k]
		u, hu := upstream[k]
		switch {
		case hc && hu:
			if named {
				bm, _ := b.(map[string]any)
				cm, _ := c.(map[string]any)
				um, _ := u.(map[string]any)
				m.object(cp, bm, hb, cm, um)
			} else {
				m.leaf(Change{Path: cp, Config: c, HasConfig: true, Upstream: u, HasUpstream: true, Base: b, HasBase: hb})
			}
		case !hc && !hu:
			// Gone on both sides.
		default:
			m.presence(Change{Path: cp, Config: c, HasConfig: hc, Upstream: u, HasUpstream: hu, Base: b, HasBase: hb}, named, hasBase)
		}
	}
}

// presence handles an element present on one side only.
func (m *merger) presence(ch Change, named, collectionHadBase bool) {
	if !ch.HasBase {
		if !ch.HasConfig && collectionHadBase {
			// Added upstream while the collection was already managed.
			m.upstreamOnly(ch)
			return
		}
		m.push(ch) // drover added it, or the collection is newly managed: the config is the whole set
		return
	}
	// It existed at the last sync; one side removed it.
	if ch.HasConfig {
		// Upstream removed it. Did drover change it meanwhile?
		if m.equal(ch.Path, ch.Config, ch.Base, named) {
			m.upstreamOnly(ch)
		} else {
			m.conflict(ch)
		}
		return
	}
	// Drover removed it. Did upstream change it meanwhile?
	if m.equal(ch.Path, ch.Upstream, ch.Base, named) {
		m.push(ch)
	} else {
		m.conflict(ch)
	}
}

func (m *merger) leaf(ch Change) {
	if ch.HasUpstream && m.equal(ch.Path, ch.Config, ch.Upstream, false) {
		return
	}
	switch {
	case !ch.HasBase:
		m.push(ch)
	case m.equal(ch.Path, ch.Config, ch.Base, false):
		m.upstreamOnly(ch)
	case ch.HasUpstream && m.equal(ch.Path, ch.Upstream, ch.Base, false):
		m.push(ch)
	default:
		m.conflict(ch)
	}
}

func (m *merger) push(ch Change) { m.res.Push = append(m.res.Push, ch) }

func (m *merger) conflict(ch Change) {
	m.res.Conflicts = append(m.res.Conflicts, ch)
	m.res.Push = append(m.res.Push, ch)
}

func (m *merger) upstreamOnly(ch Change) {
	if m.policy == Enforce {
		m.res.Reverts = append(m.res.Reverts, ch)
		m.res.Push = append(m.res.Push, ch)
		return
	}
	m.res.Adopt = append(m.res.Adopt, ch)
}

func (m *merger) equal(p Path, a, b any, named bool) bool {
	if contains(m.schema.Sets, p.pattern()) {
		return reflect.DeepEqual(sortedStrings(a), sortedStrings(b))
	}
	return reflect.DeepEqual(a, b)
}

// ParsePath parses the String form of a path: fields separated by dots, map keys and list
// element names in brackets (nodeGroups[ng-1].labels[kubernetes.io/role]).
func ParsePath(s string) (Path, error) {
	var p Path
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", s)
			}
			p = append(p, Segment{Key: s[i+1 : i+end]})
			i += end + 1
		default:
			end := strings.IndexAny(s[i:], ".[")
			if end < 0 {
				end = len(s) - i
			}
			p = append(p, Segment{Field: s[i : i+end]})
			i += end
		}
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("empty path")
	}
	return p, nil
}
