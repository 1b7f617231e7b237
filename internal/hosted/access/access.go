// Package access reaches a hosted cluster's Kubernetes API the provider's own way: EKS bearer
// tokens (a presigned STS GetCallerIdentity), AKS credentials from listClusterUserCredential or
// listClusterAdminCredential, GKE OAuth2 access tokens of the service account. Tokens are
// short-lived; a Credentials says when to fetch new ones. Nothing here logs a token or puts one
// in an error.
package access

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Credentials reach one cluster's API server.
type Credentials struct {
	// Host is the API server URL (https://host:port).
	Host string
	// CAData is the PEM of the CA of the API server's serving certificate.
	CAData []byte
	// Token is the bearer token. Never log it.
	Token string
	// Expiry is when the provider stops accepting Token. Refresh before it (RefreshAt).
	Expiry time.Time
}

// RefreshMargin is how long before Expiry a token should be replaced.
const RefreshMargin = 5 * time.Minute

// RefreshAt is when the credentials should be replaced: RefreshMargin before Expiry, or half
// way to it for a token that lives less than twice the margin.
func (c *Credentials) RefreshAt(issued time.Time) time.Time {
	if life := c.Expiry.Sub(issued); life < 2*RefreshMargin {
		return issued.Add(life / 2)
	}
	return c.Expiry.Add(-RefreshMargin)
}

// String describes the credentials without the token.
func (c *Credentials) String() string {
	return fmt.Sprintf("API server %s (token expires %s)", c.Host, c.Expiry.UTC().Format(time.RFC3339))
}

// GoString is String, so %#v does not print the token either.
func (c *Credentials) GoString() string { return c.String() }

// RESTConfig is a client-go config for the credentials.
func (c *Credentials) RESTConfig() *rest.Config {
	return &rest.Config{Host: c.Host, BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData}}
}

// Kubeconfig is a kubeconfig for the credentials, its cluster, user and context called name.
func (c *Credentials) Kubeconfig(name string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: c.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the kubeconfig of %s: %w", name, err)
	}
	return b, nil
}

// ErrNotReady means the cluster has no API endpoint yet (still being created) or reports none
// that can be reached (private endpoint only).
var ErrNotReady = errors.New("the cluster has no reachable API endpoint")

func checkCA(pemData []byte, what string) error {
	if len(pemData) == 0 {
		return fmt.Errorf("%s: no CA certificate: %w", what, ErrNotReady)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pemData) {
		return fmt.Errorf("%s: the CA certificate is not PEM", what)
	}
	return nil
}
