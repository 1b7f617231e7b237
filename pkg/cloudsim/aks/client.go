package aks

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// CAPEM is the PEM of the CA that signed the simulator's serving certificate. Clients that do
// not use HTTPClient must trust it.
func (s *Server) CAPEM() []byte { return bytes.Clone(s.certs.caPEM) }

// CertPool is a pool holding only the simulator's CA.
func (s *Server) CertPool() *x509.CertPool { return s.certs.pool.Clone() }

// HTTPClient returns a client that trusts the simulator's CA. It satisfies
// policy.Transporter, so it goes into azcore's ClientOptions.Transport.
func (s *Server) HTTPClient() *http.Client {
	s.clientOnce.Do(func() {
		s.transport = &http.Transport{
			Proxy:               nil, // the simulator is local: never go through a proxy
			TLSClientConfig:     &tls.Config{RootCAs: s.certs.pool, MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}
		s.client = &http.Client{Transport: s.transport}
	})
	return s.client
}

// CloudConfig points azidentity (authority host) and ARM (endpoint and audience) at the
// simulator. Start must have been called.
func (s *Server) CloudConfig() cloud.Configuration {
	u := s.URL()
	return cloud.Configuration{
		ActiveDirectoryAuthorityHost: u + "/",
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: u, Audience: u},
		},
	}
}

// ClientOptions are azcore client options for the simulator: its cloud configuration and a
// transport trusting its CA. Callers may still set Retry and the like.
func (s *Server) ClientOptions() policy.ClientOptions {
	return policy.ClientOptions{Cloud: s.CloudConfig(), Transport: s.HTTPClient()}
}

// ARMClientOptions are options for armcontainerservice clients talking to the simulator.
func (s *Server) ARMClientOptions() *arm.ClientOptions {
	return &arm.ClientOptions{ClientOptions: s.ClientOptions()}
}

// CredentialOptions are options for azidentity.NewClientSecretCredential against the
// simulator. Instance discovery is disabled: MSAL would otherwise ask
// login.microsoftonline.com about the unknown authority host.
func (s *Server) CredentialOptions() *azidentity.ClientSecretCredentialOptions {
	return &azidentity.ClientSecretCredentialOptions{ClientOptions: s.ClientOptions(), DisableInstanceDiscovery: true}
}

// ClusterState is a deep copy of one simulated cluster, as the ARM API returns it.
type ClusterState struct {
	SubscriptionID string
	ResourceGroup  string
	armcontainerservice.ManagedCluster
}

// ManagedCluster returns the cluster's current state (after any transitions due), without
// going through the API, counters or faults.
func (s *Server) ManagedCluster(subscriptionID, resourceGroup, name string) (ClusterState, bool) {
	now := s.now()
	s.mu.Lock()
	c := s.lookup(clusterKey(subscriptionID, resourceGroup, name), now)
	if c == nil {
		s.mu.Unlock()
		return ClusterState{}, false
	}
	b, err := json.Marshal(c.render())
	st := ClusterState{SubscriptionID: c.sub, ResourceGroup: c.rg}
	s.mu.Unlock()
	if err != nil {
		panic(fmt.Sprintf("aks simulator: encoding cluster: %v", err)) // our own types always encode
	}
	if err := json.Unmarshal(b, &st.ManagedCluster); err != nil {
		panic(fmt.Sprintf("aks simulator: decoding cluster into the SDK model: %v", err))
	}
	return st, true
}

// ClusterCount is the number of clusters that exist now (deletions that have completed are
// dropped).
func (s *Server) ClusterCount() int {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range append([]string(nil), s.keys...) {
		s.lookup(k, now)
	}
	return len(s.clusters)
}

// FailNextOperation makes the next operation started on the cluster (a cluster PUT, a tags
// update or an agent pool PUT; not a delete) end Failed with the given ARM error code and
// message: the operation status reports Failed and the cluster or pool provisioningState
// becomes Failed, with its version unchanged.
func (s *Server) FailNextOperation(subscriptionID, resourceGroup, name, code, message string) error {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.lookup(clusterKey(subscriptionID, resourceGroup, name), now)
	if c == nil {
		return errors.New("aks simulator: cluster " + strings.Join([]string{subscriptionID, resourceGroup, name}, "/") + " not found")
	}
	c.failNext = &errorBody{Code: code, Message: message}
	return nil
}
