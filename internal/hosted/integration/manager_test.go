package integration

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/eks"
	sim "github.com/droverhq/drover/pkg/cloudsim/eks"
)

// signers records the access key that signed each request to the simulator.
type signers struct {
	mu   sync.Mutex
	keys []string
}

func (s *signers) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Authorization: AWS4-HMAC-SHA256 Credential=AKID/date/region/service/aws4_request, ...
		if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
			key, _, _ := strings.Cut(cred, "/")
			s.mu.Lock()
			s.keys = append(s.keys, key)
			s.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

// since returns the keys of the requests after the first n.
func (s *signers) since(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys[n:]...)
}

func (s *signers) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// TestManagerWiring runs the hosted reconciler the way drover server does, through
// SetupWithManager under a real manager (watches, predicates, the credential field index), with
// refresh and poll intervals of an hour so only the watches can cause the passes it waits for:
// a Cluster whose Secret appears later starts syncing, a rotated Secret's new key signs the
// next call, the refresh annotation refreshes at once, and no Secret's data enters the
// manager's cache.
func TestManagerWiring(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	const oldKey, newKey = "AKIADROVERROTATEOLD1", "AKIADROVERROTATENEW1"
	s := sim.New(sim.Options{Delay: -1, Credentials: map[string]string{oldKey: "old-secret", newKey: "new-secret"}})
	var seen signers
	ts := httptest.NewServer(seen.wrap(s))
	t.Cleanup(ts.Close)
	console := &consoleClient{sim.NewClient(ts.URL, "us-west-2", oldKey, "old-secret", func(o *awseks.Options) { o.RetryMaxAttempts = 30 })}
	console.createCluster(t, "late", "1.31")

	var secretData atomic.Bool // a Secret with its data reached the manager's cache
	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme:  mgmt.Client.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			DefaultTransform: func(o any) (any, error) {
				if _, ok := o.(*corev1.Secret); ok {
					secretData.Store(true)
				}
				return o, nil
			},
		},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, // one manager per test
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &hosted.Reconciler{
		Client: mgr.GetClient(), Providers: []hosted.Provider{eks.Provider{RetryMaxAttempts: 3}}, Recorder: newRecorder(),
		RefreshInterval: time.Hour, PollInterval: time.Hour,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	get := func() *v1.Cluster {
		c := &v1.Cluster{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "late"}, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	waitFor := func(what string, ok func(*v1.Cluster) bool) *v1.Cluster {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			c := get()
			if ok(c) {
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s; status: %+v", what, c.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// A Cluster whose Secret does not exist yet.
	c := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{
		DisplayName: "late", Region: "us-west-2", Imported: true, CredentialSecret: "cred",
	}}}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitFor("the missing Secret is reported", func(c *v1.Cluster) bool {
		return cond(c, hosted.CondCredentials).Reason == "SecretNotFound"
	})

	// The Secret appears: the Secret watch starts the sync (the safety-net poll is an hour away).
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cred"}, Data: map[string][]byte{
		eks.KeyAccessKeyID: []byte(oldKey), eks.KeySecretAccessKey: []byte("old-secret"), eks.KeyEndpoint: []byte(ts.URL),
	}}
	if err := mgmt.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	c = waitFor("the cluster syncs once its Secret exists", func(c *v1.Cluster) bool {
		return c.Status.Phase == v1.PhaseActive && condIs(c, hosted.CondCredentials, metav1.ConditionTrue)
	})
	if v := c.Status.EKSStatus.UpstreamSpec.KubernetesVersion; v == nil || *v != "1.31" {
		t.Fatalf("upstream not observed: %+v", c.Status.EKSStatus)
	}

	// Rotate the key, then ask for a refresh: the refresh is immediate and signed with the new key.
	patch := client.MergeFrom(secret.DeepCopy())
	secret.Data[eks.KeyAccessKeyID], secret.Data[eks.KeySecretAccessKey] = []byte(newKey), []byte("new-secret")
	if err := mgmt.Client.Patch(ctx, secret, patch); err != nil {
		t.Fatal(err)
	}
	console.tag(t, c.Status.EKSStatus.ARN, map[string]string{"rotated": "yes"})
	mark := seen.count()
	cp := client.MergeFrom(c.DeepCopy())
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, hosted.RefreshAnnotation, "now")
	if err := mgmt.Client.Patch(ctx, c, cp); err != nil {
		t.Fatal(err)
	}
	waitFor("the annotation's refresh re-reads the provider", func(c *v1.Cluster) bool {
		return c.Status.RefreshRequest == "now" && c.Status.EKSStatus.UpstreamSpec.Tags["rotated"] == "yes"
	})
	drover := seen.since(mark)
	if len(drover) == 0 {
		t.Fatal("no call after the rotation")
	}
	for _, k := range drover {
		if k != newKey {
			t.Fatalf("calls after the rotation were signed with %v, want only the new key %s", drover, newKey)
		}
	}

	if secretData.Load() {
		t.Error("a Secret with its data entered the manager's cache: the controller must watch Secrets by metadata only")
	}
}
