package integration_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/controller"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/pkg/distsim"
)

// controllerRun is one manager running the migration Reconciler for one test namespace.
type controllerRun struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the manager stopped; err is then set
	err    error
}

// startController runs the Reconciler under a real controller-runtime manager, its cache
// limited to ns so parallel tests' managers do not reconcile each other's migrations.
func startController(t *testing.T, ctx context.Context, ns string, r *controller.Reconciler) *controllerRun {
	t.Helper()
	return startControllerWith(t, ctx, ns, r, nil)
}

// startControllerWith is startController with the manager's client wrapped by wrap (if set).
func startControllerWith(t *testing.T, ctx context.Context, ns string, r *controller.Reconciler, wrap func(client.Client) client.Client) *controllerRun {
	t.Helper()
	mgr, err := ctrl.NewManager(full.Config, ctrl.Options{
		Scheme:     server.Scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, // restarts in one process
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Client = mgr.GetClient()
	if wrap != nil {
		r.Client = wrap(r.Client)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	run := &controllerRun{cancel: cancel, done: make(chan struct{})}
	go func() { defer close(run.done); run.err = mgr.Start(ctx) }()
	t.Cleanup(func() { _ = run.stop() })
	return run
}

// stop cancels the manager and waits until it has stopped.
func (c *controllerRun) stop() error {
	c.cancel()
	<-c.done
	return c.err
}

// counter counts actions per step across controller restarts.
type counter struct {
	mu sync.Mutex
	n  map[int]int
}

func (c *counter) add(step int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[int]int{}
	}
	c.n[step]++
}

func (c *counter) get(step int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[step]
}

func (e *env) reconciler(timeout time.Duration, actions *counter) *controller.Reconciler {
	return &controller.Reconciler{
		Namespace: e.ns, Selector: e.sim.Selector(), KCMIdentity: "kcm-" + e.ns,
		PollInterval: 50 * time.Millisecond, StepTimeout: timeout, OnAction: actions.add,
	}
}

// createMigration creates the downstream kubeconfig Secret and a CloudProviderMigration.
func (e *env) createMigration(t *testing.T, spec migrationv1alpha1.CloudProviderMigrationSpec, withSecret bool) types.NamespacedName {
	t.Helper()
	if withSecret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "downstream"}, Data: map[string][]byte{"value": kubeconfig(t)}}
		if err := full.Client.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	spec.KubeconfigSecretRef = migrationv1alpha1.SecretKeyReference{Name: "downstream"}
	m := &migrationv1alpha1.CloudProviderMigration{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "aws-ccm"}, Spec: spec}
	if err := full.Client.Create(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	return keyOf(m)
}

func keyOf(m *migrationv1alpha1.CloudProviderMigration) types.NamespacedName {
	return types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
}

// waitMigration polls the object until done returns true; ctx ending first is returned as is.
func waitMigration(ctx context.Context, key types.NamespacedName, timeout time.Duration, done func(*migrationv1alpha1.CloudProviderMigration) bool) (*migrationv1alpha1.CloudProviderMigration, error) {
	m := &migrationv1alpha1.CloudProviderMigration{}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := full.Client.Get(ctx, key, m); err != nil {
			return false, err
		}
		return done(m), nil
	})
	return m, err
}

func finished(m *migrationv1alpha1.CloudProviderMigration) bool {
	switch m.Status.Phase {
	case migrationv1alpha1.PhaseSucceeded, migrationv1alpha1.PhaseFailed, migrationv1alpha1.PhaseRolledBack:
		return true
	}
	return false
}

func wantCondition(t *testing.T, m *migrationv1alpha1.CloudProviderMigration, typ string, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	c := meta.FindStatusCondition(m.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, m.Status.Conditions)
	}
	if c.Status != status || c.Reason != reason || !strings.Contains(c.Message, msg) {
		t.Errorf("%s condition = %s/%s %q, want %s/%s containing %q", typ, c.Status, c.Reason, c.Message, status, reason, msg)
	}
}

// TestControllerMigratesRKE2 runs CloudProviderMigration objects for RKE2 under real managers:
// to success, with the manager stopped at every step boundary and a new one resuming, and to a
// failure that is then rolled back through the annotation.
func TestControllerMigratesRKE2(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		restart   bool // stop the manager after every finished step and start a new one
		misbehave distsim.Misbehaviour
		timeout   time.Duration
		// wantFailed is the step that fails (0: none).
		wantFailed int
		wantMsg    string
	}{
		{name: "runs to success", timeout: time.Minute},
		{name: "restart at every step boundary", restart: true, timeout: time.Minute},
		{name: "lease never acquired then rollback", misbehave: distsim.NeverAcquireLease, timeout: 5 * time.Second,
			wantFailed: migration.StepEnableLeaderMigration, wantMsg: "Lease NS/cloud-provider-extraction-migration does not exist yet"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			e := newEnv(t, envOpts{rke2: true, misbehave: tc.misbehave})
			original, err := e.dist.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			key := e.createMigration(t, migrationv1alpha1.CloudProviderMigrationSpec{
				Distribution: migrationv1alpha1.DistributionRKE2,
				ClusterRef:   &migrationv1alpha1.ClusterReference{Namespace: e.key.Namespace, Name: e.key.Name},
			}, true)
			actions := &counter{}

			var m *migrationv1alpha1.CloudProviderMigration
			var boundaries []string
			for attempt := 1; ; attempt++ {
				if attempt > 2*migration.NumSteps {
					t.Fatalf("not finished after %d controller restarts", attempt-1)
				}
				r := e.reconciler(tc.timeout, actions)
				runCtx, stopAtBoundary := context.WithCancel(ctx)
				var last migrationv1alpha1.StepStatus
				if tc.restart {
					r.OnTransition = func(s migrationv1alpha1.StepStatus) {
						if s.Phase == migrationv1alpha1.StepSucceeded || s.Phase == migrationv1alpha1.StepSkipped {
							last = s
							stopAtBoundary() // the manager stops right after this step was saved
						}
					}
				}
				run := startController(t, runCtx, e.ns, r)
				m, err = waitMigration(runCtx, key, 2*time.Minute, finished)
				if err == nil && !tc.restart {
					// Events are sent asynchronously: check them while their manager runs
					// (stopping the manager right after a step may drop its Event).
					if tc.wantFailed != 0 {
						wantEvents(t, key, map[string]int{"StepFailed": 1}, corev1.EventTypeWarning+":StepFailed:"+migration.StepNames[tc.wantFailed])
					} else {
						wantEvents(t, key, map[string]int{"StepSucceeded": migration.NumSteps, "Succeeded": 1}, "")
					}
				}
				stopAtBoundary()
				if serr := run.stop(); serr != nil {
					t.Fatalf("manager: %v", serr)
				}
				if err == nil {
					break
				}
				if !tc.restart || !errors.Is(err, context.Canceled) || ctx.Err() != nil {
					t.Fatalf("waiting for the migration: %v (phase %s)", err, m.Status.Phase)
				}
				// The stopped controller saved the step it finished: the next one starts after it.
				if err := full.Client.Get(ctx, key, m); err != nil {
					t.Fatal(err)
				}
				if got := m.Status.Steps[last.Index].Phase; got != last.Phase {
					t.Fatalf("after a stop at step %d %s: persisted phase %s, want %s", last.Index, last.Name, got, last.Phase)
				}
				boundaries = append(boundaries, fmt.Sprintf("%d:%s", last.Index, last.Phase))
			}
			if tc.restart {
				t.Logf("controller stopped and restarted after %v", boundaries)
				if len(boundaries) != migration.NumSteps {
					t.Errorf("stopped at %d step boundaries, want %d", len(boundaries), migration.NumSteps)
				}
			}

			if m.Status.ObservedGeneration != m.Generation {
				t.Errorf("observedGeneration %d, want %d", m.Status.ObservedGeneration, m.Generation)
			}
			if tc.wantFailed != 0 {
				want := strings.ReplaceAll(tc.wantMsg, "NS", e.ns)
				if m.Status.Phase != migrationv1alpha1.PhaseFailed || m.Status.CurrentStep != int32(tc.wantFailed) {
					t.Fatalf("phase %s at step %d, want Failed at %d", m.Status.Phase, m.Status.CurrentStep, tc.wantFailed)
				}
				wantCondition(t, m, migration.ConditionFailed, metav1.ConditionTrue, migration.StepNames[tc.wantFailed], want)
				wantCondition(t, m, migration.ConditionProgressing, metav1.ConditionFalse, migration.StepNames[tc.wantFailed], "Stopped at a failed step")
				if s := m.Status.Steps[tc.wantFailed]; s.Phase != migrationv1alpha1.StepFailed || !strings.Contains(s.Message, want) {
					t.Errorf("step %d: %s %q, want Failed with %q", tc.wantFailed, s.Phase, s.Message, want)
				}

				// Roll back through the annotation, with a fresh manager.
				m.Annotations = map[string]string{controller.RollbackAnnotation: "true"}
				if err := full.Client.Update(ctx, m); err != nil {
					t.Fatal(err)
				}
				run := startController(t, ctx, e.ns, e.reconciler(tc.timeout, actions))
				m, err = waitMigration(ctx, key, time.Minute, func(m *migrationv1alpha1.CloudProviderMigration) bool {
					return m.Status.Phase == migrationv1alpha1.PhaseRolledBack
				})
				if err != nil {
					t.Fatalf("rollback: %v (phase %s)", err, m.Status.Phase)
				}
				wantEvents(t, key, map[string]int{"RolledBack": 1}, "")
				if err := run.stop(); err != nil {
					t.Fatal(err)
				}
				wantCondition(t, m, migration.ConditionReady, metav1.ConditionFalse, migration.ReasonRolledBack, "in-tree aws")
				got, err := e.dist.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if d, _ := migration.Diff(original, got); d != "" {
					t.Fatalf("rollback did not restore the original Cluster:\n%s", d)
				}
				return
			}

			if m.Status.Phase != migrationv1alpha1.PhaseSucceeded {
				t.Fatalf("phase %s, want Succeeded: %+v", m.Status.Phase, m.Status.Conditions)
			}
			wantCondition(t, m, migration.ConditionReady, metav1.ConditionTrue, migration.ReasonSucceeded, "out-of-tree AWS cloud controller manager")
			wantCondition(t, m, migration.ConditionProgressing, metav1.ConditionFalse, migration.ReasonSucceeded, "All steps finished")
			if c := meta.FindStatusCondition(m.Status.Conditions, migration.ConditionFailed); c != nil {
				t.Errorf("unexpected Failed condition %+v", c)
			}
			for _, s := range m.Status.Steps {
				if s.Phase != migrationv1alpha1.StepSucceeded || s.StartedAt == nil || s.FinishedAt == nil {
					t.Errorf("step %d %s: %s started %v finished %v, want Succeeded with timestamps", s.Index, s.Name, s.Phase, s.StartedAt, s.FinishedAt)
				}
			}
			if f := m.Status.Facts; len(f.Nodes) != 3 || len(f.LoadBalancers) != 1 || f.KubernetesVersion != "v1.26.15+rke2r1" {
				t.Errorf("recorded facts %+v, want 3 nodes, 1 load balancer and v1.26.15+rke2r1", f)
			}
			// The original document may hold credentials: it is kept in a Secret the migration
			// owns, never in its status, which every viewer of migrations may read.
			if f := m.Status.Facts; f.OriginalConfig != "" || f.OriginalConfigSecret == "" {
				t.Errorf("status.facts: originalConfig %d bytes, originalConfigSecret %q; want the document in a Secret only", len(f.OriginalConfig), f.OriginalConfigSecret)
			} else {
				sec := &corev1.Secret{}
				if err := full.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: f.OriginalConfigSecret}, sec); err != nil {
					t.Fatal(err)
				}
				if string(sec.Data["config"]) != string(original) || !metav1.IsControlledBy(sec, m) {
					t.Errorf("Secret %s: config %q, owners %v; want the original document, owned by the migration", sec.Name, sec.Data["config"], sec.OwnerReferences)
				}
			}
			for s := range migration.NumSteps {
				if n := actions.get(s); n != 1 {
					t.Errorf("step %d %s action ran %d times, want exactly 1", s, migration.StepNames[s], n)
				}
			}
			if got := e.sim.Applies(); got != 5 {
				t.Errorf("distribution applied %d configurations, want 5 (initial + 4 steps, none repeated)", got)
			}
			doc, err := e.dist.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "rke2-leader-migration.final.yaml", e.normalize(doc))
		})
	}
}

// wantEvents waits until the migration's Events include at least want[reason] of each reason
// (events are written asynchronously), and checks that one has type:reason:text in its note.
func wantEvents(t *testing.T, key types.NamespacedName, want map[string]int, oneOf string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list eventsv1.EventList
		if err := full.Client.List(t.Context(), &list, client.InNamespace(key.Namespace)); err != nil {
			t.Fatal(err)
		}
		got, found := map[string]int{}, oneOf == ""
		for _, e := range list.Items {
			if e.Regarding.Kind != "CloudProviderMigration" || e.Regarding.Name != key.Name {
				continue
			}
			got[e.Reason]++
			if typ, rest, _ := strings.Cut(oneOf, ":"); !found && e.Type == typ {
				reason, text, _ := strings.Cut(rest, ":")
				found = e.Reason == reason && strings.Contains(e.Note, text)
			}
		}
		ok := found
		for r, n := range want {
			ok = ok && got[r] >= n
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("migration events by reason %v, want at least %v (and %q)", got, want, oneOf)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestControllerTerminalErrors: migrations the controller cannot run stop at once with a Failed
// condition saying what to do instead.
func TestControllerTerminalErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		spec       migrationv1alpha1.CloudProviderMigrationSpec
		withSecret bool
		// kubeconfig, when set, is the Secret's kubeconfig instead of the downstream cluster's.
		kubeconfig string
		reason     string
		msg        string
	}{
		{name: "rke1 points to the CLI", spec: migrationv1alpha1.CloudProviderMigrationSpec{Distribution: migrationv1alpha1.DistributionRKE1},
			withSecret: true, reason: controller.ReasonUnsupported, msg: "drover migrate cloud-provider apply --distribution rke1"},
		{name: "rke2 without clusterRef", spec: migrationv1alpha1.CloudProviderMigrationSpec{Distribution: migrationv1alpha1.DistributionRKE2},
			withSecret: true, reason: controller.ReasonUnsupported, msg: "spec.clusterRef"},
		{name: "kubeconfig Secret missing", spec: migrationv1alpha1.CloudProviderMigrationSpec{Distribution: migrationv1alpha1.DistributionRKE2,
			ClusterRef: &migrationv1alpha1.ClusterReference{Namespace: "NS", Name: "prod"}},
			reason: controller.ReasonKubeconfigUnavailable, msg: "kubeconfig Secret NS/downstream not found: create it"},
		// drover's own ServiceAccount token must not be sent to a server of the Secret's author.
		{name: "kubeconfig reading drover's files", spec: migrationv1alpha1.CloudProviderMigrationSpec{Distribution: migrationv1alpha1.DistributionRKE2,
			ClusterRef: &migrationv1alpha1.ClusterReference{Namespace: "NS", Name: "prod"}},
			kubeconfig: "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n" +
				"clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}}]\n",
			reason: controller.ReasonKubeconfigUnavailable, msg: `kubeconfig Secret NS/downstream: invalid kubeconfig: user "u" reads its token from a file (tokenFile)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			e := &env{ns: full.Namespace(t)}
			if tc.spec.ClusterRef != nil {
				tc.spec.ClusterRef.Namespace = e.ns
			}
			if tc.kubeconfig != "" {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "downstream"}, Data: map[string][]byte{"value": []byte(tc.kubeconfig)}}
				if err := full.Client.Create(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			key := e.createMigration(t, tc.spec, tc.withSecret)
			run := startController(t, ctx, e.ns, &controller.Reconciler{Namespace: e.ns})
			m, err := waitMigration(ctx, key, 30*time.Second, finished)
			if err != nil {
				t.Fatalf("%v (status %+v)", err, m.Status)
			}
			if err := run.stop(); err != nil {
				t.Fatal(err)
			}
			if m.Status.Phase != migrationv1alpha1.PhaseFailed {
				t.Fatalf("phase %s, want Failed", m.Status.Phase)
			}
			wantCondition(t, m, migration.ConditionFailed, metav1.ConditionTrue, tc.reason, strings.ReplaceAll(tc.msg, "NS", e.ns))
		})
	}
}

// flakyReader fails the first n Secret reads with a transient API error (the API server
// briefly unavailable).
type flakyReader struct {
	client.Reader
	n atomic.Int32
}

func (f *flakyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok && f.n.Add(-1) >= 0 {
		return apierrors.NewServiceUnavailable("injected: the API server is restarting")
	}
	return f.Reader.Get(ctx, key, obj, opts...)
}

// conflictOnce makes the first status write carrying a Failed condition fail with a
// Conflict, as when another writer updated the object since it was read.
type conflictOnce struct {
	client.Client
	done atomic.Bool
}

func (c *conflictOnce) Status() client.SubResourceWriter {
	return &conflictStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type conflictStatus struct {
	client.SubResourceWriter
	c *conflictOnce
}

func (s *conflictStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if m, ok := obj.(*migrationv1alpha1.CloudProviderMigration); ok && meta.IsStatusConditionTrue(m.Status.Conditions, migration.ConditionFailed) && s.c.done.CompareAndSwap(false, true) {
		return apierrors.NewConflict(migrationv1alpha1.GroupVersion.WithResource("cloudprovidermigrations").GroupResource(), m.Name, errors.New("injected: the object has been modified"))
	}
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

// TestControllerKubeconfigAndConflicts: a transient error reading the kubeconfig Secret is
// retried, not a failure; a migration created before its Secret starts when the Secret is
// created (the Secret is watched); a conflicting status write does not lose a Failed condition.
func TestControllerKubeconfigAndConflicts(t *testing.T) {
	t.Parallel()
	rke2Spec := func(e *env) migrationv1alpha1.CloudProviderMigrationSpec {
		return migrationv1alpha1.CloudProviderMigrationSpec{Distribution: migrationv1alpha1.DistributionRKE2,
			ClusterRef: &migrationv1alpha1.ClusterReference{Namespace: e.key.Namespace, Name: e.key.Name}}
	}
	// succeeded waits until the migration finished, a failure for want of its kubeconfig aside.
	succeeded := func(t *testing.T, key types.NamespacedName) {
		t.Helper()
		m, err := waitMigration(t.Context(), key, 2*time.Minute, func(m *migrationv1alpha1.CloudProviderMigration) bool {
			c := meta.FindStatusCondition(m.Status.Conditions, migration.ConditionFailed)
			return finished(m) && (c == nil || c.Reason != controller.ReasonKubeconfigUnavailable)
		})
		if err != nil {
			t.Fatalf("%v (status %+v)", err, m.Status)
		}
		if m.Status.Phase != migrationv1alpha1.PhaseSucceeded {
			t.Fatalf("phase %s, want Succeeded: %+v", m.Status.Phase, m.Status.Conditions)
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, migration.ConditionFailed); c != nil {
			t.Errorf("Failed condition left after success: %+v", c)
		}
	}

	t.Run("transient Secret read error is retried", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envOpts{rke2: true})
		key := e.createMigration(t, rke2Spec(e), true)
		r := e.reconciler(time.Minute, &counter{})
		flaky := &flakyReader{Reader: full.Client}
		flaky.n.Store(3)
		r.APIReader = flaky
		startController(t, t.Context(), e.ns, r)
		succeeded(t, key)
		if n := flaky.n.Load(); n >= 0 {
			t.Fatalf("%d injected errors left unused", n+1)
		}
	})

	t.Run("Secret created after the migration", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envOpts{rke2: true})
		key := e.createMigration(t, rke2Spec(e), false)
		startController(t, t.Context(), e.ns, e.reconciler(time.Minute, &counter{}))
		m, err := waitMigration(t.Context(), key, 30*time.Second, func(m *migrationv1alpha1.CloudProviderMigration) bool {
			return meta.FindStatusCondition(m.Status.Conditions, migration.ConditionFailed) != nil
		})
		if err != nil {
			t.Fatalf("%v (status %+v)", err, m.Status)
		}
		wantCondition(t, m, migration.ConditionFailed, metav1.ConditionTrue, controller.ReasonKubeconfigUnavailable, "not found: create it")
		// The manager's resync is hours away: only the Secret's watch can start it now.
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "downstream"}, Data: map[string][]byte{"value": kubeconfig(t)}}
		if err := full.Client.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		succeeded(t, key)
	})

	t.Run("Failed condition survives a status conflict", func(t *testing.T) {
		t.Parallel()
		e := &env{ns: full.Namespace(t)}
		key := e.createMigration(t, migrationv1alpha1.CloudProviderMigrationSpec{Distribution: migrationv1alpha1.DistributionRKE1}, true)
		wrapped := &conflictOnce{}
		startControllerWith(t, t.Context(), e.ns, &controller.Reconciler{Namespace: e.ns}, func(c client.Client) client.Client {
			wrapped.Client = c
			return wrapped
		})
		m, err := waitMigration(t.Context(), key, 30*time.Second, finished)
		if err != nil {
			t.Fatalf("%v (status %+v)", err, m.Status)
		}
		if !wrapped.done.Load() {
			t.Fatal("no conflict was injected")
		}
		wantCondition(t, m, migration.ConditionFailed, metav1.ConditionTrue, controller.ReasonUnsupported, "drover migrate cloud-provider apply --distribution rke1")
	})
}

// countingReader counts the uncached reads of one migration: each reconcile of it starts with one.
type countingReader struct {
	client.Reader
	key types.NamespacedName
	n   atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*migrationv1alpha1.CloudProviderMigration); ok && key == c.key {
		c.n.Add(1)
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestControllerRollbackRefusedAt127: a rollback requested after the migration upgraded the
// cluster to 1.27 (no in-tree AWS provider left) is refused for good: a RollbackRefused
// condition says what to do instead, the migration's outcome is left alone, the controller
// does not retry it, and withdrawing the request clears the condition.
func TestControllerRollbackRefusedAt127(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, envOpts{rke2: true})
	key := e.createMigration(t, migrationv1alpha1.CloudProviderMigrationSpec{
		Distribution:      migrationv1alpha1.DistributionRKE2,
		ClusterRef:        &migrationv1alpha1.ClusterReference{Namespace: e.key.Namespace, Name: e.key.Name},
		KubernetesVersion: "v1.27.16+rke2r1",
	}, true)
	r := e.reconciler(time.Minute, &counter{})
	reads := &countingReader{Reader: full.Client, key: key}
	r.APIReader = reads
	startController(t, ctx, e.ns, r)
	m, err := waitMigration(ctx, key, 2*time.Minute, finished)
	if err != nil {
		t.Fatalf("%v (status %+v)", err, m.Status)
	}
	if m.Status.Phase != migrationv1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded: %+v", m.Status.Phase, m.Status.Conditions)
	}

	m.Annotations = map[string]string{controller.RollbackAnnotation: "true"}
	if err := full.Client.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	m, err = waitMigration(ctx, key, 30*time.Second, func(m *migrationv1alpha1.CloudProviderMigration) bool {
		return meta.FindStatusCondition(m.Status.Conditions, migration.ConditionRollbackRefused) != nil
	})
	if err != nil {
		t.Fatalf("no %s condition: %v (status %+v)", migration.ConditionRollbackRefused, err, m.Status)
	}
	wantCondition(t, m, migration.ConditionRollbackRefused, metav1.ConditionTrue, migration.ReasonInTreeProviderRemoved,
		"Cannot roll back: the cluster is configured for Kubernetes v1.27.16+rke2r1, which has no in-tree AWS provider; fix forward, or restore the etcd snapshot taken before the migration. Remove the migration.drover.io/rollback annotation")
	wantCondition(t, m, migration.ConditionReady, metav1.ConditionTrue, migration.ReasonSucceeded, "out-of-tree")
	if m.Status.Phase != migrationv1alpha1.PhaseSucceeded {
		t.Errorf("phase %s after the refused rollback, want Succeeded (the outcome is left alone)", m.Status.Phase)
	}
	wantEvents(t, key, map[string]int{"RollbackRefused": 1}, corev1.EventTypeWarning+":RollbackRefused:no in-tree AWS provider")

	// Not retried: after the reconcile that recorded the refusal and the one its own status
	// write brings, nothing reconciles the object again and its status is not rewritten. A
	// retried error would be back within milliseconds (5 ms, 10 ms, 20 ms, ... backoff).
	settled := reads.n.Load()
	rv := m.ResourceVersion
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err := full.Client.Get(ctx, key, m); err != nil {
			t.Fatal(err)
		}
		if m.ResourceVersion != rv || m.Generation != 1 {
			t.Fatalf("the migration changed after the refusal (resourceVersion %s -> %s, generation %d): %+v", rv, m.ResourceVersion, m.Generation, m.Status.Conditions)
		}
		if n := reads.n.Load(); n > settled+1 {
			t.Fatalf("the refused rollback was reconciled %d more times: retried, not terminal", n-settled)
		}
	}

	// Withdrawing the request clears the condition (the update event reconciles it).
	delete(m.Annotations, controller.RollbackAnnotation)
	if err := full.Client.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	m, err = waitMigration(ctx, key, 30*time.Second, func(m *migrationv1alpha1.CloudProviderMigration) bool {
		return meta.FindStatusCondition(m.Status.Conditions, migration.ConditionRollbackRefused) == nil
	})
	if err != nil {
		t.Fatalf("%s not cleared after the annotation was removed: %v (status %+v)", migration.ConditionRollbackRefused, err, m.Status)
	}
	if m.Status.Phase != migrationv1alpha1.PhaseSucceeded {
		t.Errorf("phase %s, want Succeeded", m.Status.Phase)
	}
}

// TestControllerMovesOriginalConfigToSecret: a finished migration whose status still holds the
// original document (written by an older drover) gets it moved to its Secret.
func TestControllerMovesOriginalConfigToSecret(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := &env{ns: full.Namespace(t)}
	key := e.createMigration(t, migrationv1alpha1.CloudProviderMigrationSpec{Distribution: migrationv1alpha1.DistributionRKE2,
		ClusterRef: &migrationv1alpha1.ClusterReference{Namespace: e.ns, Name: "prod"}}, true)
	m := &migrationv1alpha1.CloudProviderMigration{}
	if err := full.Client.Get(ctx, key, m); err != nil {
		t.Fatal(err)
	}
	const doc = "spec:\n  rkeConfig:\n    machineGlobalConfig:\n      etcd-s3-secret-key: s3cr3t\n"
	m.Status.Phase, m.Status.Facts.OriginalConfig = migrationv1alpha1.PhaseSucceeded, doc
	if err := full.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	run := startController(t, ctx, e.ns, &controller.Reconciler{Namespace: e.ns})
	m, err := waitMigration(ctx, key, 30*time.Second, func(m *migrationv1alpha1.CloudProviderMigration) bool {
		return m.Status.Facts.OriginalConfig == "" && m.Status.Facts.OriginalConfigSecret != ""
	})
	if err != nil {
		t.Fatalf("%v (facts %+v)", err, m.Status.Facts)
	}
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{}
	if err := full.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: m.Status.Facts.OriginalConfigSecret}, sec); err != nil || string(sec.Data["config"]) != doc {
		t.Errorf("Secret %s: %v, config %q; want the document", m.Status.Facts.OriginalConfigSecret, err, sec.Data["config"])
	}
	if m.Status.Phase != migrationv1alpha1.PhaseSucceeded {
		t.Errorf("phase %s, want Succeeded still", m.Status.Phase)
	}
}
