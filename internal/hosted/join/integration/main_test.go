// Package integration tests the join of hosted clusters to the fleet end to end: drover's
// controllers (hosted sync, join, registration, bundles) run against a management API server;
// the EKS, AKS and GKE simulators serve clusters whose endpoint is a second, real
// kube-apiserver (the downstream) that authenticates the providers' tokens through its token
// webhook, answered by the simulators; the agent runs in-process against the downstream.
package integration

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/hosted/gke"
	"github.com/droverhq/drover/internal/hosted/join"
	"github.com/droverhq/drover/internal/registration"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
	"github.com/droverhq/drover/test/envtest"
)

var (
	mgmt, downstream *envtest.Cluster
	// cached reads the controllers' manager's cache (a benchmark polling it costs the API
	// server nothing).
	cached client.Reader
	// backend is the downstream as the simulators' clusters' API server.
	backend = &simcore.Backend{Name: "downstream"}
	// reviewers are the simulators the downstream's token webhook asks; tests register theirs.
	reviewers = &simcore.Reviewers{}
	// joinClock is the join's clock: tests move it to make the kubeconfig token due.
	joinClock = clocktesting.NewFakeClock(time.Now())
	// events records the join's and the hosted reconciler's Events, to check no token is in one.
	events = &recorder{}
)

// Test settings: the simulators finish operations in simDelay; drover re-reads clusters with
// work in progress every pollInterval and retries a failed join every retryInterval.
const (
	simDelay      = 300 * time.Millisecond
	pollInterval  = 300 * time.Millisecond
	retryInterval = time.Second
)

func register(t testing.TB, r simcore.TokenReviewer) {
	t.Cleanup(reviewers.Add(r))
}

// logs holds the tests' log lines at every verbosity drover emits, for the secret scan; benchmarks log
// nothing.
var logs = &envtest.SyncBuffer{}

func TestMain(m *testing.M) {
	if envtest.Benchmarking() {
		ctrl.SetLogger(logr.Discard())
		logs = nil
	} else {
		ctrl.SetLogger(envtest.SuiteLogger(logs))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	webhook := httptest.NewServer(simcore.TokenReviewHandler(reviewers))
	defer webhook.Close()
	type result struct {
		c   *envtest.Cluster
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The default cache (2 min), as on a provider's API server: the agent's deployment
		// presents one token many times. (internal/hosted/access tests expiry without it.)
		c, err := envtest.Start("downstream", envtest.Options{
			TokenWebhook: &envtest.TokenWebhook{URL: webhook.URL + simcore.TokenReviewPath(backend.Name)}})
		ch <- result{c, err}
	}()
	var err error
	mgmt, err = envtest.Start("management", envtest.Options{InstallCRDs: true})
	r := <-ch
	downstream = r.c
	defer func() {
		if mgmt != nil {
			_ = mgmt.Stop()
		}
		if downstream != nil {
			_ = downstream.Stop()
		}
	}()
	if err != nil || r.err != nil {
		fmt.Fprintln(os.Stderr, err, r.err)
		return 1
	}
	backend.Endpoint = downstream.Config.Host
	if !strings.Contains(backend.Endpoint, "://") {
		backend.Endpoint = "https://" + backend.Endpoint
	}
	backend.CAPEM = downstream.Config.CAData

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := writeRegistrationConfig(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var secrets *envtest.SecretScan
	if logs != nil {
		if secrets, err = envtest.StartSecretScan(ctx, mgmt, downstream); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	done, err := startControllers(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	// Secret values (cloud keys, the hosted clusters' kubeconfig tokens, the agents' tokens on
	// both sides) never reach a log line, an Event or a status.
	if code == 0 && secrets != nil && !testing.Short() {
		if err := secrets.Check(ctx, 3, map[string]string{"the logs": logs.String(), "the Events recorded": events.String()}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	cancel()
	<-done
	return code
}

// writeRegistrationConfig publishes the management API server to agents.
func writeRegistrationConfig(ctx context.Context) error {
	if err := mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: config.DefaultNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: config.DefaultNamespace, Name: config.DefaultName},
		Data: map[string]string{config.KeyAPIServerURL: mgmt.Config.Host, config.KeyAPIServerCA: string(mgmt.Config.CAData)}}
	if err := mgmt.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// startControllers runs drover's controllers as drover server wires them: hosted sync and join
// sharing their providers and limits, registration and bundles.
func startControllers(ctx context.Context) (<-chan struct{}, error) {
	cfg := rest.CopyConfig(mgmt.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &writeCounter{next: rt} }
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: server.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return nil, err
	}
	cached = mgr.GetCache()
	providers := []hosted.Provider{eks.Provider{RetryMaxAttempts: 3}, aks.Provider{}, gke.Provider{OperationsMaxAge: -1}}
	limits := &hosted.Limits{}
	if err := (&hosted.Reconciler{
		Client: mgr.GetClient(), Providers: providers, Recorder: events, Limits: limits,
		PollInterval: pollInterval, RefreshInterval: time.Hour,
	}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&join.Reconciler{
		Client: countingClient{Client: mgr.GetClient()}, Providers: providers, Recorder: events, Limits: limits, Clock: joinClock,
		DefaultJoin: true, RetryInterval: retryInterval, AgentRemovalTimeout: time.Minute,
	}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := registration.Setup(ctx, mgr, mgr.GetClient(), registration.Options{}); err != nil {
		return nil, err
	}
	if err := bundle.Setup(mgr, bundle.Options{}); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "controllers stopped:", err)
		}
	}()
	return done, nil
}

// startAgent runs the agent in a goroutine, with the downstream's admin config standing in for
// the in-cluster config of the Deployment drover deployed (no kubelet runs it here). As its pod
// would, it stops once the Deployment is deleted, and a Pod object stands for it until it has
// stopped: drover, removing an agent, waits for its pods to be gone before it deletes what the
// agent could otherwise still act on (the BundleDeployments, whose resources it would prune).
func startAgent(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: manifests.Name + "-",
		Labels: map[string]string{"app.kubernetes.io/name": manifests.Name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "drover"}}, AutomountServiceAccountToken: ptr.To(false)}}
	if err := downstream.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create the agent's pod: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = agent.Run(ctx, agent.Options{Config: downstream.Config, Namespace: ns, HeartbeatInterval: time.Second,
			RetryMin: time.Second, RetryMax: 4 * time.Second, Identity: "test"})
	}()
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if _, err := agentDeployment(ctx, ns); apierrors.IsNotFound(err) {
					cancel() // the "kubelet" stops the pod
					<-done
					if err := downstream.Client.Delete(context.Background(), pod); err != nil && !apierrors.IsNotFound(err) {
						t.Errorf("delete the agent's pod: %v", err)
					}
					return
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

var eventually = envtest.Eventually

// recorder keeps the Events drover sends.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(regarding k8sruntime.Object, _ k8sruntime.Object, eventtype, reason, action, note string, args ...any) {
	name := ""
	if o, ok := regarding.(client.Object); ok {
		name = o.GetName()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s %s", name, eventtype, reason, fmt.Sprintf(note, args...)))
}

// find returns the Events with reason about the object called name.
func (r *recorder) find(reason, name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if strings.HasPrefix(e, name+" ") && strings.Contains(e, " "+reason+" ") {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.events, "\n")
}

// mgmtWrites counts the controllers' write requests to the management API server; joinWrites
// the join's alone.
var mgmtWrites, joinWrites atomic.Int64

type writeCounter struct{ next http.RoundTripper }

// writesByKind counts the management writes by method and resource (the path without
// namespace and name) and the drover function that made them, so a benchmark can say where
// the writes per cluster go.
var writesByKind = &kindCounter{}

// readsByKind counts the GETs that are not watches (reads the cache does not serve) the same way.
var readsByKind = &kindCounter{}

type kindCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func callerFrame() string {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		// The first drover function that is not a shared write helper (kube.Apply, PatchStatus).
		if strings.Contains(f.Function, "droverhq/drover/internal/") && !strings.Contains(f.Function, "integration") &&
			!strings.Contains(f.Function, "/internal/kube.") {
			return f.Function[strings.LastIndex(f.Function, "/")+1:] + fmt.Sprint(":", f.Line)
		}
		if !more {
			return "?"
		}
	}
}

func (k *kindCounter) record(method, path string) {
	path, caller, _ := strings.Cut(path, " ")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch { // drop api/v1 or apis/GROUP/VERSION
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:] // a namespaced resource
	}
	kind := "?"
	switch len(parts) {
	case 1, 2:
		kind = parts[0]
	case 3:
		kind = parts[0] + "/" + parts[2]
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n = map[string]int{}
	}
	k.n[method+" "+kind+" "+caller]++
}

func (k *kindCounter) snapshot() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.n)
}

func (w *writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		mgmtWrites.Add(1)
		writesByKind.record(r.Method, r.URL.Path+" "+callerFrame())
	case http.MethodGet:
		if r.URL.Query().Get("watch") == "" {
			readsByKind.record(r.Method, r.URL.Path+" "+callerFrame())
		}
	}
	return w.next.RoundTrip(r)
}

// countingClient counts the writes of the client it wraps in joinWrites.
type countingClient struct{ client.Client }

func (c countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	joinWrites.Add(1)
	return c.Client.Create(ctx, obj, opts...)
}

func (c countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	joinWrites.Add(1)
	return c.Client.Update(ctx, obj, opts...)
}

func (c countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	joinWrites.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c countingClient) Apply(ctx context.Context, obj k8sruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
	joinWrites.Add(1)
	return c.Client.Apply(ctx, obj, opts...)
}

func (c countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	joinWrites.Add(1)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c countingClient) Status() client.SubResourceWriter { return countingStatus{c.Client.Status()} }

type countingStatus struct{ client.SubResourceWriter }

func (c countingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	joinWrites.Add(1)
	return c.SubResourceWriter.Update(ctx, obj, opts...)
}

func (c countingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	joinWrites.Add(1)
	return c.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
