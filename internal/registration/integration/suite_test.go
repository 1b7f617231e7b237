package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
	"github.com/droverhq/drover/internal/registration"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/test/envtest"
)

var mgmt, downstream *envtest.Cluster

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	if os.Getenv(benchControllerEnv) != "" {
		os.Exit(runBenchController())
	}
	os.Exit(run(m))
}

// logs holds the tests' log lines at every verbosity drover emits, for the secret scan;
// benchmarks log nothing (nil).
var logs = &envtest.SyncBuffer{}

func run(m *testing.M) int {
	if envtest.Benchmarking() {
		logs = nil
	} else {
		ctrl.SetLogger(envtest.SuiteLogger(logs))
	}
	type result struct {
		c   *envtest.Cluster
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := envtest.Start("downstream", envtest.Options{})
		ch <- result{c, err}
	}()
	var err error
	mgmt, err = startManagement("management")
	r := <-ch
	downstream = r.c
	defer func() { _ = mgmt.Stop(); _ = downstream.Stop() }()
	if err != nil || r.err != nil {
		fmt.Fprintln(os.Stderr, err, r.err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := writeConfig(ctx, mgmt.Client, mgmt.Config.Host, mgmt.Config.CAData); err != nil {
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
	done, err := startControllers(ctx, mgmt.Config, true, "0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	// Import, request and renewal tokens, registration answers and the agents' credentials on
	// both sides never reach a log line, an Event or a status.
	if code == 0 && secrets != nil && !testing.Short() {
		if err := secrets.Check(ctx, 5, map[string]string{"the logs": logs.String()}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	cancel()
	<-done
	return code
}

// startManagement starts a management API server with the fleet.drover.io CRDs only, so that
// this suite does not depend on other API groups' CRDs, and drover's admission policy.
func startManagement(name string) (*envtest.Cluster, error) {
	c, err := envtest.Start(name, envtest.Options{})
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "config", "crd", "bases", "fleet.drover.io_*.yaml"))
	if err == nil && len(files) == 0 {
		err = errors.New("no fleet.drover.io CRDs: run make generate")
	}
	if err == nil {
		_, err = crenvtest.InstallCRDs(c.Config, crenvtest.CRDInstallOptions{Paths: files, ErrorIfPathMissing: true})
	}
	if err == nil {
		err = c.InstallAdmissionPolicies(context.Background())
	}
	if err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("install fleet CRDs into %s: %w", name, err)
	}
	return c, nil
}

// writeConfig writes drover's registration settings.
func writeConfig(ctx context.Context, c client.Client, url string, ca []byte) error {
	for _, ns := range []string{config.DefaultNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: config.DefaultNamespace, Name: config.DefaultName},
		Data: map[string]string{config.KeyAPIServerURL: url, config.KeyAPIServerCA: string(ca)}}
	if err := c.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
		return c.Update(ctx, cm)
	} else if err != nil {
		return err
	}
	return nil
}

// startControllers runs drover's registration controllers against cfg until ctx ends; metrics
// is the metrics bind address ("0": none).
// testReaderWindow is the suite's reader window, short so that TestAnswerExpiry sees a
// window's reader Roles swept.
const testReaderWindow = 2 * time.Second

// testRequestTokenTTL is the suite's request token lifetime as the AgentCredential condition
// sees it (see startControllers).
const testRequestTokenTTL = 8 * time.Second

// testAgentDisconnectAfter is the suite's --agent-disconnect-after: 4 of the test agents'
// 1 s heartbeats (one more than the default ratio, as the suite runs on loaded machines).
const testAgentDisconnectAfter = 4 * time.Second

func startControllers(ctx context.Context, cfg *rest.Config, local bool, metrics string) (<-chan struct{}, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: server.Scheme(), Metrics: metricsserver.Options{BindAddress: metrics}})
	if err != nil {
		return nil, err
	}
	opts := registration.Options{}
	opts.RegistrationWorkers, _ = strconv.Atoi(os.Getenv("DROVER_REGISTRATION_WORKERS"))
	if local { // the test suite's controllers (the benchmark's run with the defaults)
		opts.LocalConfig = cfg
		opts.ReaderWindow = testReaderWindow
		// Agents in tests check in every second: one away for longer than this shows an
		// expired credential (real tokens live at least 10 minutes, the TokenRequest minimum).
		opts.RequestTokenTTL = testRequestTokenTTL
		opts.AgentDisconnectAfter = testAgentDisconnectAfter
	}
	if err := registration.Setup(ctx, mgr, mgr.GetClient(), opts); err != nil {
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

// eventually polls cond until it returns nil or the deadline passes.
var eventually = envtest.Eventually

// newToken creates a ClusterRegistrationToken and returns its values once issued.
func newToken(t testing.TB, ns, name string, ttl time.Duration) map[string][]byte {
	t.Helper()
	return issueToken(t, &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: ttl}}})
}

// issueToken creates tok and returns its values once issued.
func issueToken(t testing.TB, tok *fleetv1alpha1.ClusterRegistrationToken) map[string][]byte {
	t.Helper()
	ctx, ns := t.Context(), tok.Namespace
	if err := mgmt.Client.Create(ctx, tok); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	eventually(t, 20*time.Second, func() error {
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(tok), tok); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(tok.Status.Conditions, fleetv1alpha1.ConditionReady) {
			return fmt.Errorf("token not ready: %+v", tok.Status.Conditions)
		}
		return mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tok.Status.SecretName}, s)
	})
	return s.Data
}

// downstreamNamespace creates an agent namespace downstream, with a bootstrap secret if given.
func downstreamNamespace(t testing.TB, bootstrap map[string][]byte) string {
	t.Helper()
	ns := downstream.Namespace(t)
	if bootstrap != nil {
		putBootstrap(t, downstream.Client, ns, bootstrap)
	}
	return ns
}

func putBootstrap(t testing.TB, c client.Client, ns string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifests.BootstrapSecret}, Data: data}
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

// runningAgent is an agent goroutine.
type runningAgent struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (a *runningAgent) stop() {
	a.cancel()
	<-a.done
}

// startAgent runs an agent in a goroutine with cfg standing in for its in-cluster config.
func startAgent(t testing.TB, cfg *rest.Config, ns, clientID string, opts ...func(*agent.Options)) *runningAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &runningAgent{cancel: cancel, done: make(chan struct{})}
	o := agent.Options{Config: cfg, Namespace: ns, ClientID: clientID, HeartbeatInterval: time.Second,
		RetryMin: time.Second, RetryMax: 4 * time.Second, Identity: "test"}
	for _, f := range opts {
		f(&o)
	}
	go func() {
		defer close(a.done)
		_ = agent.Run(ctx, o)
	}()
	t.Cleanup(a.stop)
	return a
}

// credential waits for and returns the agent credential secret.
func credential(t testing.TB, c client.Client, ns string) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	eventually(t, 60*time.Second, func() error {
		return c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: manifests.CredentialSecret}, s)
	})
	return s.Data
}

// tokenClient is a client authenticating with only a bearer token, as the real identities do.
func tokenClient(t testing.TB, token []byte) client.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(mgmt.Config)
	cfg.BearerToken = string(token)
	c, err := client.New(cfg, client.Options{Scheme: register.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func agentStatus(t testing.TB, c client.Client, ns string) map[string]string {
	cm := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: agent.StatusConfigMap}, cm); err != nil {
		return nil
	}
	return cm.Data
}

func rawManifests(t testing.TB, objs ...runtime.Object) []runtime.RawExtension {
	t.Helper()
	var out []runtime.RawExtension
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, runtime.RawExtension{Raw: b})
	}
	return out
}

var _ sync.Mutex
