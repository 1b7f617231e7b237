package integration

import (
	"cmp"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	aksim "github.com/droverhq/drover/pkg/cloudsim/aks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

func init() { harnesses["aks"] = func() harness { return &aksHarness{} } }

const (
	aksTenant   = "11111111-1111-4111-8111-111111111111"
	aksClient   = "22222222-2222-4222-8222-222222222222"
	aksSecret   = "correct-horse-battery-staple"
	aksSub      = "33333333-3333-4333-8333-333333333333"
	aksRG       = "rg-drover"
	aksLocation = "westeurope"
	aksPool     = "pool1" // the harness's pool-1 (AKS pool names are lowercase alphanumerics)
)

// aksHarness drives the AKS simulator; its "console" is the real Azure SDK called directly.
type aksHarness struct {
	sim      *aksim.Server
	simTime  *simcore.ManualClock
	clusters *armcontainerservice.ManagedClustersClient
	pools    *armcontainerservice.AgentPoolsClient
	// throttleRetryAfter is the simulator's ThrottleRetryAfter (0: 1ms, so tests stay fast).
	throttleRetryAfter time.Duration
}

// aksEnv is an env with the AKS simulator, for the AKS-specific tests.
type aksEnv struct {
	*env
	*aksHarness
}

func newAKSEnv(t *testing.T) *aksEnv {
	h := &aksHarness{}
	return &aksEnv{env: newEnv(t, h), aksHarness: h}
}

func (h *aksHarness) name() string { return "aks" }
func (h *aksHarness) provider() hosted.Provider {
	return aks.Provider{Retry: policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond}}
}

func (h *aksHarness) setup(t *testing.T, e *env) {
	h.simTime = e.simTime
	h.sim = aksim.NewTestServer(t, aksim.Options{
		Credentials: []aksim.Credential{{TenantID: aksTenant, ClientID: aksClient, ClientSecret: aksSecret, Subscriptions: []string{aksSub}}},
		Clock:       e.simTime, Delay: simDelay, ThrottleRetryAfter: cmp.Or(h.throttleRetryAfter, time.Millisecond),
	})
	// The console retries patiently, so throttling aimed at drover does not fail the test's own calls.
	retry := policy.RetryOptions{MaxRetries: 30, RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond}
	co := h.sim.CredentialOptions()
	co.Retry = retry
	cred, err := azidentity.NewClientSecretCredential(aksTenant, aksClient, aksSecret, co)
	if err != nil {
		t.Fatal(err)
	}
	opts := h.sim.ARMClientOptions()
	opts.Retry = retry
	if h.clusters, err = armcontainerservice.NewManagedClustersClient(aksSub, cred, opts); err != nil {
		t.Fatal(err)
	}
	if h.pools, err = armcontainerservice.NewAgentPoolsClient(aksSub, cred, opts); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cred", "azure"} {
		if err := createSecret(e.ns, name, h.secretData(aksSecret)); err != nil {
			t.Fatal(err)
		}
	}
}

func (h *aksHarness) secretData(secret string) map[string]string {
	return map[string]string{
		aks.KeyTenantID: aksTenant, aks.KeySubscriptionID: aksSub, aks.KeyClientID: aksClient, aks.KeyClientSecret: secret,
		aks.KeyAuthorityHost: h.sim.URL(), aks.KeyResourceManagerEndpoint: h.sim.URL(), aks.KeyCAPEM: string(h.sim.CAPEM()),
	}
}

// created is a full config for an AKS cluster drover creates: tags {"team": "platform"} and one
// System pool of 2 nodes without autoscaling.
func (h *aksHarness) created(name string) *v1.Cluster { return aksCreated(name) }

func aksCreated(name string) *v1.Cluster {
	return &v1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.ClusterSpec{AKSConfig: &v1.AKSClusterConfig{
			ClusterName: name, ResourceGroup: aksRG, ResourceLocation: aksLocation, CredentialSecret: "cred",
			KubernetesVersion: ptr.To("1.32"), DNSPrefix: ptr.To(name), Tags: map[string]string{"team": "platform"},
			NodePools: []v1.AKSNodePool{{Name: aksPool, Mode: ptr.To(aks.ModeSystem), Count: ptr.To[int32](2), NodeLabels: map[string]string{"pool": "one"}}},
		}},
	}
}

func busyState(s *string) bool {
	v := ptr.Deref(s, "Succeeded")
	return v != "Succeeded" && v != "Failed" && v != "Canceled"
}

// waitIdle lets running operations finish, as a console user waits before their next change.
func (h *aksHarness) waitIdle(t *testing.T, cluster string) aksim.ClusterState {
	t.Helper()
	for range 10 {
		st := h.simCluster(t, cluster)
		busy := busyState(st.Properties.ProvisioningState)
		for _, p := range st.Properties.AgentPoolProfiles {
			busy = busy || busyState(p.ProvisioningState)
		}
		if !busy {
			return st
		}
		h.simTime.Advance(simDelay)
	}
	t.Fatalf("AKS cluster %s stays busy", cluster)
	return aksim.ClusterState{}
}

func (h *aksHarness) consoleTag(t *testing.T, cluster, key, value string) {
	t.Helper()
	st := h.waitIdle(t, cluster)
	tags := st.Tags
	if tags == nil {
		tags = map[string]*string{}
	}
	tags[key] = to.Ptr(value)
	if _, err := h.clusters.BeginUpdateTags(context.Background(), aksRG, cluster, armcontainerservice.TagsObject{Tags: tags}, nil); err != nil {
		t.Fatalf("console: update tags: %v", err)
	}
}

// consolePool changes one pool in the console: a full agent pool PUT of the pool as read, with
// edit applied. It reports false if the cluster or the pool is busy.
func (h *aksHarness) consolePool(t *testing.T, cluster, pool string, edit func(*armcontainerservice.ManagedClusterAgentPoolProfileProperties) bool) bool {
	t.Helper()
	st := h.simCluster(t, cluster)
	if busyState(st.Properties.ProvisioningState) {
		return false
	}
	for _, p := range st.Properties.AgentPoolProfiles {
		if *p.Name != pool {
			continue
		}
		if busyState(p.ProvisioningState) {
			return false
		}
		props := &armcontainerservice.ManagedClusterAgentPoolProfileProperties{}
		b, _ := json.Marshal(p)
		if err := json.Unmarshal(b, props); err != nil {
			t.Fatal(err)
		}
		props.ProvisioningState, props.PowerState, props.CurrentOrchestratorVersion = nil, nil, nil
		if !edit(props) {
			return false
		}
		if _, err := h.pools.BeginCreateOrUpdate(context.Background(), aksRG, cluster, pool, armcontainerservice.AgentPool{Properties: props}, nil); err != nil {
			t.Fatalf("console: update pool %s: %v", pool, err)
		}
		return true
	}
	t.Fatalf("pool %s not found in AKS cluster %s", pool, cluster)
	return false
}

func (h *aksHarness) consoleScale(t *testing.T, cluster string, size int32) bool {
	return h.consolePool(t, cluster, aksPool, func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) bool {
		if ptr.Deref(p.Count, 0) == size {
			return false
		}
		p.Count = to.Ptr(size)
		return true
	})
}

func (h *aksHarness) tags(t *testing.T, cluster string) map[string]string {
	out := map[string]string{}
	for k, v := range h.simCluster(t, cluster).Tags {
		out[k] = *v
	}
	return out
}

func (h *aksHarness) size(t *testing.T, cluster string) int32 {
	return ptr.Deref(h.simPool(t, cluster, aksPool).Count, -1)
}

func (h *aksHarness) cfgTags(c *v1.Cluster) map[string]string { return c.Spec.AKSConfig.Tags }
func (h *aksHarness) setCfgTag(c *v1.Cluster, k, v string) {
	if c.Spec.AKSConfig.Tags == nil {
		c.Spec.AKSConfig.Tags = map[string]string{}
	}
	c.Spec.AKSConfig.Tags[k] = v
}
func (h *aksHarness) cfgSize(c *v1.Cluster) int32 { return *aksConfigPool(c, aksPool).Count }
func (h *aksHarness) setCfgSize(c *v1.Cluster, n int32) {
	aksConfigPool(c, aksPool).Count = ptr.To(n)
}

func aksConfigPool(c *v1.Cluster, name string) *v1.AKSNodePool {
	for i := range c.Spec.AKSConfig.NodePools {
		if c.Spec.AKSConfig.NodePools[i].Name == name {
			return &c.Spec.AKSConfig.NodePools[i]
		}
	}
	return nil
}

func (h *aksHarness) simCluster(t *testing.T, name string) aksim.ClusterState {
	t.Helper()
	st, ok := h.sim.ManagedCluster(aksSub, aksRG, name)
	if !ok {
		t.Fatalf("AKS cluster %s does not exist in the simulator", name)
	}
	return st
}

func (h *aksHarness) simPool(t *testing.T, cluster, pool string) *armcontainerservice.ManagedClusterAgentPoolProfile {
	t.Helper()
	for _, p := range h.simCluster(t, cluster).Properties.AgentPoolProfiles {
		if *p.Name == pool {
			return p
		}
	}
	t.Fatalf("pool %s not found in AKS cluster %s", pool, cluster)
	return nil
}

func (h *aksHarness) faults() *simcore.Faults { return h.sim.Faults() }

// edit changes the AKS config through the API, as a user would.
func (e *aksEnv) edit(name string, f func(*v1.AKSClusterConfig)) {
	e.t.Helper()
	e.editCluster(name, func(c *v1.Cluster) { f(c.Spec.AKSConfig) })
}

func (h *aksHarness) credentialData(_ *testing.T, wrong bool) (map[string]string, string) {
	if wrong {
		return h.secretData(wrongSecretValue), aks.KeyClientSecret
	}
	return h.secretData(aksSecret), aks.KeyClientSecret
}
