package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/test/envtest"
)

// TestServerSettingsOnExistingCluster runs `drover server` against a cluster whose CRDs someone
// else installed (--install-crds=false) with the registration endpoint given as flags: the
// server must not apply the CRDs, and must write the endpoint where the registration
// controllers read it, so a new token is issued.
func TestServerSettingsOnExistingCluster(t *testing.T) {
	t.Parallel()
	cluster, err := envtest.Start("settings", envtest.Options{InstallCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, cluster.Config, filepath.Join(dir, "kubeconfig"))
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, cluster.Config.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	const url = "https://drover.example.com:6443"

	s := startServer(t, filepath.Join(dir, "data"), "--kubeconfig", kubeconfig, "--install-crds=false",
		"--api-server-url", url, "--api-server-ca", caFile, "--leader-elect=false")
	s.waitReady(t)

	ctx := t.Context()
	c := cluster.Client
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: config.DefaultNamespace, Name: config.DefaultName}, cm); err != nil {
		t.Fatalf("registration ConfigMap: %v", err)
	}
	if cm.Data[config.KeyAPIServerURL] != url || cm.Data[config.KeyAPIServerCA] != string(cluster.Config.CAData) {
		t.Errorf("registration ConfigMap data %v, want the --api-server-url and the --api-server-ca file", cm.Data)
	}

	// A token is issued with the given endpoint (it would stay MissingAPIServerURL otherwise).
	ns := cluster.Namespace(t)
	tok := &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "new"},
		Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}}}
	if err := c.Create(ctx, tok); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tok), tok); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(tok.Status.Conditions, fleetv1alpha1.ConditionReady) {
			return fmt.Errorf("token conditions %+v", tok.Status.Conditions)
		}
		return nil
	})
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tok.Status.SecretName}, secret); err != nil {
		t.Fatal(err)
	}
	if got := string(secret.Data[fleetv1alpha1.KeyAPIServerURL]); got != url {
		t.Errorf("token secret apiServerURL %q, want %q", got, url)
	}

	// The CRDs were left alone: no field of theirs is owned by drover.
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, crd := range crds.Items {
		if !strings.HasSuffix(crd.Spec.Group, "drover.io") {
			continue
		}
		n++
		for _, mf := range crd.ManagedFields {
			if mf.Manager == "drover" {
				t.Errorf("CRD %s was applied by drover server despite --install-crds=false", crd.Name)
			}
		}
	}
	if n == 0 {
		t.Fatal("no drover CRDs in the test cluster")
	}
	s.interrupt(t)
}

// writeKubeconfig writes an admin kubeconfig (client certificate) for cfg.
func writeKubeconfig(t testing.TB, cfg *rest.Config, path string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
