package charts

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/droverhq/drover/test/envtest"
)

var backquoted = regexp.MustCompile("`([^`]+)`")

// docTable reads the table rows under the heading of a markdown file: the backquoted items of
// each row's first cell, with the row's cells.
func docTable(t *testing.T, path, heading string) map[string][]string {
	t.Helper()
	table, err := envtest.DocTable(path, heading)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, cells := range table {
		for _, m := range backquoted.FindAllStringSubmatch(cells[1], -1) {
			rows[m[1]] = cells
		}
	}
	return rows
}

// TestDroverChartValuesDocumented: every value of values.yaml is in charts/drover/README.md's
// table, with its default, and the table names no value the chart lacks. A row may document a
// map as a whole (resources, podSecurityContext).
func TestDroverChartValuesDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("drover/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	leaves := map[string]any{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(prefix+k+".", sub)
			} else {
				leaves[prefix+k] = v
			}
		}
	}
	walk("", values)
	rows := docTable(t, "drover/README.md", "Values")

	documented := func(path string) (string, bool) {
		for p := path; ; {
			if _, ok := rows[p]; ok {
				return p, true
			}
			i := strings.LastIndex(p, ".")
			if i < 0 {
				return "", false
			}
			p = p[:i]
		}
	}
	for _, path := range slices.Sorted(maps.Keys(leaves)) {
		row, ok := documented(path)
		if !ok {
			t.Errorf("value %s is not in charts/drover/README.md's table", path)
			continue
		}
		if row != path {
			continue // documented as part of a map
		}
		def, err := yaml.Marshal(leaves[path])
		if err != nil {
			t.Fatal(err)
		}
		want := "`" + strings.TrimSpace(strings.ReplaceAll(string(def), `''`, `""`)) + "`"
		if cell := rows[path][2]; !strings.Contains(cell, want) {
			t.Errorf("README.md documents %s with default %s, values.yaml has %s", path, strings.TrimSpace(cell), want)
		}
	}
	for row := range rows {
		if _, ok := leaves[row]; ok {
			continue
		}
		if !slices.ContainsFunc(slices.Collect(maps.Keys(leaves)), func(p string) bool { return strings.HasPrefix(p, row+".") }) {
			t.Errorf("README.md documents %s, which values.yaml lacks", row)
		}
	}
}

// TestDroverChartRoleDocumented: docs/install.md's "Rights in drover-system" table lists exactly
// the rules of the Role the chart renders in drover-system (test/rbac does the same for the
// cluster-wide rights).
func TestDroverChartRoleDocumented(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, load(t, "drover"), ns, nil)
	u, ok := objs["Role/"+ns+"/drover-manager"]
	if !ok {
		t.Fatal(`no Role drover-manager rendered: update docs/install.md's "Rights in drover-system" and this test`)
	}
	role := into[rbacv1.Role](t, u)
	rendered := map[string][]string{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				key := res
				if g != "" {
					key = g + "/" + res
				}
				rendered[key] = union(rendered[key], r.Verbs)
			}
		}
	}
	documented := map[string][]string{}
	for res, cells := range docTable(t, "../docs/install.md", "Rights in drover-system") {
		var verbs []string
		for v := range strings.SplitSeq(cells[2], ",") {
			verbs = append(verbs, strings.TrimSpace(v))
		}
		documented[res] = union(nil, verbs)
	}
	for res, verbs := range rendered {
		if !slices.Equal(documented[res], verbs) {
			t.Errorf("Role drover-manager grants %s %v, docs/install.md says %v", res, verbs, documented[res])
		}
	}
	for res, verbs := range documented {
		if _, ok := rendered[res]; !ok {
			t.Errorf("docs/install.md lists %s %v, which Role drover-manager does not grant", res, verbs)
		}
	}
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}
