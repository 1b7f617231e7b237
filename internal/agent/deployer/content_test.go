package deployer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/test/envtest"
)

// contentAccess is a test's stand-in for a cluster's request identity and access Role: a
// ServiceAccount that may get exactly the BundleContents the Role names.
type contentAccess struct {
	ns     string
	reader client.Reader
}

const accessRole = "drover-cluster-edge"

func newContentAccess(t *testing.T, ns string) *contentAccess {
	t.Helper()
	ctx := t.Context()
	cfg, err := env.ServiceAccountConfig(ctx, ns, "request-edge")
	if err != nil {
		t.Fatal(err)
	}
	// No content yet: a rule naming none (a rule without resourceNames would grant them all).
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: accessRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"bundlecontents"}, ResourceNames: []string{"none"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: accessRole},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: accessRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "request-edge"}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	reader, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &contentAccess{ns: ns, reader: reader}
}

// grant adds content to the access Role, as drover's access controller does.
func (a *contentAccess) grant(t *testing.T, content string) {
	t.Helper()
	role := &rbacv1.Role{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: a.ns, Name: accessRole}, role); err != nil {
		t.Fatal(err)
	}
	role.Rules[0].ResourceNames = append(role.Rules[0].ResourceNames, content)
	if err := env.Client.Update(t.Context(), role); err != nil {
		t.Fatal(err)
	}
}

// configMapContent creates a BundleContent holding one ConfigMap.
func configMapContent(t *testing.T, ns, name, color string) *fleetv1alpha1.BundleContent {
	t.Helper()
	c := &fleetv1alpha1.BundleContent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, SHA256: name,
		Manifests: []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"` + color + `"}}`)}}}
	if err := env.Client.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// startDeployer runs a deployer for the BundleDeployments of ns on a manager of its own, as the
// agent does, reading contents through reader, until the test ends.
func startDeployer(t *testing.T, ns string, reader client.Reader, contentWait time.Duration) {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Client.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Upstream: mgr.GetClient(), ContentReader: reader, Downstream: env.Client, DownstreamConfig: env.Config,
		RecordNamespace: ns, DriftInterval: time.Hour, ContentWait: contentWait, AccessRole: ns + "/" + accessRole}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("deployer manager: %v", err)
		}
	})
}

// appliedHistory records every Applied condition a BundleDeployment of a namespace had, from
// a watch (which sees every update).
type appliedHistory struct {
	mu   sync.Mutex
	seen []metav1.Condition
}

func watchApplied(t *testing.T, ns string) *appliedHistory {
	t.Helper()
	cw, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cw.Watch(t.Context(), &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	h := &appliedHistory{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			bd, ok := ev.Object.(*fleetv1alpha1.BundleDeployment)
			if !ok {
				continue
			}
			if c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied); c != nil {
				h.mu.Lock()
				if n := len(h.seen); n == 0 || h.seen[n-1] != *c {
					h.seen = append(h.seen, *c)
				}
				h.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return h
}

func (h *appliedHistory) all() []metav1.Condition {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

func (a *contentAccess) bd(t *testing.T, name string) *fleetv1alpha1.BundleDeployment {
	t.Helper()
	bd := &fleetv1alpha1.BundleDeployment{}
	if err := env.Client.Get(t.Context(), types.NamespacedName{Namespace: a.ns, Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

// waitApplied waits until the BundleDeployment applied its deployment ID and the ConfigMap has
// color downstream.
func (a *contentAccess) waitApplied(t *testing.T, name, color string) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		bd := a.bd(t, name)
		if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || !meta.IsStatusConditionTrue(bd.Status.Conditions, fleetv1alpha1.ConditionApplied) {
			return fmt.Errorf("not applied: %+v", bd.Status.Conditions)
		}
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: a.ns, Name: "settings"}, cm); err != nil {
			return err
		}
		if cm.Data["color"] != color {
			return fmt.Errorf("ConfigMap color %q, want %q", cm.Data["color"], color)
		}
		return nil
	})
}

// waitNotReadable waits until the BundleDeployment reports that it waits for its content
// (Applied=Unknown, ContentNotReadable, saying why), and checks that its Bundle counts it
// pending with that message.
func (a *contentAccess) waitNotReadable(t *testing.T, name, content, why string) {
	t.Helper()
	var applied *metav1.Condition
	var bd *fleetv1alpha1.BundleDeployment
	envtest.Eventually(t, 30*time.Second, func() error {
		bd = a.bd(t, name)
		applied = meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
		if applied == nil || applied.ObservedGeneration != bd.Generation || applied.Status == metav1.ConditionTrue {
			return fmt.Errorf("no report on generation %d yet: %+v", bd.Generation, applied)
		}
		return nil
	})
	if applied.Status != metav1.ConditionUnknown || applied.Reason != fleetv1alpha1.ReasonContentNotReadable ||
		!strings.Contains(applied.Message, content) || !strings.Contains(applied.Message, why) {
		t.Fatalf("Applied %s/%s %q, want Unknown/%s naming %s (%s)", applied.Status, applied.Reason, applied.Message,
			fleetv1alpha1.ReasonContentNotReadable, content, why)
	}
	if state, msg := bundle.DeploymentState(bd, bd.Spec.DeploymentID); state != bundle.StatePending || msg != applied.Message {
		t.Errorf("the Bundle counts it %q (%q), want %q with the condition's message", state, msg, bundle.StatePending)
	}
	if d := bd.Status.Display; d == nil || d.State != bundle.StatePending {
		t.Errorf("status.display %+v, want state %s", d, bundle.StatePending)
	}
}

// TestContentNotReadableIsTransient: a BundleDeployment whose content the agent may not read
// yet (the cluster's access Role does not name it yet, as right after a Bundle got new content)
// or that does not exist yet is pending (Applied=Unknown, ContentNotReadable), never a failure,
// and applies within seconds once the content can be read.
func TestContentNotReadableIsTransient(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	access := newContentAccess(t, ns)
	history := watchApplied(t, ns)
	c1 := configMapContent(t, ns, "s-blue", "blue")
	bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "s-blue:a", Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: ns},
			Content: &fleetv1alpha1.ContentReference{Namespace: ns, Name: c1.Name}}}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	startDeployer(t, ns, access.reader, 0)
	update := func(content string) {
		t.Helper()
		cur := access.bd(t, bd.Name)
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.DeploymentID, cur.Spec.Content.Name = content+":a", content
		if err := env.Client.Patch(ctx, cur, patch); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("forbidden", func(t *testing.T) {
		access.waitNotReadable(t, bd.Name, ns+"/"+c1.Name, "not allowed to read it yet")
		access.grant(t, c1.Name)
		access.waitApplied(t, bd.Name, "blue")
	})
	t.Run("new content forbidden", func(t *testing.T) {
		c2 := configMapContent(t, ns, "s-green", "green")
		update(c2.Name)
		access.waitNotReadable(t, bd.Name, ns+"/"+c2.Name, "not allowed to read it yet")
		access.grant(t, c2.Name)
		access.waitApplied(t, bd.Name, "green")
	})
	t.Run("new content not found", func(t *testing.T) {
		access.grant(t, "s-red")
		update("s-red")
		access.waitNotReadable(t, bd.Name, ns+"/s-red", "not found yet")
		configMapContent(t, ns, "s-red", "red")
		access.waitApplied(t, bd.Name, "red")
	})
	// A content slot the BundleDeployment names with a version it does not hold (yet): the
	// slot was reused, or the BundleDeployment came before the slot's new content.
	t.Run("slot holds another version", func(t *testing.T) {
		slot := configMapContent(t, ns, "web-1a2b3c4d5e-0", "purple")
		access.grant(t, slot.Name)
		cur := access.bd(t, bd.Name)
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.DeploymentID = "s-yellow:a"
		cur.Spec.Content = &fleetv1alpha1.ContentReference{Namespace: ns, Name: slot.Name, SHA256: "yellow"}
		if err := env.Client.Patch(ctx, cur, patch); err != nil {
			t.Fatal(err)
		}
		access.waitNotReadable(t, bd.Name, ns+"/"+slot.Name, "it holds version "+slot.Name[:12]+", not yellow yet")
		slot.SHA256 = "yellow"
		slot.Manifests[0].Raw = []byte(strings.Replace(string(slot.Manifests[0].Raw), "purple", "yellow", 1))
		if err := env.Client.Update(ctx, slot); err != nil {
			t.Fatal(err)
		}
		access.waitApplied(t, bd.Name, "yellow")
	})

	for _, c := range history.all() {
		if c.Status == metav1.ConditionFalse {
			t.Errorf("the BundleDeployment was Applied=False (%s: %s): a content not readable for a moment is no failure", c.Reason, c.Message)
		}
	}
}

// TestContentNotReadableForLong: a content still not readable after the agent's wait is a
// failure (Applied=False, ContentNotReadable, naming the access Role; the Bundle counts it
// errored), until it becomes readable: then it applies.
func TestContentNotReadableForLong(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	access := newContentAccess(t, ns)
	history := watchApplied(t, ns)
	c := configMapContent(t, ns, "s-blue", "blue")
	bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "s-blue:a", Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: ns},
			Content: &fleetv1alpha1.ContentReference{Namespace: ns, Name: c.Name}}}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	const wait = 2 * time.Second
	startDeployer(t, ns, access.reader, wait)

	var got *fleetv1alpha1.BundleDeployment
	envtest.Eventually(t, 30*time.Second, func() error {
		got = access.bd(t, bd.Name)
		if a := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionApplied); a == nil || a.Status != metav1.ConditionFalse {
			return fmt.Errorf("Applied %+v, want False", a)
		}
		return nil
	})
	a := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionApplied)
	for _, want := range []string{ns + "/" + c.Name, "still not readable after 2s", "access Role (" + ns + "/" + accessRole + ") lacks it", "forbidden"} {
		if a.Reason != fleetv1alpha1.ReasonContentNotReadable || !strings.Contains(a.Message, want) {
			t.Errorf("Applied False/%s %q, want reason %s and a message with %q", a.Reason, a.Message, fleetv1alpha1.ReasonContentNotReadable, want)
		}
	}
	if state, _ := bundle.DeploymentState(got, got.Spec.DeploymentID); state != bundle.StateErrApplied {
		t.Errorf("the Bundle counts it %q, want %q", state, bundle.StateErrApplied)
	}
	if h := history.all(); h[0].Status != metav1.ConditionUnknown || h[0].Reason != fleetv1alpha1.ReasonContentNotReadable {
		t.Errorf("first Applied %+v, want Unknown/%s (a wait before the failure)", h[0], fleetv1alpha1.ReasonContentNotReadable)
	}
	access.grant(t, c.Name)
	access.waitApplied(t, bd.Name, "blue")
}
