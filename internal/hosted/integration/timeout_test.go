package integration

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/hosted/gke"
	aksim "github.com/droverhq/drover/pkg/cloudsim/aks"
	sim "github.com/droverhq/drover/pkg/cloudsim/eks"
	gkesim "github.com/droverhq/drover/pkg/cloudsim/gke"
)

// blackHole accepts connections and never answers: a proxy whose upstream hangs.
type blackHole struct {
	ln       net.Listener
	accepted atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
}

func newBlackHole(t *testing.T) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			b.accepted.Add(1)
		}
	}()
	t.Cleanup(b.close)
	return b
}

func (b *blackHole) addr() string { return b.ln.Addr().String() }

// close stops accepting and drops every connection (so calls still waiting fail).
func (b *blackHole) close() {
	_ = b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
}

// waitUntil polls ok until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, state := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s; %s", timeout, what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUnresponsiveProvider: clusters of every provider whose endpoint accepts connections and
// never answers hold none of the manager's two workers for longer than the pass timeout: a
// cluster on a healthy provider, created once both workers are waiting on the unresponsive
// ones, still syncs, and every stuck cluster reports Synced=False/ProviderTimeout (and, to be
// created, Ready=False/Creating).
func TestUnresponsiveProvider(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	hole := newBlackHole(t)

	// The healthy provider: an EKS simulator holding the cluster to import.
	_, ts := sim.NewTestServer(t, sim.Options{Delay: -1})
	console := &consoleClient{sim.NewClient(ts.URL, "us-west-2", sim.DefaultAccessKeyID, sim.DefaultSecretAccessKey, func(o *awseks.Options) { o.RetryMaxAttempts = 30 })}
	console.createCluster(t, "healthy", "1.31")
	if err := createSecret(ns, "cred", map[string]string{eks.KeyAccessKeyID: sim.DefaultAccessKeyID, eks.KeySecretAccessKey: sim.DefaultSecretAccessKey, eks.KeyEndpoint: ts.URL}); err != nil {
		t.Fatal(err)
	}

	// The unresponsive ones. EKS: every call; AKS: the sign-in (token) call; GKE: the API
	// call after a token from its simulator.
	if err := createSecret(ns, "stuck-eks", map[string]string{eks.KeyAccessKeyID: sim.DefaultAccessKeyID, eks.KeySecretAccessKey: sim.DefaultSecretAccessKey, eks.KeyEndpoint: "http://" + hole.addr()}); err != nil {
		t.Fatal(err)
	}
	az := aksim.NewTestServer(t, aksim.Options{Credentials: []aksim.Credential{{TenantID: aksTenant, ClientID: aksClient, ClientSecret: aksSecret, Subscriptions: []string{aksSub}}}})
	if err := createSecret(ns, "stuck-aks", map[string]string{
		aks.KeyTenantID: aksTenant, aks.KeySubscriptionID: aksSub, aks.KeyClientID: aksClient, aks.KeyClientSecret: aksSecret,
		aks.KeyAuthorityHost: "https://" + hole.addr(), aks.KeyResourceManagerEndpoint: "https://" + hole.addr(), aks.KeyCAPEM: string(az.CAPEM()),
	}); err != nil {
		t.Fatal(err)
	}
	gs := gkesim.NewTestServer(t, gkesim.Options{})
	key, err := gs.NewServiceAccountKey("drover@drover-test.iam.gserviceaccount.com", gkeProject)
	if err != nil {
		t.Fatal(err)
	}
	if err := createSecret(ns, "stuck-gke", map[string]string{gke.KeyServiceAccountJSON: string(key), gke.KeyEndpoint: "http://" + hole.addr()}); err != nil {
		t.Fatal(err)
	}
	importEKS := func(name, secret string) *v1.Cluster {
		return &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{
			DisplayName: name, Region: "us-west-2", Imported: true, CredentialSecret: secret,
		}}}
	}
	stuckAKS := aksCreated("stuck-aks")
	stuckAKS.Spec.AKSConfig.CredentialSecret = "stuck-aks"
	stuckGKE := gkeCreated("stuck-gke")
	stuckGKE.Spec.GKEConfig.CredentialSecret = "stuck-gke"
	stuck := []*v1.Cluster{importEKS("stuck-eks-1", "stuck-eks"), importEKS("stuck-eks-2", "stuck-eks"), stuckAKS, stuckGKE}
	for _, c := range stuck {
		c.Namespace = ns
		if err := mgmt.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}

	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme:     mgmt.Client.Scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, // one manager per test
	})
	if err != nil {
		t.Fatal(err)
	}
	const passTimeout = time.Second
	r := &hosted.Reconciler{
		Client: mgr.GetClient(),
		Providers: []hosted.Provider{
			eks.Provider{RetryMaxAttempts: 3},
			aks.Provider{Retry: policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond}},
			gke.Provider{},
		},
		Recorder: newRecorder(), Workers: 2, PassTimeout: passTimeout,
		RefreshInterval: time.Hour, PollInterval: time.Hour,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		hole.close() // calls still waiting fail, so the workers can stop
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// Both workers wait on the black hole.
	waitUntil(t, 30*time.Second, "both workers call the unresponsive endpoint", func() (bool, string) {
		n := hole.accepted.Load()
		return n >= 2, fmt.Sprintf("connections accepted: %d", n)
	})
	if err := mgmt.Client.Create(ctx, importEKS("healthy", "cred")); err != nil {
		t.Fatal(err)
	}
	get := func(name string) *v1.Cluster {
		c := &v1.Cluster{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	waitUntil(t, 20*time.Second, "the cluster on the healthy provider syncs", func() (bool, string) {
		c := get("healthy")
		return c.Status.Phase == v1.PhaseActive && condIs(c, hosted.CondSynced, metav1.ConditionTrue), "status: " + statusLine(c)
	})
	for _, s := range stuck {
		waitUntil(t, 20*time.Second, s.Name+" reports the timeout", func() (bool, string) {
			c := get(s.Name)
			sc := cond(c, hosted.CondSynced)
			return sc.Status == metav1.ConditionFalse && sc.Reason == hosted.ReasonProviderTimeout, "status: " + statusLine(c)
		})
		c := get(s.Name)
		if msg := cond(c, hosted.CondSynced).Message; !strings.Contains(msg, "did not answer within 1s") || strings.Contains(msg, "\n") {
			t.Errorf("%s: Synced message %q; want one line saying the provider did not answer within 1s", s.Name, msg)
		}
		if c.Spec.EKSConfig == nil { // the AKS and GKE clusters are to be created
			if rc := cond(c, hosted.CondReady); rc.Status != metav1.ConditionFalse || rc.Reason != v1.ReasonCreating {
				t.Errorf("%s: Ready %+v; want False/Creating for a cluster to create", s.Name, rc)
			}
		}
	}
}

// statusLine is a Cluster's phase and conditions, for failure messages.
func statusLine(c *v1.Cluster) string {
	parts := []string{"phase " + string(c.Status.Phase)}
	for _, cd := range c.Status.Conditions {
		parts = append(parts, cd.Type+"="+string(cd.Status)+"/"+cd.Reason+": "+cd.Message)
	}
	return strings.Join(parts, "; ")
}
