package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
	"github.com/droverhq/drover/test/envtest"
)

var mgmt *envtest.Cluster

func TestMain(m *testing.M) {
	if os.Getenv(simChildEnv) != "" {
		runEKSSimChild() // a benchmark's out-of-process simulator
	}
	// Tests log at every verbosity drover emits, for the secret scan below; benchmarks log
	// nothing.
	benchmarking := envtest.Benchmarking()
	logs := &envtest.SyncBuffer{}
	if benchmarking {
		ctrllog.SetLogger(logr.Discard())
	} else {
		ctrllog.SetLogger(envtest.SuiteLogger(logs))
	}
	var err error
	mgmt, err = envtest.Start("management", envtest.Options{InstallCRDs: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var secrets *envtest.SecretScan
	if !benchmarking {
		if secrets, err = envtest.StartSecretScan(ctx, mgmt); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	// Secret values (the providers' keys, client secrets, service-account keys) never reach a
	// log line, an Event or a status.
	if code == 0 && secrets != nil && !testing.Short() {
		if err := secrets.Check(ctx, 3, map[string]string{"the logs": logs.String(), "the Events recorded": allEvents()}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	cancel()
	_ = mgmt.Stop()
	os.Exit(code)
}

const (
	simDelay = time.Minute
	refresh  = 5 * time.Minute
)

// env is one test's world: a namespace, a provider's simulator on a manual clock (set up by the
// provider's harness), and a reconciler driven pass by pass with a fake clock.
type env struct {
	t       *testing.T
	ns      string
	simTime *simcore.ManualClock
	clock   *clocktesting.FakeClock
	r       *hosted.Reconciler
	events  *recorder
}

func newEnv(t *testing.T, h harness) *env {
	t.Helper()
	start := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	e := &env{t: t, ns: mgmt.Namespace(t), simTime: simcore.NewManualClock(start), clock: clocktesting.NewFakeClock(start), events: newRecorder()}
	h.setup(t, e)
	e.r = &hosted.Reconciler{
		Client: mgmt.Client, Providers: []hosted.Provider{h.provider()}, Recorder: e.events,
		Clock: e.clock, RefreshInterval: refresh, PollInterval: 10 * time.Second,
	}
	return e
}

func createSecret(ns, name string, data map[string]string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	return mgmt.Client.Create(context.Background(), s)
}

// reconcile runs one pass.
func (e *env) reconcile(name string) (reconcile.Result, error) {
	return e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.ns, Name: name}})
}

// settle runs passes, moving the simulator's clock past running operations, until the cluster
// is active and in sync (or gone), and returns it.
func (e *env) settle(name string) *v1.Cluster {
	e.t.Helper()
	for i := 0; i < 60; i++ {
		res, err := e.reconcile(name)
		c := &v1.Cluster{}
		if gerr := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, c); gerr != nil {
			return nil // deleted
		}
		if err != nil && !strings.Contains(err.Error(), "throttl") {
			e.t.Fatalf("reconcile %s: %v\nstatus: %+v", name, err, c.Status)
		}
		if err == nil && c.Status.Phase == v1.PhaseActive && res.RequeueAfter >= refresh && c.DeletionTimestamp.IsZero() {
			return c
		}
		if c.Status.Phase == v1.PhaseFailed || condIs(c, hosted.CondConfigValid, metav1.ConditionFalse) || condIs(c, hosted.CondCredentials, metav1.ConditionFalse) {
			return c
		}
		e.simTime.Advance(simDelay)
		e.clock.Step(10 * time.Second)
	}
	e.t.Fatalf("cluster %s did not settle", name)
	return nil
}

// refresh moves drover's clock to the next refresh and settles.
func (e *env) refresh(name string) *v1.Cluster {
	e.t.Helper()
	e.clock.Step(refresh + refresh/5)
	return e.settle(name)
}

func (e *env) get(name string) *v1.Cluster {
	e.t.Helper()
	c := &v1.Cluster{}
	if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, c); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// editCluster changes a Cluster through the API, as a user would.
func (e *env) editCluster(name string, f func(*v1.Cluster)) {
	e.t.Helper()
	c := e.get(name)
	patch := client.MergeFrom(c.DeepCopy())
	f(c)
	if err := mgmt.Client.Patch(context.Background(), c, patch); err != nil {
		e.t.Fatal(err)
	}
}

func condIs(c *v1.Cluster, t string, s metav1.ConditionStatus) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status == s
		}
	}
	return false
}

func cond(c *v1.Cluster, t string) metav1.Condition {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond
		}
	}
	return metav1.Condition{}
}

func (e *env) create(c *v1.Cluster) *v1.Cluster {
	e.t.Helper()
	c.Namespace = e.ns
	if err := mgmt.Client.Create(context.Background(), c); err != nil {
		e.t.Fatal(err)
	}
	return e.settle(c.Name)
}

// recorder keeps events for assertions.
type recorder struct {
	mu     sync.Mutex
	events []string
}

// recorders are all the recorders of the suite, for the secret scan.
var recorders struct {
	sync.Mutex
	all []*recorder
}

func newRecorder() *recorder {
	r := &recorder{}
	recorders.Lock()
	defer recorders.Unlock()
	recorders.all = append(recorders.all, r)
	return r
}

// allEvents is every Event the suite's reconcilers recorded.
func allEvents() string {
	recorders.Lock()
	defer recorders.Unlock()
	var out []string
	for _, r := range recorders.all {
		out = append(out, r.String())
	}
	return strings.Join(out, "\n")
}

func (r *recorder) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s", eventtype, reason, fmt.Sprintf(note, args...)))
}

func (r *recorder) find(reason string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if strings.Contains(e, " "+reason+" ") {
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
