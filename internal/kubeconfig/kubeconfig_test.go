package kubeconfig

import (
	"errors"
	"strings"
	"testing"
)

const goodUser = `
- name: u
  user:
    token: s3cr3t-token`

func doc(cluster, user string) string {
	return `apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: k, user: u}
clusters:
- name: k
  cluster:
    server: https://10.0.0.1:6443` + cluster + `
users:` + user + "\n"
}

func TestFromSecret(t *testing.T) {
	tests := []struct {
		name, data string
		wantErr    string // "" = accepted
	}{
		{"token", doc("", goodUser), ""},
		{"client certificate data", doc("\n    insecure-skip-tls-verify: true", "\n- name: u\n  user:\n    client-certificate-data: Zm9v\n    client-key-data: YmFy"), ""},
		{"exec plugin", doc("", "\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [-c, touch /tmp/owned]"), `running a command (exec: "/bin/sh")`},
		{"auth provider", doc("", "\n- name: u\n  user:\n    auth-provider:\n      name: oidc\n      config: {idp-issuer-url: https://idp}"), `auth-provider "oidc"`},
		{"token file", doc("", "\n- name: u\n  user:\n    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"), "tokenFile"},
		{"client certificate file", doc("", "\n- name: u\n  user:\n    client-certificate: /etc/ssl/cert.pem\n    client-key: /etc/ssl/key.pem"), "client-certificate, client-key"},
		{"CA file", doc("\n    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt", goodUser), "certificate-authority"},
		{"no current context", strings.Replace(doc("", goodUser), "current-context: c", "current-context: other", 1), "no current-context"},
		{"no server", strings.Replace(doc("", goodUser), "server: https://10.0.0.1:6443", "server: ''", 1), "no cluster with a server URL"},
		{"not a kubeconfig", "{token: s3cr3t-token, oops", "does not parse"},
		{"empty", "", "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := FromSecret([]byte(tc.data))
			if tc.wantErr == "" {
				if err != nil || cfg.Host != "https://10.0.0.1:6443" {
					t.Fatalf("FromSecret: %v, %+v", err, cfg)
				}
				if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" {
					t.Errorf("config acts locally: %+v", cfg)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("FromSecret: %v, want an ErrInvalid naming %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "s3cr3t-token") {
				t.Errorf("the error quotes the kubeconfig's token: %v", err)
			}
		})
	}
}
