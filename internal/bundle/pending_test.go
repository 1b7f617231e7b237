package bundle

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/server"
)

// staleBDs is a client whose BundleDeployment lists return old, when set (a cache that has not
// seen the latest updates yet), and which counts BundleDeployment updates.
type staleBDs struct {
	client.Client
	old              []fleetv1alpha1.BundleDeployment
	creates, updates atomic.Int64 // the reconciler writes from several workers
}

func (c *staleBDs) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*fleetv1alpha1.BundleDeployment); ok {
		c.creates.Add(1)
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *staleBDs) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*fleetv1alpha1.BundleDeploymentList); ok && c.old != nil {
		l.Items = nil
		for i := range c.old {
			l.Items = append(l.Items, *c.old[i].DeepCopy())
		}
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

func (c *staleBDs) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if _, ok := obj.(*fleetv1alpha1.BundleDeployment); ok {
		c.updates.Add(1)
	}
	return c.Client.Update(ctx, obj, opts...)
}

// TestNoSecondWriteFromStaleCache: a pass that starts before the cache shows the previous
// pass's BundleDeployment writes does not write them again: no second create (refused as
// AlreadyExists), no second update (from the stale copy, refused with a conflict); one write
// per BundleDeployment per change. Once the cache shows them, a later change updates them as
// usual.
func TestNoSecondWriteFromStaleCache(t *testing.T) {
	ctx := t.Context()
	objs := []client.Object{}
	for i := range 3 {
		objs = append(objs, cluster(fmt.Sprintf("c%d", i), map[string]string{"all": "yes"}))
	}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "app", UID: "bundle-uid"},
		Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"all": "yes"}}}},
			Resources: rawCM(t, "v1")}}
	c := fake.NewClientBuilder().WithScheme(server.Scheme()).WithObjects(append(objs, b)...).
		WithStatusSubresource(&fleetv1alpha1.Bundle{}, &fleetv1alpha1.BundleDeployment{}).
		WithIndex(&fleetv1alpha1.BundleDeployment{}, bundleIndex, func(o client.Object) []string { return []string{bundleKey(o)} }).Build()
	r := &Reconciler{Client: c, Workers: 2}
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
			t.Fatal(err)
		}
	}
	change := func(v string) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			t.Fatal(err)
		}
		b.Spec.Resources = rawCM(t, v)
		if err := c.Update(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	counting := &staleBDs{Client: c}
	r.Client = counting
	pass() // creates the three BundleDeployments
	// A cache that does not show them yet:
	counting.old = []fleetv1alpha1.BundleDeployment{}
	pass()
	if counting.creates.Load() != 3 {
		t.Fatalf("%d creates, want 3 (none again while the cache does not show them)", counting.creates.Load())
	}
	change("v2")
	var before fleetv1alpha1.BundleDeploymentList
	if err := c.List(ctx, &before); err != nil {
		t.Fatal(err)
	}
	counting = &staleBDs{Client: c}
	r.Client = counting
	pass() // updates them: the cache is current
	if counting.updates.Load() != 3 {
		t.Fatalf("%d updates, want 3", counting.updates.Load())
	}
	counting.old = before.Items // the next pass reads the copies from before those updates
	pass()
	if counting.updates.Load() != 3 {
		t.Errorf("a pass reading a stale cache wrote %d more updates, want none", counting.updates.Load()-3)
	}
	// The cache has caught up: a new change updates every one once.
	var now fleetv1alpha1.BundleDeploymentList
	if err := c.List(ctx, &now); err != nil {
		t.Fatal(err)
	}
	change("v3")
	counting = &staleBDs{Client: c, old: now.Items}
	r.Client = counting
	pass()
	if counting.updates.Load() != 3 {
		t.Errorf("%d updates after the cache caught up, want 3", counting.updates.Load())
	}
	if n := countAt(t, ctx, c, currentID(t, ctx, c, b)); n != 3 {
		t.Errorf("%d/3 BundleDeployments at the current version", n)
	}
}

// TestPendingCreateWaitsForTheCache: a create the pass's cache listing does not show yet is not
// made again — for minutes (a cache relisting tens of thousands of BundleDeployments can lag
// that long), and whatever other events of the object arrive meanwhile: only a listing that
// shows it ends the wait, or its deletion, after which the next pass creates it again.
func TestPendingCreateWaitsForTheCache(t *testing.T) {
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	p := &pendingWrites{now: func() time.Time { return now }}
	p.wroteCreate("c1", "app")
	p.wroteCreate("c2", "app")
	now = now.Add(5 * time.Minute)
	if !p.creating("c1", "app", false) || !p.creating("c2", "app", false) {
		t.Fatal("a create not in the cache after 5 minutes is made again")
	}
	p.deleted("c1", "app") // e.g. created, then deleted by someone, before this pass
	if p.creating("c1", "app", false) {
		t.Error("a deleted BundleDeployment is still held as pending")
	}
	if p.creating("c2", "app", true) || p.creating("c2", "app", false) {
		t.Error("a create the cache shows is still pending")
	}
	p.wroteCreate("c3", "app")
	now = now.Add(createdFor + time.Second)
	if p.creating("c3", "app", false) {
		t.Error("a create never seen is held off past createdFor")
	}
}
