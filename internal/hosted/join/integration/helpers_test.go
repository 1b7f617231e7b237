package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	hostedaks "github.com/droverhq/drover/internal/hosted/aks"
	hostedeks "github.com/droverhq/drover/internal/hosted/eks"
	hostedgke "github.com/droverhq/drover/internal/hosted/gke"
	aksim "github.com/droverhq/drover/pkg/cloudsim/aks"
	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
	gkesim "github.com/droverhq/drover/pkg/cloudsim/gke"
)

const (
	aksTenant  = "11111111-1111-4111-8111-111111111111"
	aksClient  = "22222222-2222-4222-8222-222222222222"
	aksSecret  = "join-test-client-secret"
	aksSub     = "33333333-3333-4333-8333-333333333333"
	gkeProject = "drover-join"
	// drover's and the console's EKS keys: the console creates clusters drover imports.
	droverKey, droverSecret   = "AKIADROVERJOIN00001", "join-test-drover-secret"
	consoleKey, consoleSecret = "AKIADROVERJOIN00002", "join-test-console-secret"
)

// world is one test's provider: its simulator (backed by the downstream), the credential
// Secret "cred" in ns, and a hook that sees the first delete request the simulator gets.
type world struct {
	provider string
	ns       string
	eks      *eksim.Server
	eksURL   string
	aks      *aksim.Server
	gke      *gkesim.Server

	mu          sync.Mutex
	onFirstDel  func()
	deleteSeen  bool
	firstDelete string // what the hook saw at the first delete request
}

// deleteHook runs f once, at the first DELETE request the simulator receives (before handling).
func (w *world) deleteHook(f func() string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onFirstDel = func() {
		w.mu.Lock()
		if w.deleteSeen {
			w.mu.Unlock()
			return
		}
		w.deleteSeen = true
		w.mu.Unlock()
		got := f()
		w.mu.Lock()
		w.firstDelete = got
		w.mu.Unlock()
	}
}

func (w *world) sawDelete(r *http.Request) {
	if r.Method != http.MethodDelete {
		return
	}
	w.mu.Lock()
	f := w.onFirstDel
	w.mu.Unlock()
	if f != nil {
		f()
	}
}

func (w *world) firstDeleteSaw() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstDelete, w.deleteSeen
}

func newWorld(t testing.TB, provider string) *world {
	t.Helper()
	w := &world{provider: provider, ns: mgmt.Namespace(t)}
	var data map[string]string
	switch provider {
	case "eks":
		w.eks = eksim.New(eksim.Options{Credentials: map[string]string{droverKey: droverSecret, consoleKey: consoleSecret}, Delay: simDelay, Backend: backend})
		ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { w.sawDelete(r); w.eks.ServeHTTP(rw, r) }))
		t.Cleanup(ts.Close)
		w.eksURL = ts.URL
		register(t, w.eks)
		data = map[string]string{hostedeks.KeyAccessKeyID: droverKey, hostedeks.KeySecretAccessKey: droverSecret, hostedeks.KeyEndpoint: ts.URL}
	case "aks":
		w.aks = aksim.NewTestServer(t, aksim.Options{
			Credentials: []aksim.Credential{{TenantID: aksTenant, ClientID: aksClient, ClientSecret: aksSecret, Subscriptions: []string{aksSub}}},
			Delay:       simDelay, Backend: backend,
		})
		w.aks.SetRequestHook(func(_ string, r *http.Request) { w.sawDelete(r) })
		register(t, w.aks)
		data = map[string]string{
			hostedaks.KeyTenantID: aksTenant, hostedaks.KeySubscriptionID: aksSub, hostedaks.KeyClientID: aksClient, hostedaks.KeyClientSecret: aksSecret,
			hostedaks.KeyAuthorityHost: w.aks.URL(), hostedaks.KeyResourceManagerEndpoint: w.aks.URL(), hostedaks.KeyCAPEM: string(w.aks.CAPEM()),
		}
	case "gke":
		w.gke = gkesim.New(gkesim.Options{Delay: simDelay, Backend: backend})
		ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { w.sawDelete(r); w.gke.ServeHTTP(rw, r) }))
		t.Cleanup(ts.Close)
		w.gke.SetBaseURL(ts.URL)
		register(t, w.gke)
		key, err := w.gke.NewServiceAccountKey("drover@"+gkeProject+".iam.gserviceaccount.com", gkeProject)
		if err != nil {
			t.Fatal(err)
		}
		data = map[string]string{hostedgke.KeyServiceAccountJSON: string(key), hostedgke.KeyEndpoint: ts.URL}
	}
	if err := mgmt.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "cred"}, StringData: data}); err != nil {
		t.Fatal(err)
	}
	return w
}

// hostedCluster is a cluster drover creates with provider's simulator, labelled team=platform.
func (w *world) hostedCluster(name string) *v1.Cluster {
	c := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name, Labels: map[string]string{"team": "platform"}}}
	switch w.provider {
	case "eks":
		c.Spec.EKSConfig = &v1.EKSClusterConfig{
			DisplayName: name, Region: "us-west-2", CredentialSecret: "cred",
			KubernetesVersion: ptr.To("1.32"), ServiceRole: ptr.To("arn:aws:iam::123456789012:role/eks"),
			Subnets: []string{"subnet-a", "subnet-b"}, PublicAccess: ptr.To(true), PrivateAccess: ptr.To(false),
			NodeGroups: []v1.EKSNodeGroup{{Name: "ng-1", NodeRole: ptr.To("arn:aws:iam::123456789012:role/node"), DesiredSize: ptr.To[int32](1), MinSize: ptr.To[int32](1), MaxSize: ptr.To[int32](2)}},
		}
	case "aks":
		c.Spec.AKSConfig = &v1.AKSClusterConfig{
			ClusterName: name, ResourceGroup: "rg-join", ResourceLocation: "westeurope", CredentialSecret: "cred",
			KubernetesVersion: ptr.To("1.32"), DNSPrefix: ptr.To(name),
			NodePools: []v1.AKSNodePool{{Name: "pool1", Mode: ptr.To(hostedaks.ModeSystem), Count: ptr.To[int32](1)}},
		}
	case "gke":
		c.Spec.GKEConfig = &v1.GKEClusterConfig{
			ClusterName: name, ProjectID: gkeProject, Region: "us-central1", CredentialSecret: "cred",
			KubernetesVersion: ptr.To("1.33"),
			NodePools: []v1.GKENodePool{{Name: "pool-1", InitialNodeCount: ptr.To[int64](1),
				Autoscaling: &v1.GKENodePoolAutoscaling{Enabled: ptr.To(false), MinNodeCount: ptr.To[int64](1), MaxNodeCount: ptr.To[int64](2)}}},
		}
	}
	return c
}

// principal is drover's IAM principal in the EKS world.
func (w *world) principal() string { return w.eks.Principal(droverKey) }

// region is the region label drover gives the world's clusters.
func (w *world) region() string {
	return map[string]string{"eks": "us-west-2", "aks": "westeurope", "gke": "us-central1"}[w.provider]
}

// cloudClusterExists reports whether the simulator still has the cluster (deleting or not).
func (w *world) cloudClusterExists(name string) bool {
	var ok bool
	switch w.provider {
	case "eks":
		_, ok = w.eks.Cluster("us-west-2", name)
	case "aks":
		_, ok = w.aks.ManagedCluster(aksSub, "rg-join", name)
	default:
		_, ok = w.gke.Cluster(gkeProject, "us-central1", name)
	}
	return ok
}

func suffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func getHosted(t *testing.T, ns, name string) *v1.Cluster {
	t.Helper()
	c := &v1.Cluster{}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		t.Fatalf("get hosted Cluster %s/%s: %v", ns, name, err)
	}
	return c
}

func fleetCond(c *v1.Cluster, typ string) *metav1.Condition {
	if c.Status.Fleet == nil {
		return nil
	}
	return meta.FindStatusCondition(c.Status.Fleet.Conditions, typ)
}

// waitJoinedReason waits for the hosted Cluster's Joined condition to have reason.
func waitJoinedReason(t *testing.T, ns, name, reason string, timeout time.Duration) *v1.Cluster {
	t.Helper()
	var c *v1.Cluster
	eventually(t, timeout, func() error {
		c = &v1.Cluster{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		if j := fleetCond(c, v1.ConditionJoined); j == nil || j.Reason != reason {
			return fmt.Errorf("Joined %+v (phase %s, conditions %+v), want reason %s", j, c.Status.Phase, c.Status.Conditions, reason)
		}
		return nil
	})
	return c
}

// kubeconfigSecret returns the kubeconfig Secret's data and the token in it.
func kubeconfigSecret(t *testing.T, ns, name string) (*corev1.Secret, string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name + "-kubeconfig"}, s); err != nil {
		t.Fatalf("kubeconfig Secret: %v", err)
	}
	cfg, err := clientcmd.Load(s.Data[fleetv1.KeyKubeconfig])
	if err != nil {
		t.Fatalf("kubeconfig Secret does not hold a kubeconfig: %v", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.AuthInfos[ctx.AuthInfo] == nil || cfg.AuthInfos[ctx.AuthInfo].Token == "" {
		t.Fatal("kubeconfig Secret has no token in its current context")
	}
	return s, cfg.AuthInfos[ctx.AuthInfo].Token
}

// whoAmI authenticates with the kubeconfig on the downstream through its token webhook.
func whoAmI(t *testing.T, kubeconfig []byte) (string, error) {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

// agentDeployment reports whether the agent's Deployment exists downstream in ns.
func agentDeployment(ctx context.Context, ns string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: manifests.Name}, d)
	return d, err
}

func isGone(err error) bool { return apierrors.IsNotFound(err) }

// noTokenAnywhere fails if token shows in the hosted Cluster's status or in an Event.
func noTokenAnywhere(t *testing.T, c *v1.Cluster, token string) {
	t.Helper()
	b, _ := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&c.Status)
	if strings.Contains(fmt.Sprint(b), token) {
		t.Error("the token is in the hosted Cluster's status")
	}
	if strings.Contains(events.String(), token) {
		t.Error("the token is in an Event")
	}
}
