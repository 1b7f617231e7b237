package dashboard

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// viewCache keeps, per viewer, the lists their pages show, filled and kept current by a list and
// a watch made with the viewer's own credential (never drover's): a page is read from memory
// and a change costs one watch event, not another list of the whole fleet.
//
// An entry is listed again once it is maxAge old, in the background while it is in use (the
// fresh list replaces it when done), and is not served past twice that age: rights taken away
// from a viewer stop showing within that time (the API server authorizes a watch only when it
// opens). An entry unused for idle is dropped. A list the viewer may not make is remembered as
// forbidden the same way.
type viewCache struct {
	maxAge, idle time.Duration
	max          int
	now          func() time.Time
	log          logr.Logger

	mu      sync.Mutex
	entries map[string]*entry
	janitor bool
}

// entry is one viewer's list of one kind in one namespace ("" all) with one field selector.
type entry struct {
	key, kind, namespace, field string
	created                     time.Time
	// client watches and rest lists, with the viewer's credential.
	client client.WithWatch
	rest   rest.Interface
	// refreshing: a fresh list to replace this entry is on its way (vc.mu).
	refreshing bool

	// ready is closed once the first list finished; then forbidden or err say how.
	ready     chan struct{}
	forbidden bool
	err       error

	mu       sync.RWMutex
	objects  map[string]client.Object
	rv       string
	lastUsed time.Time
	dead     bool
	subs     map[chan struct{}]struct{}
	stop     context.CancelFunc
	// staleSince is when the entry was last known current, while its watch cannot be opened
	// again (the API server does not answer); zero while it is followed.
	staleSince time.Time
}

func newViewCache(maxAge time.Duration, now func() time.Time, log logr.Logger) *viewCache {
	return &viewCache{maxAge: maxAge, idle: 2 * time.Minute, max: 500, now: now, log: log, entries: map[string]*entry{}}
}

// get returns the viewer's current entry for a kind, listing it first if there is none (or the
// one there is too old).
func (vc *viewCache) get(ctx context.Context, v *viewer, kind, ns, field string) (*entry, error) {
	key := tokenKey(v.secret) + "\x00" + kind + "\x00" + ns + "\x00" + field
	now := vc.now()
	vc.mu.Lock()
	e := vc.entries[key]
	if e != nil && (e.isDead() || now.Sub(e.created) > 2*vc.maxAge) {
		delete(vc.entries, key)
		e.kill()
		e = nil
	}
	switch {
	case e == nil:
		vc.evict()
		e = vc.newEntry(key, kind, ns, field, v.client, v.rest)
		vc.entries[key] = e
		if !vc.janitor {
			vc.janitor = true
			go vc.sweep()
		}
		vc.mu.Unlock()
		vc.start(e)
	case now.Sub(e.created) > vc.maxAge && !e.refreshing:
		e.refreshing = true
		e.client, e.rest = v.client, v.rest // the viewer's latest credential
		vc.mu.Unlock()
		go vc.refresh(e)
	default:
		vc.mu.Unlock()
	}
	e.touch(now)
	select {
	case <-e.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e.err != nil {
		vc.drop(e)
		return nil, e.err
	}
	return e, nil
}

func (vc *viewCache) newEntry(key, kind, ns, field string, c client.WithWatch, rc rest.Interface) *entry {
	now := vc.now()
	return &entry{key: key, kind: kind, namespace: ns, field: field, created: now, client: c, rest: rc, ready: make(chan struct{}),
		objects: map[string]client.Object{}, subs: map[chan struct{}]struct{}{}, lastUsed: now}
}

// refresh lists an old entry again and puts the fresh one in its place; the old one ends (its
// subscribers follow the fresh one).
func (vc *viewCache) refresh(old *entry) {
	vc.mu.Lock()
	fresh := vc.newEntry(old.key, old.kind, old.namespace, old.field, old.client, old.rest)
	vc.mu.Unlock()
	vc.start(fresh)
	<-fresh.ready
	vc.mu.Lock()
	if fresh.err == nil && vc.entries[old.key] == old {
		vc.entries[old.key] = fresh
	} else {
		fresh.kill()
	}
	vc.mu.Unlock()
	if fresh.err != nil {
		vc.log.V(1).Info("Listing again failed", "kind", old.kind, "namespace", old.namespace, "error", fresh.err.Error())
	}
	vc.drop(old)
}

// start lists the entry (callers wait on ready) and keeps it current with a watch.
func (vc *viewCache) start(e *entry) {
	c, rc := e.client, e.rest
	ctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.stop = cancel
	e.mu.Unlock()
	go func() {
		defer cancel()
		rv, err := e.relist(ctx, rc)
		switch {
		case apierrors.IsForbidden(err):
			e.forbidden = true
		case err != nil:
			e.err = err
		}
		close(e.ready)
		if err != nil {
			return
		}
		e.follow(ctx, c, rc, rv, vc.now, vc.log.WithValues("kind", e.kind, "namespace", e.namespace))
		e.kill()
		vc.drop(e)
	}()
}

// relist lists the kind and replaces the entry's objects.
func (e *entry) relist(ctx context.Context, rc rest.Interface) (string, error) {
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	objects, rv, err := listStream(lctx, rc, watchKinds[e.kind], e.namespace, e.field)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	e.objects, e.rv = objects, rv
	e.mu.Unlock()
	e.notify()
	return rv, nil
}

// follow applies the watch's events to the entry until ctx ends or the viewer may no longer
// watch; the watch is re-opened where it stopped, and after a gap too long for the API server
// (410 Gone) the kind is listed again.
//
// While the watch cannot be opened again, the entry is stale since the last one ended: pages
// served from it say so.
func (e *entry) follow(ctx context.Context, c client.WithWatch, rc rest.Interface, rv string, now func() time.Time, log logr.Logger) {
	backoff := time.Second
	current := now() // when the entry was last known current
	// wait backs off after a failure, the entry stale meanwhile; false when ctx ended.
	wait := func() bool {
		e.setStale(current)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
		return true
	}
	gone := false
	for ctx.Err() == nil {
		if gone {
			// A list the API server does not answer keeps the entry, stale, and is tried again;
			// any other failure (rights taken away) ends it.
			next, err := e.relist(ctx, rc)
			switch {
			case err == nil:
				rv, gone, current = next, false, now()
			case !apiUnreachable(err) || !wait():
				return
			default:
				continue
			}
		}
		opts := &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, FieldSelector: e.field}
		wi, err := c.Watch(ctx, watchKinds[e.kind].list(), client.InNamespace(e.namespace), &client.ListOptions{Raw: opts})
		if err != nil {
			if ctx.Err() != nil || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				return
			}
			log.V(1).Info("Watch failed; retrying", "error", err.Error())
			if !wait() {
				return
			}
			continue
		}
		backoff = time.Second
		e.setStale(time.Time{})
		rv, gone = e.apply(ctx, wi, rv)
		current = now()
	}
}

// apply reads one watch until it ends; gone reports that its start was too old.
func (e *entry) apply(ctx context.Context, wi watch.Interface, rv string) (string, bool) {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv, false
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv, false
			}
			if ev.Type == watch.Error {
				return rv, true
			}
			o, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			rv = o.GetResourceVersion()
			e.mu.Lock()
			switch ev.Type {
			case watch.Added, watch.Modified:
				e.objects[objectKey(o)] = trim(o)
			case watch.Deleted:
				delete(e.objects, objectKey(o))
			}
			e.rv = rv
			e.mu.Unlock()
			if ev.Type != watch.Bookmark {
				e.notify()
			}
		}
	}
}

// setStale records since when the entry may be out of date (zero: it is followed).
func (e *entry) setStale(since time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.staleSince = since
}

// stale is since when the entry may be out of date (zero: it is current).
func (e *entry) stale() time.Time {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.staleSince
}

func objectKey(o client.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// trim drops what no page shows and would only take memory: managed fields; of a
// BundleDeployment, all but what a Table row of it carries (trimDeployment).
func trim(o client.Object) client.Object {
	if bd, ok := o.(*fleetv1alpha1.BundleDeployment); ok {
		return trimDeployment(bd)
	}
	o.SetManagedFields(nil)
	return o
}

// snapshot is the entry's objects (shared: callers must not change them) and resourceVersion.
func (e *entry) snapshot() ([]client.Object, string) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]client.Object, 0, len(e.objects))
	for _, o := range e.objects {
		out = append(out, o)
	}
	return out, e.rv
}

func (e *entry) resourceVersion() string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.rv
}

func (e *entry) touch(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.After(e.lastUsed) {
		e.lastUsed = now
	}
}

// subscribe returns a channel told of every change; it is closed when the entry ends.
func (e *entry) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead {
		close(ch)
		return ch, func() {}
	}
	e.subs[ch] = struct{}{}
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if _, ok := e.subs[ch]; ok {
			delete(e.subs, ch)
			close(ch)
		}
	}
}

func (e *entry) notify() {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for ch := range e.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (e *entry) subscribed() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.subs) > 0
}

func (e *entry) isDead() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.dead
}

// kill stops the entry's watch and ends its subscriptions.
func (e *entry) kill() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead {
		return
	}
	e.dead = true
	if e.stop != nil {
		e.stop()
	}
	for ch := range e.subs {
		close(ch)
	}
	e.subs = nil
}

func (vc *viewCache) drop(e *entry) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if vc.entries[e.key] == e {
		delete(vc.entries, e.key)
	}
	e.kill()
}

// evict makes room for one more entry by dropping the least recently used unsubscribed one.
// vc.mu is held.
func (vc *viewCache) evict() {
	if len(vc.entries) < vc.max {
		return
	}
	var oldest *entry
	for _, e := range vc.entries {
		if e.subscribed() {
			continue
		}
		if oldest == nil || e.lastUsedAt().Before(oldest.lastUsedAt()) {
			oldest = e
		}
	}
	if oldest != nil {
		delete(vc.entries, oldest.key)
		oldest.kill()
	}
}

func (e *entry) lastUsedAt() time.Time {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.lastUsed
}

// sweep drops idle and too old entries every few seconds while there are entries; an old
// entry with subscribers ends them, and their streams open a fresh one.
func (vc *viewCache) sweep() {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for range tick.C {
		now := vc.now()
		vc.mu.Lock()
		for k, e := range vc.entries {
			age := now.Sub(e.created)
			switch {
			case age > 2*vc.maxAge || (!e.subscribed() && now.Sub(e.lastUsedAt()) > vc.idle):
				delete(vc.entries, k)
				e.kill()
			case age > vc.maxAge && e.subscribed() && !e.refreshing:
				// A page is open on it: list again before it has to end.
				e.refreshing = true
				go vc.refresh(e)
			}
		}
		if len(vc.entries) == 0 {
			vc.janitor = false
			vc.mu.Unlock()
			return
		}
		vc.mu.Unlock()
	}
}

// awaitWrite waits, up to timeout, until the viewer's cached lists of kind that can hold the
// object key (namespace/name) show it at resourceVersion rv or later, so that the page an action
// redirects to shows the action's write rather than the list from before it (the write reaches
// the cache through a watch, a few milliseconds later).
func (vc *viewCache) awaitWrite(ctx context.Context, v *viewer, kind, key, rv string, timeout time.Duration) {
	prefix := tokenKey(v.secret) + "\x00" + kind + "\x00"
	ns, _, _ := strings.Cut(key, "/")
	vc.mu.Lock()
	var es []*entry
	for k, e := range vc.entries {
		if strings.HasPrefix(k, prefix) && e.field == "" && (e.namespace == "" || e.namespace == ns) {
			es = append(es, e)
		}
	}
	vc.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, e := range es {
		if !e.await(ctx, key, rv) {
			return
		}
	}
}

// await waits until the entry shows key at rv or later (or is dead); false if ctx ended first.
func (e *entry) await(ctx context.Context, key, rv string) bool {
	ch, unsubscribe := e.subscribe()
	defer unsubscribe()
	for !e.shows(key, rv) {
		select {
		case <-ctx.Done():
			return false
		case _, ok := <-ch:
			if !ok {
				return true // dead: nothing more to wait for
			}
		}
	}
	return true
}

// shows: the entry holds key at rv or a later resourceVersion (they are etcd revisions in
// practice; one that is not a number must match exactly), or the entry is dead.
func (e *entry) shows(key, rv string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.dead {
		return true
	}
	o := e.objects[key]
	if o == nil {
		return false
	}
	got := o.GetResourceVersion()
	a, err1 := strconv.ParseUint(got, 10, 64)
	b, err2 := strconv.ParseUint(rv, 10, 64)
	if err1 != nil || err2 != nil {
		return got == rv
	}
	return a >= b
}
