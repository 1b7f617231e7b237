package eks

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// TestRotationsDoNotLeakClients: every rotation of a credential Secret (a new resourceVersion)
// builds a new SDK client; the clients of old versions must not pile up.
func TestRotationsDoNotLeakClients(t *testing.T) {
	c := &v1.Cluster{Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{DisplayName: "x", Region: "us-west-2"}}}
	for rv := range hosted.MaxClients + 100 {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "aws", UID: "uid", ResourceVersion: fmt.Sprint(rv)},
			Data: map[string][]byte{KeyAccessKeyID: []byte("AKIA"), KeySecretAccessKey: []byte("secret")}}
		if _, err := (Provider{}).Connect(t.Context(), c, s, http.DefaultTransport); err != nil {
			t.Fatal(err)
		}
	}
	if n := hosted.Clients.Len(); n > hosted.MaxClients {
		t.Fatalf("%d SDK clients cached after %d rotations, bound %d", n, hosted.MaxClients+100, hosted.MaxClients)
	}
}
