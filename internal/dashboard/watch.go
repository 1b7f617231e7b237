package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

// watchKinds are the kinds a page may watch.
var watchKinds = map[string]func() client.ObjectList{
	"hosted":            func() client.ObjectList { return &managementv1alpha1.ClusterList{} },
	"fleet":             func() client.ObjectList { return &fleetv1alpha1.ClusterList{} },
	"bundles":           func() client.ObjectList { return &fleetv1alpha1.BundleList{} },
	"bundledeployments": func() client.ObjectList { return &fleetv1alpha1.BundleDeploymentList{} },
	"migrations":        func() client.ObjectList { return &migrationv1alpha1.CloudProviderMigrationList{} },
	"events":            func() client.ObjectList { return &corev1.EventList{} },
}

// watchSpec is one kind a page shows: where it was listed, from which resourceVersion, and an
// optional field selector.
type watchSpec struct {
	Kind string `json:"k"`
	// Namespaces: nil is all namespaces.
	Namespaces []string `json:"n,omitempty"`
	RV         string   `json:"r,omitempty"`
	Field      string   `json:"f,omitempty"`
}

// watchOf is the watch of a kind listed as info says (none when nothing could be listed).
func watchOf(kind string, info listInfo, field string) watchSpec {
	if !info.All && len(info.Namespaces) == 0 {
		return watchSpec{}
	}
	w := watchSpec{Kind: kind, RV: info.RV, Field: field}
	if !info.All {
		w.Namespaces = append([]string{}, info.Namespaces...)
	}
	return w
}

// setWatch gives the page its event stream URL (none when it shows nothing to watch).
func (h *Handler) setWatch(l *layoutData, all ...watchSpec) {
	var specs []watchSpec
	for _, s := range all {
		if s.Kind != "" {
			specs = append(specs, s)
		}
	}
	if len(specs) == 0 {
		l.Watch, l.WatchKey = "", ""
		return
	}
	b, _ := json.Marshal(specs)
	l.Watch = "/watch?s=" + base64.RawURLEncoding.EncodeToString(b)
	for i := range specs {
		specs[i].RV = ""
	}
	b, _ = json.Marshal(specs)
	sum := sha256.Sum256(b)
	l.WatchKey = hex.EncodeToString(sum[:8])
}

// Debouncing: the first change is sent after changeDelay (collecting the burst a reconcile
// makes), and changes are sent at most every minChangeInterval, so a busy fleet (heartbeats)
// does not re-render a page continuously.
const (
	changeDelay       = 200 * time.Millisecond
	minChangeInterval = 2 * time.Second
	keepAlive         = 25 * time.Second
)

// watch streams Server-Sent Events to a page: "change" whenever an object the page shows
// changed (watched with the viewer's identity, from the resourceVersion the page was read at),
// so the page fetches its content again; "ready" once every watch is open.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request, v *viewer) {
	raw, err := base64.RawURLEncoding.DecodeString(r.URL.Query().Get("s"))
	var specs []watchSpec
	if err == nil {
		err = json.Unmarshal(raw, &specs)
	}
	if err != nil || len(specs) == 0 || len(specs) > 10 {
		http.Error(w, "bad watch request", http.StatusBadRequest)
		return
	}
	for _, s := range specs {
		if watchKinds[s.Kind] == nil || len(s.Namespaces) > maxFallbackNamespaces {
			http.Error(w, "bad watch request", http.StatusBadRequest)
			return
		}
		for _, ns := range s.Namespaces {
			if !validNamespace(ns) {
				http.Error(w, "bad watch request", http.StatusBadRequest)
				return
			}
		}
		if s.Field != "" {
			if _, err := fields.ParseSelector(s.Field); err != nil {
				http.Error(w, "bad watch request", http.StatusBadRequest)
				return
			}
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	log := ctrl.LoggerFrom(ctx).WithValues("user", v.user)

	changes := make(chan string, 1)
	notify := func(kind string) {
		select {
		case changes <- kind:
		default:
		}
	}
	var wg sync.WaitGroup
	opened := make(chan struct{}, 64)
	count := 0
	for _, s := range specs {
		namespaces := s.Namespaces
		if namespaces == nil {
			namespaces = []string{""}
		}
		for _, ns := range namespaces {
			count++
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.follow(ctx, v, s, ns, notify, opened, log.WithValues("kind", s.Kind, "namespace", ns))
			}()
		}
	}
	defer wg.Wait()
	defer cancel()

	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 3000\n\n")
	flusher.Flush()

	readyPending := count
	var lastSent time.Time
	var pending *time.Timer
	var fire <-chan time.Time
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-opened:
			readyPending--
			if readyPending == 0 {
				fmt.Fprint(w, "event: ready\ndata: {}\n\n")
				flusher.Flush()
			}
		case <-changes:
			if pending != nil {
				continue
			}
			delay := changeDelay
			if wait := time.Until(lastSent.Add(minChangeInterval)); wait > delay {
				delay = wait
			}
			pending = time.NewTimer(delay)
			fire = pending.C
		case <-fire:
			pending, fire = nil, nil
			lastSent = time.Now()
			fmt.Fprint(w, "event: change\ndata: {}\n\n")
			flusher.Flush()
		case <-ping.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
		}
	}
}

// follow watches one kind in one namespace ("" all) until ctx ends, re-opening the watch where
// it left off when the API server closes it. It signals opened once, after the first watch
// opened (or failed for good), and notify on every change.
func (h *Handler) follow(ctx context.Context, v *viewer, s watchSpec, ns string, notify func(string), opened chan<- struct{}, log logr.Logger) {
	signalled := false
	signal := func() {
		if !signalled {
			signalled = true
			opened <- struct{}{}
		}
	}
	defer signal()
	rv := s.RV
	backoff := time.Second
	for ctx.Err() == nil {
		opts := &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, FieldSelector: s.Field}
		if rv == "" {
			// No starting point: start at the current state without replaying it as changes.
			rv = currentRV(ctx, v, s, ns)
			opts.ResourceVersion = rv
		}
		wi, err := v.client.Watch(ctx, watchKinds[s.Kind](), client.InNamespace(ns), &client.ListOptions{Raw: opts})
		if err != nil {
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || ctx.Err() != nil {
				return // nothing this viewer may watch here; the page says so
			}
			log.V(1).Info("Watch failed; retrying", "error", err.Error())
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		signal()
		backoff = time.Second
		rv = h.drain(ctx, wi, rv, notify, s.Kind)
	}
}

// drain reads one watch until it ends and returns the resourceVersion to resume from ("" when
// the start was too old: the page is told to refresh and the watch restarts at the present).
func (h *Handler) drain(ctx context.Context, wi watch.Interface, rv string, notify func(string), kind string) string {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv
			}
			switch ev.Type {
			case watch.Error:
				notify(kind)
				return ""
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
				}
			default:
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
				}
				notify(kind)
			}
		}
	}
}

// currentRV is the present resourceVersion of a kind (a one-item list).
func currentRV(ctx context.Context, v *viewer, s watchSpec, ns string) string {
	l := watchKinds[s.Kind]()
	if err := v.client.List(ctx, l, client.InNamespace(ns), client.Limit(1)); err != nil {
		return ""
	}
	return l.GetResourceVersion()
}
