package bundle

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestRenderValues: Fleet's values templating, rendered for one cluster: ${ } over the values
// as YAML with Sprig, the cluster's name, namespace, labels and annotations, the legacy
// global.fleet.clusterLabels.NAME; a missing key or a function reaching outside (env) is an
// error that does not quote the values.
func TestRenderValues(t *testing.T) {
	t.Parallel()
	c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-default", Name: "edge-1",
		Labels: map[string]string{"env": "prod", "replicas": "3"}, Annotations: map[string]string{"owner": "team-a"}},
		Spec: fleetv1alpha1.ClusterSpec{TemplateValues: &runtime.RawExtension{Raw: []byte(`{"host":"edge-1.example.com","size":{"cpu":4}}`)}}}
	for _, tc := range []struct {
		name, values, want, err string
	}{
		{"name and namespace", `{"host":"${ .ClusterName }.${ .ClusterNamespace }.example.com"}`, `{"host":"edge-1.fleet-default.example.com"}`, ""},
		{"labels and annotations", `{"env":"${ .ClusterLabels.env }","owner":"${ index .ClusterAnnotations \"owner\" }"}`, `{"env":"prod","owner":"team-a"}`, ""},
		// As in Fleet, the values are templated as YAML: a label rendered bare is read as YAML.
		{"a number from a label", `{"replicas":"${ .ClusterLabels.replicas }"}`, `{"replicas":3}`, ""},
		{"sprig", `{"env":"${ .ClusterLabels.env | upper }","region":"${ get .ClusterLabels \"region\" | default \"us-east-1\" }"}`, `{"env":"PROD","region":"us-east-1"}`, ""},
		{"nested and lists", `{"a":{"b":["${ .ClusterName }",1,true]}}`, `{"a":{"b":["edge-1",1,true]}}`, ""},
		{"legacy label", `{"env":"global.fleet.clusterLabels.env","missing":"global.fleet.clusterLabels.nope"}`, `{"env":"prod","missing":""}`, ""},
		{"plain values unchanged", `{"password":"s3cret","n":2}`, `{"n":2,"password":"s3cret"}`, ""},
		{"missing label", `{"password":"s3cret","env":"${ .ClusterLabels.region }"}`, "", `map has no entry for key "region"`},
		{"ClusterValues", `{"host":"${ .ClusterValues.host }","cpu":"${ .ClusterValues.size.cpu }"}`, `{"cpu":4,"host":"edge-1.example.com"}`, ""},
		{"missing ClusterValues key", `{"x":"${ .ClusterValues.x }"}`, "", `map has no entry for key "x"`},
		{"env is not a function", `{"x":"${ env \"HOME\" }"}`, "", `function "env" not defined`},
		{"parse error", `{"x":"${ .ClusterName "}`, "", "parse the values template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderValues(&runtime.RawExtension{Raw: []byte(tc.values)}, c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error quotes a value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Raw) != tc.want {
				t.Errorf("got %s, want %s", got.Raw, tc.want)
			}
		})
	}
}
