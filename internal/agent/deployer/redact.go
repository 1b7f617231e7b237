package deployer

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// SensitiveWords mark fields whose values drift reports never show: a map key containing one
// of them (case-insensitive), anywhere in the path, hides the values below it, and so does an
// env-style entry ({name: DB_PASSWORD, value: ...}) whose name contains one. Over-matching
// (a toleration's "key", say) only costs a value in a report, never a leak. Every field of a
// core Secret is hidden, whatever its name: its annotations may hold a copy of its data
// (kubectl's last-applied-configuration).
var SensitiveWords = []string{"password", "passwd", "passphrase", "secret", "token", "key", "credential", "auth", "private"}

// redacted is what a report shows instead of a hidden value.
const redacted = "(redacted)"

// Sensitive reports whether a field or entry name contains one of SensitiveWords.
func Sensitive(name string) bool {
	name = strings.ToLower(name)
	for _, w := range SensitiveWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// isSecret reports whether the manifest obj is a core Secret.
func isSecret(obj map[string]any) bool {
	return obj["apiVersion"] == "v1" && obj["kind"] == "Secret"
}

// fieldDiff is one difference between a desired and a live object.
type fieldDiff struct {
	path   string
	report string // the path, with both values unless hidden
}

// Diff lists the differences between desired and live, sorted, as drift reports show them:
// "path: want X, have Y", or for values that must not be shown "path: (redacted)", and for a
// core Secret the bare path.
func Diff(desired, live map[string]any) []string {
	return reports(diffObjects(desired, live))
}

func reports(diffs []fieldDiff) []string {
	if len(diffs) == 0 {
		return nil
	}
	out := make([]string, len(diffs))
	for i, d := range diffs {
		out[i] = d.report
	}
	return out
}

// diffObjects compares desired with live, sorted by path, leaving out the fields at and below
// the skipped paths (JSON pointers' reference tokens, see diffIgnore).
func diffObjects(desired, live map[string]any, skip ...[]string) []fieldDiff {
	var out []fieldDiff
	secret := isSecret(desired)
	w := differ{secret: secret, skip: skip, out: &out}
	w.value("", nil, desired, live, secret)
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

func paths(diffs []fieldDiff) []string {
	out := make([]string, len(diffs))
	for i, d := range diffs {
		out[i] = d.path
	}
	return out
}

// differ walks a desired and a live object side by side.
type differ struct {
	secret bool
	skip   [][]string
	out    *[]fieldDiff
}

// skipped reports whether the field at tokens is one of the skipped paths.
func (w differ) skipped(tokens []string) bool {
	for _, s := range w.skip {
		if slices.Equal(s, tokens) {
			return true
		}
	}
	return false
}

// value compares the values d and l at path (tokens: its JSON pointer's reference tokens).
func (w differ) value(path string, tokens []string, d, l any, hide bool) {
	if ignored[path] || (len(tokens) > 0 && w.skipped(tokens)) {
		return
	}
	secret, out := w.secret, w.out
	switch dv := d.(type) {
	case map[string]any:
		lv, ok := l.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range dv {
			keys[k] = true
		}
		for k := range lv {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			h := hide || Sensitive(k) || k == "value" && (sensitiveName(dv) || sensitiveName(lv))
			w.value(p, append(slices.Clip(tokens), k), dv[k], lv[k], h)
		}
		return
	case []any:
		lv, ok := l.([]any)
		if !ok || len(lv) != len(dv) {
			break
		}
		for i := range dv {
			w.value(fmt.Sprintf("%s[%d]", path, i), append(slices.Clip(tokens), strconv.Itoa(i)), dv[i], lv[i], hide)
		}
		return
	}
	if fmt.Sprint(d) == fmt.Sprint(l) && (d == nil) == (l == nil) {
		return
	}
	switch {
	case secret:
		*out = append(*out, fieldDiff{path, path})
	case hide || holdsSensitive(d) || holdsSensitive(l):
		*out = append(*out, fieldDiff{path, path + ": " + redacted})
	default:
		*out = append(*out, fieldDiff{path, fmt.Sprintf("%s: want %s, have %s", path, short(d), short(l))})
	}
}

// sensitiveName reports whether m is an env-style entry whose name is sensitive.
func sensitiveName(m map[string]any) bool {
	n, ok := m["name"].(string)
	return ok && Sensitive(n)
}

// holdsSensitive reports whether a map or list value contains a field that would be hidden.
func holdsSensitive(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		if sensitiveName(v) {
			return true
		}
		for k, e := range v {
			if Sensitive(k) || holdsSensitive(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if holdsSensitive(e) {
				return true
			}
		}
	}
	return false
}
