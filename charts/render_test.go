// Package charts tests drover's Helm charts with Helm's Go SDK: lint, render with default and
// non-default values, and check the rendered objects (what `helm lint`/`helm template` show).
package charts

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// lint runs `helm lint --strict` on a chart.
func lint(t *testing.T, dir, namespace string, vals map[string]any) {
	t.Helper()
	l := action.NewLint()
	l.Strict, l.Namespace = true, namespace
	res := l.Run([]string{dir}, vals)
	for _, m := range res.Messages {
		t.Logf("lint %s: %s", dir, m)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("helm lint %s: %v", dir, errors.Join(res.Errors...))
	}
}

func load(t *testing.T, name string) *chart.Chart {
	t.Helper()
	c, err := loader.Load(filepath.Join(".", name))
	if err != nil {
		t.Fatalf("load chart %s: %v", name, err)
	}
	return c
}

// renderFiles is `helm template` into namespace: every rendered template (NOTES.txt included) by
// its path ("drover/templates/deployment.yaml").
func renderFiles(c *chart.Chart, namespace string, vals map[string]any) (map[string]string, error) {
	rv, err := chartutil.ToRenderValues(c, vals, common.ReleaseOptions{Name: c.Name(), Namespace: namespace, IsInstall: true}, common.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, rv)
}

// render is `helm template` into namespace: the objects by "Kind/namespace/name".
func render(t *testing.T, c *chart.Chart, namespace string, vals map[string]any) (map[string]*unstructured.Unstructured, error) {
	t.Helper()
	files, err := renderFiles(c, namespace, vals)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	objs := map[string]*unstructured.Unstructured{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(files[n])), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v\n%s", n, err, files[n])
			}
			if len(u.Object) == 0 {
				continue
			}
			key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
			if _, dup := objs[key]; dup {
				t.Fatalf("%s rendered twice", key)
			}
			objs[key] = u
		}
	}
	return objs, nil
}

func mustRender(t *testing.T, c *chart.Chart, namespace string, vals map[string]any) map[string]*unstructured.Unstructured {
	t.Helper()
	objs, err := render(t, c, namespace, vals)
	if err != nil {
		t.Fatalf("render %s: %v", c.Name(), err)
	}
	return objs
}

func get(t *testing.T, objs map[string]*unstructured.Unstructured, key string) *unstructured.Unstructured {
	t.Helper()
	u, ok := objs[key]
	if !ok {
		keys := make([]string, 0, len(objs))
		for k := range objs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Fatalf("no %s among %v", key, keys)
	}
	return u
}

// TestValuesSchema: a mistyped or malformed value is refused at install with the field named
// (values.schema.json), not silently ignored — `--set apiServerUrl=...` would otherwise leave
// every token MissingAPIServerURL with no hint why.
func TestValuesSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		chart string
		vals  map[string]any
		want  []string
	}{
		{"drover", map[string]any{"apiServerUrl": "https://mgmt.example.com"}, []string{"apiServerUrl"}},
		{"drover", map[string]any{"apiServerURL": "mgmt.example.com:6443"}, []string{"apiServerURL", "https"}},
		{"drover", map[string]any{"apiServerCA": "not a certificate"}, []string{"apiServerCA"}},
		{"drover", map[string]any{"replicas": "two"}, []string{"replicas", "integer"}},
		{"drover", map[string]any{"replicas": 0}, []string{"replicas"}},
		{"drover", map[string]any{"podAntiAffinity": "strict"}, []string{"podAntiAffinity", "soft"}},
		{"drover", map[string]any{"dashboard": map[string]any{"tls": map[string]any{"secret": "tls"}}}, []string{"dashboard/tls", "secret"}},
		{"drover", map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"interval": "30 seconds"}}}, []string{"interval"}},
		{"drover", map[string]any{"extraArgs": []any{"hosted-workers=16"}}, []string{"extraArgs"}},
		{"drover-agent", map[string]any{"apiServerURL": "https://mgmt.example.com", "tokne": "x"}, []string{"tokne"}},
	} {
		t.Run(tc.chart+"/"+strings.Join(tc.want, "/"), func(t *testing.T) {
			t.Parallel()
			_, err := render(t, load(t, tc.chart), "drover-system", tc.vals)
			if err == nil {
				t.Fatalf("values %v rendered, want them refused", tc.vals)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
