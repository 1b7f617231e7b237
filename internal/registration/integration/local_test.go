package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/internal/server"
)

// TestLocalRegistrationCredentials registers the cluster drover runs in from the rest configs
// drover really gets: in a pod, a CA file (the in-cluster config reads
// /var/run/secrets/.../ca.crt) and a token; from a kubeconfig, possibly an exec credential
// plugin. The local kubeconfig Secret must carry the CA and a token of the local agent's own
// ServiceAccount, which deploys the agent; no Secret may hold drover's own credential.
func TestLocalRegistrationCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, mgmt.Config.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	// drover's own credential: an admin client certificate, handed out by an exec plugin in the
	// second case (a script printing an ExecCredential, as cloud CLIs do).
	cert, key := mgmt.Config.CertData, mgmt.Config.KeyData
	cred, err := json.Marshal(map[string]any{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
		"status": map[string]string{"clientCertificateData": string(cert), "clientKeyData": string(key)}})
	if err != nil {
		t.Fatal(err)
	}
	credFile, plugin := filepath.Join(dir, "credential.json"), filepath.Join(dir, "credential-plugin")
	if err := os.WriteFile(credFile, cred, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\nexec cat "+credFile+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		cfg  func() *rest.Config
	}{
		{"CA file", func() *rest.Config {
			return &rest.Config{Host: mgmt.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAFile: caFile, CertData: cert, KeyData: key}}
		}},
		{"exec plugin", func() *rest.Config {
			return &rest.Config{Host: mgmt.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAFile: caFile},
				ExecProvider: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: plugin,
					InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			cfg := tc.cfg()
			c, err := client.New(cfg, client.Options{Scheme: server.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			ns := mgmt.Namespace(t)
			agentNS := "agent-" + ns
			r := &local.Reconciler{Client: c, APIReader: c, LocalConfig: cfg, Namespace: ns, AgentNamespace: agentNS, TokenTTL: time.Hour}
			if _, err := r.Reconcile(ctx, ctrl.Request{}); err != nil {
				t.Fatalf("reconcile: %v", err)
			}

			s := &corev1.Secret{}
			if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: local.SecretName}, s); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(s.Data[fleetv1alpha1.KeyAPIServerCA], mgmt.Config.CAData) {
				t.Errorf("apiServerCA %q, want the CA from the file", s.Data[fleetv1alpha1.KeyAPIServerCA])
			}
			kc, err := clientcmd.Load(s.Data[fleetv1alpha1.KeyKubeconfig])
			if err != nil {
				t.Fatal(err)
			}
			user := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
			if len(user.ClientCertificateData) > 0 || len(user.ClientKeyData) > 0 || user.Exec != nil || user.TokenFile != "" || user.Token == "" {
				t.Fatalf("local kubeconfig user %+v: want a token only", user)
			}
			if cl := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]; !bytes.Equal(cl.CertificateAuthorityData, mgmt.Config.CAData) {
				t.Errorf("local kubeconfig CA %q, want the CA from the file", cl.CertificateAuthorityData)
			}
			// The token is the local agent's own ServiceAccount.
			review := &authenticationv1.SelfSubjectReview{}
			if err := tokenClient(t, []byte(user.Token)).Create(ctx, review); err != nil {
				t.Fatal(err)
			}
			if want := "system:serviceaccount:" + ns + ":" + local.ServiceAccountName; review.Status.UserInfo.Username != want {
				t.Errorf("local kubeconfig authenticates as %q, want %q", review.Status.UserInfo.Username, want)
			}

			// The importer deploys the local agent with that token.
			eventually(t, 60*time.Second, func() error {
				cl := getCluster(t, ns, fleetv1alpha1.LocalClusterName)
				if !meta.IsStatusConditionTrue(cl.Status.Conditions, fleetv1alpha1.ConditionImported) {
					return fmt.Errorf("local cluster not imported: %+v", cl.Status.Conditions)
				}
				return nil
			})

			// No Secret the local registration made (its kubeconfig Secret, the import token's
			// values, the agent's bootstrap and credential) holds drover's own credential. (Other
			// tests of this package put the admin kubeconfig into Secrets on purpose.)
			var all []corev1.Secret
			for _, n := range []string{ns, agentNS} {
				var list corev1.SecretList
				if err := mgmt.Client.List(ctx, &list, client.InNamespace(n)); err != nil {
					t.Fatal(err)
				}
				all = append(all, list.Items...)
			}
			if len(all) < 2 {
				t.Fatalf("%d Secrets in the local namespaces, want at least the kubeconfig and the agent's bootstrap", len(all))
			}
			for _, sec := range all {
				for k, v := range sec.Data {
					for _, own := range [][]byte{cert, key, []byte(base64.StdEncoding.EncodeToString(cert)), []byte(base64.StdEncoding.EncodeToString(key))} {
						if bytes.Contains(v, own) {
							t.Errorf("Secret %s/%s key %s holds drover's own credential", sec.Namespace, sec.Name, k)
						}
					}
				}
			}
		})
	}
}
