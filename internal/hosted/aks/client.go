package aks

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	corev1 "k8s.io/api/core/v1"

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
		return c, secretError("SecretIncomplete", "Secret %s/%s lacks key(s) %s: add them (keys: tenantID, subscriptionID, clientID, clientSecret, optional authorityHost, resourceManagerEndpoint, caPEM).", s.Namespace, s.Name, strings.Join(missing, ", "))
	}
	for _, u := range []struct{ key, v string }{{KeyAuthorityHost, c.authority}, {KeyResourceManagerEndpoint, c.arm}} {
		if u.v == "" {
			continue
		}
		if p, err := url.Parse(u.v); err != nil || p.Scheme != "https" || p.Host == "" {
			return c, secretError("InvalidEndpoint", "Secret %s/%s: %s %q is not an https URL such as https://login.microsoftonline.com/.", s.Namespace, s.Name, u.key, u.v)
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

func hash(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// Caches shared by every session: TLS transports per CA (so connections are reused across
// passes), credentials per identity (azidentity caches tokens inside the credential, so a
// token is fetched once an hour, not once a pass), and ARM clients per credential and
// transport. A rotated secret hashes differently and gets fresh entries.
var cache = struct {
	sync.Mutex
	transports map[string]*http.Transport
	creds      map[string]azcore.TokenCredential
	clients    map[clientKey]*sdkClients
}{transports: map[string]*http.Transport{}, creds: map[string]azcore.TokenCredential{}, clients: map[clientKey]*sdkClients{}}

// maxCached bounds each cache; past it the cache is dropped and rebuilt as sessions come.
const maxCached = 4096

type clientKey struct {
	cred, subscription, arm, retry string
	transport                      any
}

type sdkClients struct {
	clusters *armcontainerservice.ManagedClustersClient
	pools    *armcontainerservice.AgentPoolsClient
}

// caTransport is an HTTP transport trusting the system roots plus the PEM's CAs.
func caTransport(pem []byte) (*http.Transport, error) {
	key := hash(pem)
	if t := cache.transports[key]; t != nil {
		return t, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, secretError("InvalidCAPEM", "the caPEM key holds no PEM certificate")
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	t.MaxIdleConnsPerHost = 64
	if len(cache.transports) >= maxCached {
		clear(cache.transports)
	}
	cache.transports[key] = t
	return t, nil
}

// clients returns the ARM clients for a credential Secret, sending through transport (the
// engine's rate-limited one), with the Secret's CA when it has one.
func (p Provider) clients(s *corev1.Secret, transport hosted.Transport) (*sdkClients, error) {
	c, err := readSecret(s)
	if err != nil {
		return nil, err
	}
	credKey := strings.Join([]string{c.tenant, c.client, hash([]byte(c.secret)), c.authority, hash(c.caPEM)}, "|")
	key := clientKey{cred: credKey, subscription: c.subscription, arm: c.arm, retry: fmt.Sprint(p.Retry)}
	if transport != nil && reflect.TypeOf(transport).Comparable() {
		key.transport = transport
	}

	cache.Lock()
	defer cache.Unlock()
	if key.transport != nil {
		if cl := cache.clients[key]; cl != nil {
			return cl, nil
		}
	}
	var tokenTransport policy.Transporter = http.DefaultClient
	if len(c.caPEM) > 0 {
		t, err := caTransport(c.caPEM)
		if err != nil {
			return nil, err
		}
		transport = hosted.WithBase(transport, t)
		tokenTransport = &http.Client{Transport: t}
	}
	cfg := c.cloud()
	cred := cache.creds[credKey]
	if cred == nil {
		cred, err = azidentity.NewClientSecretCredential(c.tenant, c.client, c.secret, &azidentity.ClientSecretCredentialOptions{
			ClientOptions:            policy.ClientOptions{Cloud: cfg, Transport: tokenTransport, Retry: p.Retry},
			DisableInstanceDiscovery: c.authority != "",
		})
		if err != nil {
			return nil, secretError("InvalidCredential", "Secret %s/%s: %v", s.Namespace, s.Name, err)
		}
		if len(cache.creds) >= maxCached {
			clear(cache.creds)
		}
		cache.creds[credKey] = cred
	}
	var httpTransport policy.Transporter = http.DefaultClient
	if transport != nil {
		httpTransport = &http.Client{Transport: transport}
	}
	opts := &arm.ClientOptions{
		ClientOptions:         policy.ClientOptions{Cloud: cfg, Transport: httpTransport, Retry: p.Retry},
		DisableRPRegistration: true,
	}
	clusters, err := armcontainerservice.NewManagedClustersClient(c.subscription, cred, opts)
	if err != nil {
		return nil, secretError("InvalidCredential", "Secret %s/%s: %v", s.Namespace, s.Name, err)
	}
	pools, err := armcontainerservice.NewAgentPoolsClient(c.subscription, cred, opts)
	if err != nil {
		return nil, secretError("InvalidCredential", "Secret %s/%s: %v", s.Namespace, s.Name, err)
	}
	cl := &sdkClients{clusters: clusters, pools: pools}
	if key.transport != nil {
		if len(cache.clients) >= maxCached {
			clear(cache.clients)
		}
		cache.clients[key] = cl
	}
	return cl, nil
}
