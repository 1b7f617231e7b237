package aks

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// creds is what a credential Secret says.
type creds struct {
	tenant, subscription, client, secret string
	authority, arm                       string
	caPEM                                []byte
}

func readSecret(s *corev1.Secret) (creds, error) {
	get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
	c := creds{
		tenant: get(KeyTenantID), subscription: get(KeySubscriptionID), client: get(KeyClientID),
		secret: string(s.Data[KeyClientSecret]), authority: get(KeyAuthorityHost), arm: get(KeyResourceManagerEndpoint),
		caPEM: s.Data[KeyCAPEM],
	}
	var missing []string
	for _, k := range []struct{ key, v string }{{KeyTenantID, c.tenant}, {KeySubscriptionID, c.subscription}, {KeyClientID, c.client}, {KeyClientSecret, c.secret}} {
		if k.v == "" {
			missing = append(missing, k.key)
		}
	}
	if len(missing) > 0 {
		return c, secretError(v1.ReasonSecretIncomplete, "Secret %s/%s lacks key(s) %s: add them (keys: tenantID, subscriptionID, clientID, clientSecret, optional authorityHost, resourceManagerEndpoint, caPEM).", s.Namespace, s.Name, strings.Join(missing, ", "))
	}
	for _, u := range []struct{ key, v string }{{KeyAuthorityHost, c.authority}, {KeyResourceManagerEndpoint, c.arm}} {
		if u.v == "" {
			continue
		}
		if p, err := url.Parse(u.v); err != nil || p.Scheme != "https" || p.Host == "" {
			return c, secretError(v1.ReasonInvalidEndpoint, "Secret %s/%s: %s %q is not an https URL such as https://login.microsoftonline.com/.", s.Namespace, s.Name, u.key, u.v)
		}
	}
	return c, nil
}

func secretError(reason, format string, args ...any) error {
	return &hosted.FieldError{Field: "aksConfig.credentialSecret", Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func (c creds) cloud() cloud.Configuration {
	cfg := cloud.AzurePublic
	if c.authority == "" && c.arm == "" {
		return cfg
	}
	cfg.Services = map[cloud.ServiceName]cloud.ServiceConfiguration{cloud.ResourceManager: cfg.Services[cloud.ResourceManager]}
	if c.authority != "" {
		cfg.ActiveDirectoryAuthorityHost = strings.TrimSuffix(c.authority, "/") + "/"
	}
	if c.arm != "" {
		ep := strings.TrimSuffix(c.arm, "/")
		cfg.Services[cloud.ResourceManager] = cloud.ServiceConfiguration{Endpoint: ep, Audience: ep}
	}
	return cfg
}

type sdkClients struct {
	clusters *armcontainerservice.ManagedClustersClient
	pools    *armcontainerservice.AgentPoolsClient
}

// caTransport is an HTTP transport trusting the system roots plus the PEM's CAs.
func caTransport(pem []byte) (*http.Transport, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, secretError(v1.ReasonInvalidCAPEM, "the caPEM key holds no PEM certificate")
	}
	t := hosted.NewProviderTransport()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	t.MaxIdleConnsPerHost = 64
	return t, nil
}

// clients returns the ARM clients for a credential Secret, sending through transport (the
// engine's rate-limited one), with the Secret's CA when it has one. They are kept per Secret
// version in hosted.Clients: the credential inside caches its token (one token an hour, not one
// a pass) and the CA transport keeps its connections.
func (p Provider) clients(s *corev1.Secret, transport hosted.Transport) (*sdkClients, error) {
	c, err := readSecret(s)
	if err != nil {
		return nil, err
	}
	key := hosted.NewClientKey("aks", s, fmt.Sprint(p.Retry), transport)
	return hosted.CachedClient(hosted.Clients, key, func() (*sdkClients, error) { return p.newClients(s, c, transport) })
}

func (p Provider) newClients(s *corev1.Secret, c creds, transport hosted.Transport) (*sdkClients, error) {
	// Neither the token (sign-in) calls nor the ARM calls wait for an answer for ever: the
	// transports give up on missing response headers, the per-try timeout on a whole try.
	retry := p.Retry
	if retry.TryTimeout == 0 {
		retry.TryTimeout = hosted.RequestTimeout
	}
	var tokenTransport policy.Transporter = &http.Client{Transport: hosted.SharedTransport()}
	if len(c.caPEM) > 0 {
		t, err := caTransport(c.caPEM)
		if err != nil {
			return nil, err
		}
		transport = hosted.WithBase(transport, t)
		tokenTransport = &http.Client{Transport: t}
	}
	cfg := c.cloud()
	cred, err := azidentity.NewClientSecretCredential(c.tenant, c.client, c.secret, &azidentity.ClientSecretCredentialOptions{
		ClientOptions:            policy.ClientOptions{Cloud: cfg, Transport: tokenTransport, Retry: retry},
		DisableInstanceDiscovery: c.authority != "",
	})
	if err != nil {
		return nil, secretError(v1.ReasonInvalidCredential, "Secret %s/%s: %v", s.Namespace, s.Name, err)
	}
	var httpTransport policy.Transporter = &http.Client{Transport: hosted.SharedTransport()}
	if transport != nil {
		httpTransport = &http.Client{Transport: transport}
	}
	opts := &arm.ClientOptions{
		ClientOptions:         policy.ClientOptions{Cloud: cfg, Transport: httpTransport, Retry: retry},
		DisableRPRegistration: true,
	}
	clusters, err := armcontainerservice.NewManagedClustersClient(c.subscription, cred, opts)
	if err != nil {
		return nil, secretError(v1.ReasonInvalidCredential, "Secret %s/%s: %v", s.Namespace, s.Name, err)
	}
	pools, err := armcontainerservice.NewAgentPoolsClient(c.subscription, cred, opts)
	if err != nil {
		return nil, secretError(v1.ReasonInvalidCredential, "Secret %s/%s: %v", s.Namespace, s.Name, err)
	}
	return &sdkClients{clusters: clusters, pools: pools}, nil
}
