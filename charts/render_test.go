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

// render is `helm template` into namespace: the objects by "Kind/namespace/name".
func render(t *testing.T, c *chart.Chart, namespace string, vals map[string]any) (map[string]*unstructured.Unstructured, error) {
	t.Helper()
	rv, err := chartutil.ToRenderValues(c, vals, common.ReleaseOptions{Name: c.Name(), Namespace: namespace, IsInstall: true}, common.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(c, rv)
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
