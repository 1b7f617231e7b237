package charts

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
)

// canonical decodes u into its typed object and back, so that both sides spell a field the same
// way (Secret data base64, quantities, empty lists).
func canonical(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	obj, err := clientgoscheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		t.Fatalf("%s: %v", u.GetKind(), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "status")
	return m
}

// TestAgentChartMatchesManifests: the agent chart installs, object for object, what the importer
// and `drover agent install` deploy (internal/agent/manifests) for the same settings. Only
// what belongs to each way of installing differs: the Namespace (Helm's release namespace), the
// config-hash annotation (the importer rolls the agent with it) and the chart's scheduling
// values (imagePullPolicy, nodeSelector).
func TestAgentChartMatchesManifests(t *testing.T) {
	t.Parallel()
	const agentNS = "drover-agent"
	bootstrap := map[string]string{
		fleetv1alpha1.KeyAPIServerURL: "https://mgmt.example.com:6443", fleetv1alpha1.KeyAPIServerCA: "CA",
		fleetv1alpha1.KeyToken: "tok", fleetv1alpha1.KeyTokenName: "t1", fleetv1alpha1.KeyClusterNamespace: "fleet-default",
		fleetv1alpha1.KeySystemRegistrationNamespace: fleetv1alpha1.SystemRegistrationNamespace,
	}
	for _, tc := range []struct {
		name  string
		image string
	}{{"default image", ""}, {"set image", "registry.example.com/drover:v7"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vals := map[string]any{"clientID": "cid", "labels": map[string]any{"env": "prod"}, "image": tc.image}
			data := map[string][]byte{}
			for k, v := range bootstrap {
				vals[k] = v
				data[k] = []byte(v)
			}
			lint(t, "drover-agent", agentNS, vals)
			c := load(t, "drover-agent")
			chartObjs := mustRender(t, c, agentNS, vals)
			image := tc.image
			if image == "" {
				image = "ghcr.io/droverhq/drover:" + c.AppVersion()
			}
			goObjs, err := manifests.Objects(manifests.Options{Namespace: agentNS, Image: image, ClientID: "cid",
				Labels: map[string]string{"env": "prod"}, Bootstrap: data})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, u := range goObjs {
				if u.GetKind() == "Namespace" {
					continue
				}
				key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
				want = append(want, key)
				cu, ok := chartObjs[key]
				if !ok {
					t.Errorf("the chart does not render %s", key)
					continue
				}
				g, h := canonical(t, u), canonical(t, cu)
				if u.GetKind() == "Deployment" {
					unstructured.RemoveNestedField(g, "spec", "template", "metadata", "annotations")
					ctrs, _, _ := unstructured.NestedSlice(h, "spec", "template", "spec", "containers")
					delete(ctrs[0].(map[string]any), "imagePullPolicy")
					_ = unstructured.SetNestedSlice(h, ctrs, "spec", "template", "spec", "containers")
					unstructured.RemoveNestedField(h, "spec", "template", "spec", "nodeSelector")
				}
				gb, _ := json.MarshalIndent(g, "", " ")
				hb, _ := json.MarshalIndent(h, "", " ")
				if string(gb) != string(hb) {
					t.Errorf("%s differs:\nGo manifests: %s\nchart:        %s", key, gb, hb)
				}
			}
			var extra []string
			for k := range chartObjs {
				if !slices.Contains(want, k) {
					extra = append(extra, k)
				}
			}
			sort.Strings(extra)
			if len(extra) > 0 {
				t.Errorf("the chart renders objects the importer does not deploy: %s", strings.Join(extra, ", "))
			}
		})
	}
}
