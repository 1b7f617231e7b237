package agentmgmt

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
)

// TestResourcesAgreeWithImporter: the agent Bundle is the importer's installation minus the
// installation-only parts, field for field; the Cluster's settings reach the pod template.
func TestResourcesAgreeWithImporter(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec fleetv1alpha1.ClusterSpec
	}{
		{"defaults", fleetv1alpha1.ClusterSpec{}},
		{"settings", fleetv1alpha1.ClusterSpec{AgentNamespace: "agents", AgentImage: "example.com/drover:1",
			AgentEnv:         []corev1.EnvVar{{Name: "A", Value: "1"}},
			AgentTolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			AgentResources:   &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fleetv1alpha1.Cluster{Spec: tc.spec}
			got, err := Resources(c, manifests.DefaultImage())
			if err != nil {
				t.Fatal(err)
			}
			// As the importer builds them (bootstrap secret, config hash included).
			o := manifests.ForCluster(c)
			o.Namespace, o.Bootstrap, o.ConfigHash = AgentNamespace(c), map[string][]byte{"k": nil}, "hash"
			imported, err := manifests.Objects(o)
			if err != nil {
				t.Fatal(err)
			}
			var want []map[string]any
			for _, u := range imported {
				switch u.GetKind() {
				case "Secret", "ConfigMap":
					continue
				case "Deployment":
					unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "annotations")
				}
				want = append(want, u.Object)
			}
			var have []map[string]any
			for _, r := range got {
				m := map[string]any{}
				if err := json.Unmarshal(r.Raw, &m); err != nil {
					t.Fatal(err)
				}
				have = append(have, m)
			}
			wb, _ := json.Marshal(want)
			hb, _ := json.Marshal(have)
			if string(wb) != string(hb) {
				t.Fatalf("agent bundle differs from the importer's installation:\n%s\n%s", hb, wb)
			}
			var dep map[string]any
			for _, m := range have {
				if m["kind"] == "Deployment" {
					dep = m
				}
			}
			pod, _, _ := unstructured.NestedMap(dep, "spec", "template", "spec")
			ctr := pod["containers"].([]any)[0].(map[string]any)
			if tc.spec.AgentImage != "" && ctr["image"] != tc.spec.AgentImage {
				t.Errorf("image %v", ctr["image"])
			}
			if tc.spec.AgentTolerations != nil && !reflect.DeepEqual(len(pod["tolerations"].([]any)), 1) {
				t.Errorf("tolerations %v", pod["tolerations"])
			}
			if tc.spec.AgentEnv != nil && len(ctr["env"].([]any)) != 2 {
				t.Errorf("env %v", ctr["env"])
			}
		})
	}
}
