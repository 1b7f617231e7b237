package aks_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
)

const (
	tenantID = "11111111-1111-4111-8111-111111111111"
	clientID = "22222222-2222-4222-8222-222222222222"
	secret   = "correct-horse-battery-staple"
	subID    = "33333333-3333-4333-8333-333333333333"
	otherSub = "44444444-4444-4444-8444-444444444444"
	rg       = "rg-drover"
	location = "westeurope"
)

var poll = &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond}

// fastRetry keeps azcore's retries (on throttling, 5xx, dropped connections) quick and
// persistent enough for fault-injection tests.
var fastRetry = policy.RetryOptions{MaxRetries: 12, RetryDelay: 2 * time.Millisecond, MaxRetryDelay: 20 * time.Millisecond}

func newSim(t *testing.T, opts aks.Options) *aks.Server {
	t.Helper()
	if opts.Credentials == nil {
		opts.Credentials = []aks.Credential{{TenantID: tenantID, ClientID: clientID, ClientSecret: secret, Subscriptions: []string{subID}}}
	}
	if opts.Delay == 0 {
		opts.Delay = 30 * time.Millisecond
	}
	return aks.NewTestServer(t, opts)
}

type sdk struct {
	clusters *armcontainerservice.ManagedClustersClient
	pools    *armcontainerservice.AgentPoolsClient
}

// statusCounter wraps the simulator's transport and counts responses by status code, to see
// what the SDK's retry policy absorbed.
type statusCounter struct {
	next     policy.Transporter
	total    atomic.Int64
	throttle atomic.Int64
	failed   atomic.Int64 // 5xx and transport errors
}

func (c *statusCounter) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(req)
	c.total.Add(1)
	switch {
	case err != nil:
		c.failed.Add(1)
	case resp.StatusCode == http.StatusTooManyRequests:
		c.throttle.Add(1)
	case resp.StatusCode >= 500:
		c.failed.Add(1)
	}
	return resp, err
}

// newSDK builds the real SDK clients against sim, authenticating with secret for sub.
func newSDK(t *testing.T, sim *aks.Server, sub, secret string, transport policy.Transporter) sdk {
	t.Helper()
	copts := sim.ClientOptions()
	copts.Retry = fastRetry
	if transport != nil {
		copts.Transport = transport
	}
	cred, err := azidentity.NewClientSecretCredential(tenantID, clientID, secret,
		&azidentity.ClientSecretCredentialOptions{ClientOptions: copts, DisableInstanceDiscovery: true})
	if err != nil {
		t.Fatalf("NewClientSecretCredential: %v", err)
	}
	aopts := &arm.ClientOptions{ClientOptions: copts}
	mc, err := armcontainerservice.NewManagedClustersClient(sub, cred, aopts)
	if err != nil {
		t.Fatalf("NewManagedClustersClient: %v", err)
	}
	ap, err := armcontainerservice.NewAgentPoolsClient(sub, cred, aopts)
	if err != nil {
		t.Fatalf("NewAgentPoolsClient: %v", err)
	}
	return sdk{clusters: mc, pools: ap}
}

func clusterBody(version string) armcontainerservice.ManagedCluster {
	return armcontainerservice.ManagedCluster{
		Location: to.Ptr(location),
		Tags:     map[string]*string{"env": to.Ptr("dev")},
		Identity: &armcontainerservice.ManagedClusterIdentity{Type: to.Ptr(armcontainerservice.ResourceIdentityTypeSystemAssigned)},
		Properties: &armcontainerservice.ManagedClusterProperties{
			KubernetesVersion: to.Ptr(version),
			DNSPrefix:         to.Ptr("drover"),
			AgentPoolProfiles: []*armcontainerservice.ManagedClusterAgentPoolProfile{{
				Name:   to.Ptr("system"),
				Count:  to.Ptr[int32](1),
				VMSize: to.Ptr("Standard_D2s_v3"),
				Mode:   to.Ptr(armcontainerservice.AgentPoolModeSystem),
				OSType: to.Ptr(armcontainerservice.OSTypeLinux),
				Type:   to.Ptr(armcontainerservice.AgentPoolTypeVirtualMachineScaleSets),
			}},
			NetworkProfile: &armcontainerservice.NetworkProfile{
				NetworkPlugin: to.Ptr(armcontainerservice.NetworkPluginAzure),
				NetworkPolicy: to.Ptr(armcontainerservice.NetworkPolicyCalico),
			},
		},
	}
}

func createCluster(ctx context.Context, t *testing.T, c sdk, name string, body armcontainerservice.ManagedCluster) armcontainerservice.ManagedCluster {
	t.Helper()
	p, err := c.clusters.BeginCreateOrUpdate(ctx, rg, name, body, nil)
	if err != nil {
		t.Fatalf("BeginCreateOrUpdate(%s): %v", name, err)
	}
	res, err := p.PollUntilDone(ctx, poll)
	if err != nil {
		t.Fatalf("PollUntilDone(create %s): %v", name, err)
	}
	return res.ManagedCluster
}

// updateCluster is the read-modify-write a sync controller does: GET, change, PUT, poll.
func updateCluster(ctx context.Context, t *testing.T, c sdk, name string, change func(*armcontainerservice.ManagedCluster)) armcontainerservice.ManagedCluster {
	t.Helper()
	got, err := c.clusters.Get(ctx, rg, name, nil)
	if err != nil {
		t.Fatalf("Get(%s): %v", name, err)
	}
	mc := got.ManagedCluster
	change(&mc)
	p, err := c.clusters.BeginCreateOrUpdate(ctx, rg, name, mc, nil)
	if err != nil {
		t.Fatalf("BeginCreateOrUpdate(update %s): %v", name, err)
	}
	res, err := p.PollUntilDone(ctx, poll)
	if err != nil {
		t.Fatalf("PollUntilDone(update %s): %v", name, err)
	}
	return res.ManagedCluster
}

// putPool is a read-modify-write of one agent pool (a new pool starts empty).
func putPool(ctx context.Context, c sdk, cluster, name string, change func(*armcontainerservice.ManagedClusterAgentPoolProfileProperties)) (armcontainerservice.AgentPool, error) {
	var ap armcontainerservice.AgentPool
	got, err := c.pools.Get(ctx, rg, cluster, name, nil)
	switch {
	case err == nil:
		ap = got.AgentPool
	case errorCode(err) == "ResourceNotFound":
		ap = armcontainerservice.AgentPool{Properties: &armcontainerservice.ManagedClusterAgentPoolProfileProperties{}}
	default:
		return ap, err
	}
	change(ap.Properties)
	p, err := c.pools.BeginCreateOrUpdate(ctx, rg, cluster, name, ap, nil)
	if err != nil {
		return ap, err
	}
	res, err := p.PollUntilDone(ctx, poll)
	return res.AgentPool, err
}

func errorCode(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

func statusCode(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func findPool(mc armcontainerservice.ManagedCluster, name string) *armcontainerservice.ManagedClusterAgentPoolProfile {
	for _, p := range mc.Properties.AgentPoolProfiles {
		if *p.Name == name {
			return p
		}
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func derefSlice(s []*string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = deref(v)
	}
	return out
}

// profileProps converts a cluster's agentPoolProfiles entry to the AgentPool properties type
// (the SDK keeps them as two structs with the same fields).
func profileProps(t *testing.T, p *armcontainerservice.ManagedClusterAgentPoolProfile) *armcontainerservice.ManagedClusterAgentPoolProfileProperties {
	t.Helper()
	if p == nil {
		t.Fatal("pool missing from agentPoolProfiles")
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var out armcontainerservice.ManagedClusterAgentPoolProfileProperties
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}
