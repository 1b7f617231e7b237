package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/version"
)

func agentImage(t *testing.T, o Options) string {
	t.Helper()
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			ctrs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			return ctrs[0].(map[string]any)["image"].(string)
		}
	}
	t.Fatal("no Deployment")
	return ""
}

// TestDefaultImageIsTheServersVersion: agents run the version of the drover that deploys them.
func TestDefaultImageIsTheServersVersion(t *testing.T) {
	t.Parallel()
	want := version.ImageRepository + ":" + version.Get().Version
	if got := DefaultImage(); got != want || strings.HasSuffix(got, ":latest") {
		t.Fatalf("DefaultImage() = %q, want %q", got, want)
	}
	if got := agentImage(t, Options{}); got != want {
		t.Errorf("default agent image %q, want %q", got, want)
	}
	if got := agentImage(t, Options{Image: "example.com/drover:v1"}); got != "example.com/drover:v1" {
		t.Errorf("set image %q", got)
	}
}

// TestAgentVersion: the version the agent reports wins; before it reports (or an agent too old
// to), the tag of the image drover deploys to it.
func TestAgentVersion(t *testing.T) {
	tests := []struct {
		name     string
		image    string
		reported string
		want     string
	}{
		{name: "reported", image: "registry.example.com:5000/drover:v1.3.0", reported: "v1.2.0", want: "v1.2.0"},
		{name: "the cluster's image", image: "registry.example.com:5000/drover:v1.3.0", want: "v1.3.0"},
		{name: "an image without a tag", image: "registry.example.com:5000/drover", want: "registry.example.com:5000/drover"},
		{name: "the server's image", want: DefaultImage()[strings.LastIndex(DefaultImage(), ":")+1:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fleetv1alpha1.Cluster{Spec: fleetv1alpha1.ClusterSpec{AgentImage: tt.image}, Status: fleetv1alpha1.ClusterStatus{Agent: fleetv1alpha1.AgentStatus{Version: tt.reported}}}
			if got := AgentVersion(c); got != tt.want {
				t.Errorf("AgentVersion = %q, want %q", got, tt.want)
			}
		})
	}
}
