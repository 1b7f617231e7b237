package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
