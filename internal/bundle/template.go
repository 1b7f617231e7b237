package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// fleetLegacyLabels starts a whole Helm value Fleet replaces with a cluster label's value.
const fleetLegacyLabels = "global.fleet.clusterLabels."

// maxTemplateDepth bounds the walk of nested values, as Fleet's does.
const maxTemplateDepth = 50

// templateFuncs are Sprig's text functions without those that reach outside the template:
// the controller's environment (env, expandenv), DNS (getHostByName), and Helm's own
// include/tpl, which do not belong to values.
var templateFuncs = func() template.FuncMap {
	f := sprig.TxtFuncMap()
	for _, name := range []string{"env", "expandenv", "include", "tpl", "getHostByName"} {
		delete(f, name)
	}
	return f
}()

// Templated reports whether values use Fleet's templating: "${" anywhere, or a whole string
// value naming a cluster label the legacy way.
func Templated(values any) bool {
	switch v := values.(type) {
	case map[string]any:
		for _, sub := range v {
			if Templated(sub) {
				return true
			}
		}
	case []any:
		for _, sub := range v {
			if Templated(sub) {
				return true
			}
		}
	case string:
		return strings.Contains(v, "${") || strings.HasPrefix(strings.TrimSpace(v), fleetLegacyLabels)
	}
	return false
}

// ParseValuesTemplate checks that values parse as a template, without a cluster to render
// them for.
func ParseValuesTemplate(values map[string]any) error {
	data, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	_, err = newValuesTemplate(data)
	return err
}

func newValuesTemplate(data []byte) (*template.Template, error) {
	// "{{" is YAML's flow mapping: Fleet's delimiters are "${" and "}".
	t, err := template.New("values").Funcs(templateFuncs).Option("missingkey=error").Delims("${", "}").Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("parse the values template: %w", err)
	}
	return t, nil
}

// RenderValues renders templated Helm values for cluster c (see BundleHelm.TemplateValues).
// Errors never quote the values, which may hold secrets.
func RenderValues(raw *runtime.RawExtension, c *fleetv1alpha1.Cluster) (*runtime.RawExtension, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return raw, nil
	}
	var values map[string]any
	if err := json.Unmarshal(raw.Raw, &values); err != nil {
		return nil, fmt.Errorf("read the values: %w", err)
	}
	if err := legacyLabels(values, c.Labels, 0); err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("write the values as YAML: %w", err)
	}
	t, err := newValuesTemplate(data)
	if err != nil {
		return nil, err
	}
	clusterValues := map[string]any{}
	if v := c.Spec.TemplateValues; v != nil && len(v.Raw) > 0 {
		if err := json.Unmarshal(v.Raw, &clusterValues); err != nil || clusterValues == nil {
			return nil, fmt.Errorf("the Cluster's spec.templateValues are not a map of values")
		}
	}
	// map[string]any, not map[string]string: Sprig's get, hasKey and keys take only that.
	ctx := map[string]any{
		"ClusterName": c.Name, "ClusterNamespace": c.Namespace,
		"ClusterLabels": anyMap(c.Labels), "ClusterAnnotations": anyMap(c.Annotations), "ClusterValues": clusterValues,
	}
	var out bytes.Buffer
	if err := t.Execute(&out, ctx); err != nil {
		if key, kerr := failingKey(values, ctx, ""); kerr != nil {
			// Its own template's position ("value:1:17") says nothing more than the key.
			msg := kerr.Error()
			if i := strings.LastIndex(msg, ": "); i >= 0 {
				msg = msg[i+2:]
			}
			return nil, fmt.Errorf("render the values template: %s: %s", key, msg)
		}
		return nil, fmt.Errorf("render the values template: %w", execError(err))
	}
	var rendered map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &rendered); err != nil {
		return nil, errors.New("the rendered values are not YAML (a template output that breaks the YAML around it, e.g. a multi-line value)")
	}
	b, err := json.Marshal(rendered)
	if err != nil {
		return nil, err
	}
	return &runtime.RawExtension{Raw: b}, nil
}

// failingKey finds the value (by its key path) whose template fails on its own, to name it
// in the error: the values are rendered as one YAML document, whose line numbers mean nothing
// to the author of the values.
func failingKey(v any, ctx map[string]any, path string) (string, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if key, err := failingKey(sub, ctx, p); err != nil {
				return key, err
			}
		}
	case []any:
		for i, sub := range v {
			if key, err := failingKey(sub, ctx, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return key, err
			}
		}
	case string:
		if !strings.Contains(v, "${") {
			return "", nil
		}
		t, err := template.New("value").Funcs(templateFuncs).Option("missingkey=error").Delims("${", "}").Parse(v)
		if err == nil {
			err = t.Execute(io.Discard, ctx)
		}
		return path, err
	}
	return "", nil
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// execError keeps text/template's execution error but not the text of the action it quotes,
// which for a value like "${ .ClusterLabels.x }password" is only the action, but in general
// may be any part of the values.
func execError(err error) error {
	var ee template.ExecError
	if errors.As(err, &ee) {
		msg := ee.Err.Error()
		// "template: values:3:14: executing \"values\" at <.ClusterLabels.env>: map has no entry for key \"env\""
		if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg, "executing") {
			where := msg[:strings.Index(msg, ": executing")]
			return fmt.Errorf("%s: %s", strings.TrimPrefix(where, "template: "), msg[i+2:])
		}
		return ee.Err
	}
	return err
}

// legacyLabels replaces whole string values "global.fleet.clusterLabels.NAME" with the
// cluster's label NAME ("" without it), as Fleet does.
func legacyLabels(v map[string]any, labels map[string]string, depth int) error {
	if depth > maxTemplateDepth {
		return fmt.Errorf("values nested deeper than %d levels", maxTemplateDepth)
	}
	for k, sub := range v {
		switch s := sub.(type) {
		case string:
			if name, ok := strings.CutPrefix(strings.TrimSpace(s), fleetLegacyLabels); ok {
				v[k] = labels[name]
			}
		case map[string]any:
			if err := legacyLabels(s, labels, depth+1); err != nil {
				return err
			}
		case []any:
			for _, item := range s {
				if m, ok := item.(map[string]any); ok {
					if err := legacyLabels(m, labels, depth+1); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
