package gitrepo

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestHelmAccessFor: spec.helmSecretName's bad input is a ClientSecretInvalid naming the field
// and the key, never showing a value; good input gives credentials only for matching URLs.
func TestHelmAccessFor(t *testing.T) {
	t.Parallel()
	secret := func(name string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: name}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		secret("ok", map[string]string{"username": "puller", "password": "hunter2-secret"}),
		secret("user-only", map[string]string{"username": "puller"}),
		secret("bad-ca", map[string]string{"cacerts": "not a certificate"}),
	).Build()
	r := &Reconciler{SecretReader: c}
	for _, tc := range []struct {
		name, secret, regex string
		err                 []string
	}{
		{"missing Secret", "nope", "", []string{"spec.helmSecretName", "nope", "not found"}},
		{"bad regex", "ok", "(", []string{"spec.helmRepoURLRegex"}},
		{"user without password", "user-only", "", []string{"spec.helmSecretName", "password"}},
		{"cacerts without a certificate", "bad-ca", "", []string{"spec.helmSecretName", "cacerts"}},
		{"credentials", "ok", `^oci://registry\.example\.com/`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "apps"},
				Spec: fleetv1alpha1.GitRepoSpec{HelmSecretName: tc.secret, HelmRepoURLRegex: tc.regex}}
			a, err := r.helmAccessFor(t.Context(), gr)
			if tc.err != nil {
				var se *syncError
				if !errors.As(err, &se) || se.reason != fleetv1alpha1.ReasonClientSecretInvalid {
					t.Fatalf("error %v, want %s", err, fleetv1alpha1.ReasonClientSecretInvalid)
				}
				for _, want := range tc.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := a.credsFor("oci://registry.example.com/charts/web"); got == nil || got.Password != "hunter2-secret" {
				t.Errorf("no credentials for a matching URL: %+v", got)
			}
			if got := a.credsFor("https://charts.bitnami.com/bitnami"); got != nil {
				t.Error("credentials for a URL the regex does not match")
			}
		})
	}
}
