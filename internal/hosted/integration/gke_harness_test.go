package integration

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/auth"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/googleapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/gke"
	gkesim "github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

func init() { harnesses["gke"] = func() harness { return &gkeHarness{} } }

const (
	gkeProject = "drover-test"
	gkeRegion  = "us-central1"
)

// gkeHarness drives the GKE simulator; its console is an unmodified container/v1 client with
// its own service account.
type gkeHarness struct {
	sim      *gkesim.TestServer
	simClock *simcore.ManualClock
	console  *container.Service
	key      []byte // drover's key, in the Secret "cred"
	// statusLag keeps a cluster RUNNING for a while after an update starts (simulator option);
	// opsMaxAge is the provider's OperationsMaxAge.
	statusLag, opsMaxAge time.Duration
}

// gkeEnv is an env with the GKE simulator, for the GKE-specific tests.
type gkeEnv struct {
	*env
	*gkeHarness
}

func newGKEEnv(t *testing.T) *gkeEnv { return newGKEEnvWith(t, &gkeHarness{}) }

func newGKEEnvWith(t *testing.T, h *gkeHarness) *gkeEnv {
	return &gkeEnv{env: newEnv(t, h), gkeHarness: h}
}

func (h *gkeHarness) name() string { return "gke" }
func (h *gkeHarness) provider() hosted.Provider {
	return gke.Provider{OperationsMaxAge: h.opsMaxAge}
}

func (h *gkeHarness) setup(t *testing.T, e *env) {
	h.sim = gkesim.NewTestServer(t, gkesim.Options{Clock: e.simTime, Delay: simDelay, StatusLag: h.statusLag})
	h.simClock = e.simTime
	var err error
	if h.key, err = h.sim.NewServiceAccountKey("drover@drover-test.iam.gserviceaccount.com", gkeProject); err != nil {
		t.Fatal(err)
	}
	consoleKey, err := h.sim.NewServiceAccountKey("console@drover-test.iam.gserviceaccount.com", gkeProject)
	if err != nil {
		t.Fatal(err)
	}
	if h.console, err = container.NewService(t.Context(), h.sim.ClientOptions(consoleKey)...); err != nil {
		t.Fatal(err)
	}
	if err := createSecret(e.ns, "cred", map[string]string{gke.KeyServiceAccountJSON: string(h.key), gke.KeyEndpoint: h.sim.URL}); err != nil {
		t.Fatal(err)
	}
}

// created is a GKE cluster drover creates: labels {"team": "platform"}, one pool "pool-1" of
// size 2 (autoscaling off, bounds 1..5).
func (h *gkeHarness) created(name string) *v1.Cluster { return gkeCreated(name) }

func gkeCreated(name string) *v1.Cluster {
	return &v1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.ClusterSpec{GKEConfig: &v1.GKEClusterConfig{
			ClusterName: name, ProjectID: gkeProject, Region: gkeRegion, CredentialSecret: "cred",
			KubernetesVersion: ptr.To("1.33"), Labels: map[string]string{"team": "platform"},
			NodePools: []v1.GKENodePool{{
				Name: "pool-1", InitialNodeCount: ptr.To[int64](2),
				Autoscaling: &v1.GKENodePoolAutoscaling{Enabled: ptr.To(false), MinNodeCount: ptr.To[int64](1), MaxNodeCount: ptr.To[int64](5)},
			}},
		}},
	}
}

func gkeClusterPath(name string) string {
	return "projects/" + gkeProject + "/locations/" + gkeRegion + "/clusters/" + name
}

// consoleCall runs one console call, retrying throttling as a patient user would (the SDK does
// not retry container/v1 calls). A running operation is waited out: the simulator's clock is
// moved past it, as a console user waits for the spinner.
func (h *gkeHarness) consoleCall(t *testing.T, cluster string, call func() error) {
	t.Helper()
	for range 200 {
		err := call()
		switch {
		case err == nil:
			return
		case isThrottled(err):
			continue
		case isBusy(err):
			h.simClock.Advance(simDelay)
			continue
		}
		t.Fatalf("console call on %s: %v", cluster, err)
	}
	t.Fatalf("console call on %s kept failing", cluster)
}

func isThrottled(err error) bool {
	var ge *googleapi.Error
	var ae *auth.Error
	return (errors.As(err, &ge) && ge.Code == http.StatusTooManyRequests) ||
		(errors.As(err, &ae) && ae.Response != nil && ae.Response.StatusCode == http.StatusTooManyRequests)
}

func isBusy(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusBadRequest && len(ge.Errors) > 0 && ge.Errors[0].Reason == "failedPrecondition"
}

func (h *gkeHarness) consoleTag(t *testing.T, cluster, key, value string) {
	h.consoleCall(t, cluster, func() error {
		cl, err := h.console.Projects.Locations.Clusters.Get(gkeClusterPath(cluster)).Context(t.Context()).Do()
		if err != nil {
			return err
		}
		labels := map[string]string{}
		for k, v := range cl.ResourceLabels {
			labels[k] = v
		}
		labels[key] = value
		_, err = h.console.Projects.Locations.Clusters.SetResourceLabels(gkeClusterPath(cluster),
			&container.SetLabelsRequest{ResourceLabels: labels, LabelFingerprint: cl.LabelFingerprint}).Context(t.Context()).Do()
		return err
	})
}

func (h *gkeHarness) consoleScale(t *testing.T, cluster string, size int32) bool {
	st := h.simCluster(t, cluster)
	np := st.Cluster.NodePools[0]
	if st.Operation != "" || np.Status != "RUNNING" || np.InitialNodeCount == int64(size) {
		return false
	}
	h.consoleCall(t, cluster, func() error {
		_, err := h.console.Projects.Locations.Clusters.NodePools.SetSize(gkeClusterPath(cluster)+"/nodePools/"+np.Name,
			&container.SetNodePoolSizeRequest{NodeCount: int64(size)}).Context(t.Context()).Do()
		return err
	})
	return true
}

func (h *gkeHarness) tags(t *testing.T, cluster string) map[string]string {
	return h.simCluster(t, cluster).Cluster.ResourceLabels
}

func (h *gkeHarness) size(t *testing.T, cluster string) int32 {
	return int32(h.simCluster(t, cluster).Cluster.NodePools[0].InitialNodeCount)
}

func (h *gkeHarness) cfgTags(c *v1.Cluster) map[string]string { return c.Spec.GKEConfig.Labels }
func (h *gkeHarness) setCfgTag(c *v1.Cluster, k, v string)    { c.Spec.GKEConfig.Labels[k] = v }
func (h *gkeHarness) cfgSize(c *v1.Cluster) int32 {
	return int32(*c.Spec.GKEConfig.NodePools[0].InitialNodeCount)
}
func (h *gkeHarness) setCfgSize(c *v1.Cluster, n int32) {
	c.Spec.GKEConfig.NodePools[0].InitialNodeCount = ptr.To(int64(n))
}

func (h *gkeHarness) simCluster(t *testing.T, name string) gkesim.ClusterState {
	t.Helper()
	st, ok := h.sim.Cluster(gkeProject, gkeRegion, name)
	if !ok {
		t.Fatalf("GKE cluster %s does not exist in the simulator", name)
	}
	return st
}

func (h *gkeHarness) faults() *simcore.Faults { return h.sim.Faults() }

// edit changes the GKE config through the API, as a user would.
func (e *gkeEnv) edit(name string, f func(*v1.GKEClusterConfig)) {
	e.t.Helper()
	e.editCluster(name, func(c *v1.Cluster) { f(c.Spec.GKEConfig) })
}

// gkeReads are the container/v1 methods (and the token endpoint) that change nothing.
var gkeReads = map[string]bool{
	"clusters.get": true, "clusters.list": true, "nodePools.get": true, "nodePools.list": true,
	"operations.get": true, "operations.list": true, "getServerConfig": true, "token": true, "unknown": true,
}

// mutations returns the mutating calls counted since the last Reset, by method.
func (h *gkeHarness) mutations() map[string]int64 {
	out := map[string]int64{}
	for op, n := range h.sim.Counters().Snapshot() {
		if !gkeReads[op] && n > 0 {
			out[op] = n
		}
	}
	return out
}

// credentialData: the wrong key file is drover's, its private key replaced by another one (a
// key pasted from elsewhere): its signature does not verify.
func (h *gkeHarness) credentialData(t *testing.T, wrong bool) (map[string]string, string) {
	key := h.key
	if wrong {
		var file map[string]any
		if err := json.Unmarshal(h.key, &file); err != nil {
			t.Fatal(err)
		}
		other, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(other)
		if err != nil {
			t.Fatal(err)
		}
		file["private_key"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		if key, err = json.Marshal(file); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{gke.KeyServiceAccountJSON: string(key), gke.KeyEndpoint: h.sim.URL}, gke.KeyServiceAccountJSON
}
