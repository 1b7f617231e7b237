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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

// watchKinds are the kinds a page may watch.
var watchKinds = map[string]kindSpec{
	"hosted":   kindOf[managementv1alpha1.Cluster, managementv1alpha1.ClusterList](managementv1alpha1.GroupVersion, "clusters"),
	"fleet":    kindOf[fleetv1alpha1.Cluster, fleetv1alpha1.ClusterList](fleetv1alpha1.GroupVersion, "clusters"),
	"bundles":  kindOf[fleetv1alpha1.Bundle, fleetv1alpha1.BundleList](fleetv1alpha1.GroupVersion, "bundles"),
	"gitrepos": kindOf[fleetv1alpha1.GitRepo, fleetv1alpha1.GitRepoList](fleetv1alpha1.GroupVersion, "gitrepos"),
	"tokens": kindOf[fleetv1alpha1.ClusterRegistrationToken, fleetv1alpha1.ClusterRegistrationTokenList](fleetv1alpha1.GroupVersion,
		"clusterregistrationtokens"),
	"migrations": kindOf[migrationv1alpha1.CloudProviderMigration, migrationv1alpha1.CloudProviderMigrationList](migrationv1alpha1.GroupVersion, "cloudprovidermigrations"),
	"events":     kindOf[corev1.Event, corev1.EventList](corev1.SchemeGroupVersion, "events"),
	"bundledeployments": func() kindSpec {
		k := kindOf[fleetv1alpha1.BundleDeployment, fleetv1alpha1.BundleDeploymentList](fleetv1alpha1.GroupVersion, "bundledeployments")
		k.skipManifests, k.table = true, deploymentTable
		return k
	}(),
}

// watchSpec is one kind a page shows: where it was listed, at which resourceVersions, with
// which field selector.
type watchSpec struct {
	Kind string `json:"k"`
	// Namespaces: nil is all namespaces.
	Namespaces []string `json:"n,omitempty"`
	// RVs are the resourceVersions the page read, one per namespace (one for all).
	RVs   []string `json:"r,omitempty"`
	Field string   `json:"f,omitempty"`
}

// watchOf is the watch of a kind listed as info says (none when nothing could be listed).
func watchOf(kind string, info listInfo, field string) watchSpec {
	if !info.All && len(info.Namespaces) == 0 {
		return watchSpec{}
	}
	w := watchSpec{Kind: kind, RVs: info.RVs, Field: field}
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
		specs[i].RVs = nil
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
// changed since the page read it, so the page fetches its content again; "ready" once it
// follows every list. The changes come from the viewer's cache entries, which a watch made with
// the viewer's identity keeps current, so a page fetched after "change" already shows it.
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
	type follow struct{ kind, ns, field, rv string }
	var follows []follow
	for _, s := range specs {
		if _, ok := watchKinds[s.Kind]; !ok || len(s.Namespaces) > maxFallbackNamespaces {
			http.Error(w, "bad watch request", http.StatusBadRequest)
			return
		}
		if s.Field != "" {
			if _, err := fields.ParseSelector(s.Field); err != nil {
				http.Error(w, "bad watch request", http.StatusBadRequest)
				return
			}
		}
		namespaces := s.Namespaces
		if namespaces == nil {
			namespaces = []string{""}
		}
		for i, ns := range namespaces {
			if ns != "" && !validNamespace(ns) {
				http.Error(w, "bad watch request", http.StatusBadRequest)
				return
			}
			rv := ""
			if i < len(s.RVs) {
				rv = s.RVs[i]
			}
			follows = append(follows, follow{s.Kind, ns, s.Field, rv})
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	release, ok := h.openStream(v)
	if !ok {
		http.Error(w, fmt.Sprintf("too many live-update streams for this sign-in (%d): close some dashboard tabs", MaxStreamsPerViewer), http.StatusTooManyRequests)
		return
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	changes := make(chan struct{}, 1)
	changed := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	opened := make(chan struct{}, len(follows))
	var wg sync.WaitGroup
	for _, f := range follows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.followEntry(ctx, v, f.kind, f.ns, f.field, f.rv, changed, opened)
		}()
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

	readyPending := len(follows)
	var lastSent time.Time
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
			if fire != nil {
				continue
			}
			delay := changeDelay
			if wait := time.Until(lastSent.Add(minChangeInterval)); wait > delay {
				delay = wait
			}
			fire = time.After(delay)
		case <-fire:
			fire = nil
			lastSent = time.Now()
			fmt.Fprint(w, "event: change\ndata: {}\n\n")
			flusher.Flush()
		case <-ping.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
		}
	}
}

// followEntry follows one of the viewer's cache entries until ctx ends, calling changed on every
// change after rv. When the entry ends (it grew too old and was listed again, or its watch
// failed), it follows the fresh one. It signals opened once it follows (or cannot: forbidden).
func (h *Handler) followEntry(ctx context.Context, v *viewer, kind, ns, field, rv string, changed func(), opened chan<- struct{}) {
	signalled := false
	signal := func() {
		if !signalled {
			signalled = true
			opened <- struct{}{}
		}
	}
	defer signal()
	for ctx.Err() == nil {
		e, err := h.cache.get(ctx, v, kind, ns, field)
		if err != nil || e.forbidden {
			return // the page says what it could not list
		}
		ch, unsubscribe := e.subscribe()
		if e.resourceVersion() != rv {
			changed()
		}
		signal()
		done := false
		for !done {
			select {
			case <-ctx.Done():
				unsubscribe()
				return
			case _, ok := <-ch:
				if !ok {
					done = true
					break
				}
				changed()
			}
		}
		unsubscribe()
		rv = e.resourceVersion()
		// Do not spin on an entry that ends at once (the API server refusing the watch).
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
