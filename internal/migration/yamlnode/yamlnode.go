// Package yamlnode edits YAML documents through go.yaml.in/yaml/v3 nodes, so comments and key
// order survive: users' cluster.yml and Cluster manifests stay theirs after drover's edits.
package yamlnode

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Parse returns the root mapping of a single-document YAML (an empty mapping for empty input).
func Parse(doc []byte) (*yaml.Node, *yaml.Node, error) {
	var d yaml.Node
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, nil, fmt.Errorf("parse YAML: %w", err)
	}
	if d.Kind == 0 {
		d = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	if d.Kind != yaml.DocumentNode || len(d.Content) != 1 || d.Content[0].Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("parse YAML: the document is not a mapping")
	}
	return &d, d.Content[0], nil
}

// Encode renders a document with two-space indentation.
func Encode(d *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	return b.Bytes(), nil
}

// Get returns the value of key in mapping m (nil if absent or m is not a mapping).
func Get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// Path follows keys through nested mappings (nil if any is absent).
func Path(m *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		m = Get(m, k)
	}
	return m
}

// String returns the scalar at key ("" if absent).
func String(m *yaml.Node, keys ...string) string {
	if n := Path(m, keys...); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// Ensure returns the mapping or sequence at key, appending an empty one if absent or null.
func Ensure(m *yaml.Node, key string, kind yaml.Kind) *yaml.Node {
	if v := Get(m, key); v != nil && v.Kind == kind {
		return v
	}
	tag := "!!map"
	if kind == yaml.SequenceNode {
		tag = "!!seq"
	}
	v := &yaml.Node{Kind: kind, Tag: tag}
	Set(m, key, v)
	return v
}

// Set sets key to v, in place if present (keeping the key's comments), else appended.
func Set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			old := m.Content[i+1]
			v.HeadComment, v.LineComment, v.FootComment = old.HeadComment, old.LineComment, old.FootComment
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// SetString sets key to a string scalar (quoted if quote) unless it already has that value.
// It reports whether anything changed.
func SetString(m *yaml.Node, key, value string, quote bool) bool {
	if v := Get(m, key); v != nil && v.Kind == yaml.ScalarNode && v.Value == value {
		return false
	}
	Set(m, key, Str(value, quote))
	return true
}

// Str is a string scalar node.
func Str(value string, quote bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	if quote {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// Delete removes key from m and reports whether it was there.
func Delete(m *yaml.Node, key string) bool {
	if m == nil || m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return true
		}
	}
	return false
}

// SeqHas reports whether sequence s has a scalar equal to v.
func SeqHas(s *yaml.Node, v string) bool {
	if s == nil {
		return false
	}
	for _, n := range s.Content {
		if n.Kind == yaml.ScalarNode && n.Value == v {
			return true
		}
	}
	return false
}

// SeqRemove removes every scalar equal to v from s and reports whether any was there.
func SeqRemove(s *yaml.Node, v string) bool {
	if s == nil {
		return false
	}
	out := s.Content[:0]
	for _, n := range s.Content {
		if n.Kind != yaml.ScalarNode || n.Value != v {
			out = append(out, n)
		}
	}
	changed := len(out) != len(s.Content)
	s.Content = out
	return changed
}

// Empty reports whether a mapping or sequence has no entries.
func Empty(n *yaml.Node) bool { return n != nil && len(n.Content) == 0 }
