package integration

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/helmchart"
	"github.com/droverhq/drover/test/ocireg"
)

// TestGitRepoHelmOCI: drover.yaml names a chart in a private OCI registry (HTTPS with its own CA,
// basic auth). Without spec.helmSecretName the path is RenderFailed saying the certificate is not
// trusted; with the CA but credentials limited by helmRepoURLRegex to other registries, saying
// the registry needs credentials; with them the
// agent installs the chart as a release, and a new helm.version upgrades it. The password never
// shows in a condition.
func TestGitRepoHelmOCI(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const ns = "helm-oci"
	reg := ocireg.New()
	reg.Username, reg.Password = "puller", "oci-registry-password-1234"
	for _, v := range []string{"0.1.0", "0.2.0"} {
		files := map[string][]byte{}
		for name, content := range webChart("", v) {
			files[strings.TrimPrefix(name, "/")] = []byte(content)
		}
		archive, err := helmchart.Package(files)
		if err != nil {
			t.Fatal(err)
		}
		reg.PushChart("charts/web", v, archive, "")
	}
	srv := httptest.NewUnstartedServer(reg)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes of the first step
	srv.StartTLS()
	t.Cleanup(srv.Close)
	chartRef := "oci://" + strings.TrimPrefix(srv.URL, "https://") + "/charts/web"

	r := newRepo(t, "helm-oci", false)
	cfg := func(version string) string {
		return "defaultNamespace: " + ns + "\nhelm:\n  chart: " + chartRef + "\n  version: " + version + "\n  values:\n    value: from-oci\n"
	}
	r.commit("oci chart", map[string]string{"web/drover.yaml": cfg("0.1.0")})
	gr := newGitRepo(t, "helm-oci", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Paths = []string{"web"} })
	wantCondition(t, gr, fleetv1alpha1.ReasonRenderFailed, "web/drover.yaml", chartRef, "not trusted", "cacerts")

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "helm-oci-creds"},
		Data: map[string][]byte{
			fleetv1alpha1.GitKeyUsername: []byte(reg.Username),
			fleetv1alpha1.GitKeyPassword: []byte(reg.Password),
			fleetv1alpha1.GitKeyCACerts:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
		}}
	if err := mgmt.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), secret) })
	patchSpec(t, gr, func(s *fleetv1alpha1.GitRepoSpec) {
		s.HelmSecretName, s.HelmRepoURLRegex = secret.Name, `^oci://registry\.example\.com/`
	})
	wantCondition(t, gr, fleetv1alpha1.ReasonRenderFailed, chartRef, "needs credentials")

	patchSpec(t, gr, func(s *fleetv1alpha1.GitRepoSpec) { s.HelmRepoURLRegex = "" })
	name := gitrepo.BundleName("helm-oci", "web")
	eventually(t, 90*time.Second, func() error { return wantSynced(t, gr, r.git(r.work, "rev-parse", "HEAD"), name) })
	wantRelease(t, ns, name, []string{"deployed"}, "from-oci", "0.1.0")

	c2 := r.commit("chart 0.2.0", map[string]string{"web/drover.yaml": cfg("^0.2")})
	eventually(t, 60*time.Second, func() error { return wantSynced(t, gr, c2, name) })
	wantRelease(t, ns, name, []string{"superseded", "deployed"}, "from-oci", "0.2.0")

	got, err := getGitRepo(t, gr)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got.Status.Conditions {
		if strings.Contains(c.Message, reg.Password) {
			t.Errorf("condition %s shows the registry password", c.Type)
		}
	}
}
