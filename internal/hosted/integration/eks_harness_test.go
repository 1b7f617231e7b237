package integration

import (
	"testing"
	"time"

	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/eks"
	sim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

func init() { harnesses["eks"] = func() harness { return &eksHarness{} } }

type eksHarness struct {
	// statusLag makes EKS report ACTIVE for a while after accepting an update.
	statusLag time.Duration
	sim       *sim.Server
	url       string
	console   *consoleClient
}

// eksEnv is an env with the EKS simulator, for the EKS-specific tests.
type eksEnv struct {
	*env
	*eksHarness
}

func newEKSEnv(t *testing.T) *eksEnv { return newEKSEnvWith(t, &eksHarness{}) }

func newEKSEnvWith(t *testing.T, h *eksHarness) *eksEnv {
	return &eksEnv{env: newEnv(t, h), eksHarness: h}
}

func (h *eksHarness) name() string              { return "eks" }
func (h *eksHarness) provider() hosted.Provider { return eks.Provider{RetryMaxAttempts: 10} }

func (h *eksHarness) setup(t *testing.T, e *env) {
	s, ts := sim.NewTestServer(t, sim.Options{Clock: e.simTime, Delay: simDelay, UpdateStatusLag: h.statusLag})
	h.sim, h.url = s, ts.URL
	// The console retries patiently, so throttling aimed at drover does not fail the test's own calls.
	h.console = &consoleClient{sim.NewClient(ts.URL, "us-west-2", sim.DefaultAccessKeyID, sim.DefaultSecretAccessKey, func(o *awseks.Options) { o.RetryMaxAttempts = 30 })}
	for _, name := range []string{"cred", "aws"} {
		if err := createSecret(e.ns, name, map[string]string{eks.KeyAccessKeyID: sim.DefaultAccessKeyID, eks.KeySecretAccessKey: sim.DefaultSecretAccessKey, eks.KeyEndpoint: ts.URL}); err != nil {
			t.Fatal(err)
		}
	}
}

func (h *eksHarness) created(name string) *v1.Cluster {
	c := created(name)
	c.Spec.EKSConfig.CredentialSecret = "cred"
	c.Spec.EKSConfig.NodeGroups[0].Name = "pool-1"
	c.Spec.EKSConfig.NodeGroups[0].MaxSize = ptr.To[int32](5)
	return c
}

func (h *eksHarness) consoleTag(t *testing.T, cluster, key, value string) {
	h.console.tag(t, h.simCluster(t, cluster).ARN, map[string]string{key: value})
}

func (h *eksHarness) consoleScale(t *testing.T, cluster string, size int32) bool {
	ng := h.simCluster(t, cluster).Nodegroups[0]
	if ng.Status != "ACTIVE" || ng.DesiredSize == size {
		return false
	}
	h.console.scale(t, cluster, ng.Name, size)
	return true
}

func (h *eksHarness) tags(t *testing.T, cluster string) map[string]string {
	return h.simCluster(t, cluster).Tags
}

func (h *eksHarness) size(t *testing.T, cluster string) int32 {
	return h.simCluster(t, cluster).Nodegroups[0].DesiredSize
}

func (h *eksHarness) cfgTags(c *v1.Cluster) map[string]string { return c.Spec.EKSConfig.Tags }
func (h *eksHarness) setCfgTag(c *v1.Cluster, k, v string)    { c.Spec.EKSConfig.Tags[k] = v }
func (h *eksHarness) cfgSize(c *v1.Cluster) int32             { return *c.Spec.EKSConfig.NodeGroups[0].DesiredSize }
func (h *eksHarness) setCfgSize(c *v1.Cluster, n int32) {
	c.Spec.EKSConfig.NodeGroups[0].DesiredSize = ptr.To(n)
}

func (h *eksHarness) simCluster(t *testing.T, name string) sim.ClusterState {
	t.Helper()
	st, ok := h.sim.Cluster("us-west-2", name)
	if !ok {
		t.Fatalf("EKS cluster %s does not exist in the simulator", name)
	}
	return st
}

// simCluster reads the simulator's state of an EKS cluster.
func (e *eksEnv) simCluster(name string) sim.ClusterState { return e.eksHarness.simCluster(e.t, name) }

// edit changes the EKS config through the API, as a user would.
func (e *eksEnv) edit(name string, f func(*v1.EKSClusterConfig)) {
	e.t.Helper()
	e.editCluster(name, func(c *v1.Cluster) { f(c.Spec.EKSConfig) })
}

func (e *eksEnv) secret(name, key, secret string) {
	e.t.Helper()
	if err := createSecret(e.ns, name, map[string]string{eks.KeyAccessKeyID: key, eks.KeySecretAccessKey: secret, eks.KeyEndpoint: e.url}); err != nil {
		e.t.Fatal(err)
	}
}

// created is a full config for an EKS cluster drover creates.
func created(name string) *v1.Cluster {
	return &v1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{
			DisplayName: name, Region: "us-west-2", CredentialSecret: "aws",
			KubernetesVersion: ptr.To("1.32"), ServiceRole: ptr.To("arn:aws:iam::123456789012:role/eks"),
			Subnets: []string{"subnet-a", "subnet-b"}, Tags: map[string]string{"team": "platform"},
			PublicAccess: ptr.To(true), PrivateAccess: ptr.To(false), LoggingTypes: []string{"api"},
			NodeGroups: []v1.EKSNodeGroup{{Name: "ng-1", NodeRole: ptr.To("arn:aws:iam::123456789012:role/node"), DesiredSize: ptr.To[int32](2), MinSize: ptr.To[int32](1), MaxSize: ptr.To[int32](3), Labels: map[string]string{"pool": "one"}}},
		}},
	}
}

func (h *eksHarness) faults() *simcore.Faults { return h.sim.Faults() }

func (h *eksHarness) credentialData(_ *testing.T, wrong bool) (map[string]string, string) {
	secret := sim.DefaultSecretAccessKey
	if wrong {
		secret = wrongSecretValue
	}
	return map[string]string{eks.KeyAccessKeyID: sim.DefaultAccessKeyID, eks.KeySecretAccessKey: secret, eks.KeyEndpoint: h.url}, eks.KeySecretAccessKey
}
