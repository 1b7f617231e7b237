package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/bundle/agentmgmt"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/kubeevents"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/controller"
	"github.com/droverhq/drover/internal/registration/cluster"
)

// layoutData is what every page's frame shows.
type layoutData struct {
	Title string
	// Nav is the active section.
	Nav string
	// Mode is "server" (token sign-in) or "local" (drover dashboard).
	Mode string
	User string
	// Namespace is the ?namespace= selection ("" all).
	Namespace string
	CSRF      string
	// Lists say where each kind was listed; restricted ones are shown as a notice.
	Lists []listInfo
	// Watch is the event stream URL of the page's kinds; WatchKey identifies it without the
	// resource versions (the page reconnects only when the key changes).
	Watch, WatchKey string
	// Path is the page's path, for the namespace selector.
	Path string
	// StaleSince and StaleAge, when set, say since when (and how long ago) the page's data may
	// be out of date: it comes from lists the API server no longer keeps current.
	StaleSince, StaleAge string
	// Filter is a list page's filter (nil on other pages).
	Filter *listFilter
}

// Query is the page's query as shown, namespace selection and filter ("" or "?..."): the
// actions' forms carry it, so that they return to the page as it was.
func (l *layoutData) Query() string { return pageQuery(l.Namespace, l.Filter) }

// setStale fills the stale notice from the page's lists (each says since when it may be out
// of date, zero when current).
func (l *layoutData) setStale(now time.Time) {
	var since time.Time
	for _, i := range l.Lists {
		if !i.Stale.IsZero() && (since.IsZero() || i.Stale.Before(since)) {
			since = i.Stale
		}
	}
	if since.IsZero() {
		return
	}
	l.StaleSince, l.StaleAge = since.UTC().Format(time.RFC3339), humanAge(now.Sub(since))
}

// Notices are the lists that do not cover every namespace.
func (l *layoutData) Notices() []listInfo {
	var out []listInfo
	for _, i := range l.Lists {
		if i.Restricted() {
			out = append(out, i)
		}
	}
	return out
}

// pageFunc reads what a page shows. It fills l (lists, watches) and returns the template and data.
type pageFunc func(ctx context.Context, r *http.Request, v *viewer, s *scope, l *layoutData) (string, any, error)

// errNotFound is a page's object that does not exist (or is not visible).
type errNotFound struct{ what string }

func (e errNotFound) Error() string { return e.what + " not found" }

// page serves a GET page: sign-in redirect without a credential, the page or its fragment
// (X-Drover-Fragment: the content region only, for live updates).
func (h *Handler) page(f pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := h.viewerFor(r)
		if err != nil {
			h.signIn(w, r, err)
			return
		}
		l := &layoutData{Mode: h.mode(), User: v.user, CSRF: v.csrfToken(), Path: r.URL.Path}
		s, err := h.newScope(r, v)
		if err != nil {
			h.errorPage(w, r, l, http.StatusBadRequest, err)
			return
		}
		l.Namespace = s.namespace
		start := time.Now()
		name, data, err := f(r.Context(), r, v, s, l)
		// Server-Timing shows, in the browser's developer tools, how long the page's reads
		// (through the API server) took; render adds the template's time.
		w.Header().Set("Server-Timing", fmt.Sprintf("read;dur=%.1f", float64(time.Since(start).Microseconds())/1000))
		var nf errNotFound
		switch {
		case errors.Is(err, errUnauthorized):
			h.forget(v.secret)
			h.signIn(w, r, err)
			return
		case errors.As(err, &nf):
			h.errorPage(w, r, l, http.StatusNotFound, err)
			return
		case err != nil:
			h.readFailed(w, r, l, err)
			return
		}
		l.setStale(h.opts.Now())
		status := http.StatusOK
		if l.Filter.Invalid() {
			// The page says which parameter is invalid, and shows no rows.
			status = http.StatusBadRequest
		}
		h.render(w, r, status, name, l, data)
	})
}

func (h *Handler) mode() string {
	if h.opts.Local != nil {
		return "local"
	}
	return "server"
}

// signIn answers a page request without a valid credential.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, errLogin) && !errors.Is(err, errUnauthorized) {
		h.readFailed(w, r, &layoutData{Mode: h.mode()}, err)
		return
	}
	if r.Header.Get("X-Drover-Fragment") != "" {
		http.Error(w, "sign in again", http.StatusUnauthorized)
		return
	}
	if h.opts.Local != nil {
		h.localKey(w, r)
		return
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		// An API client, not a browser: a sign-in page would not help it.
		msg := "The management API server did not accept the bearer token of the Authorization header."
		if !strings.HasPrefix(auth, "Bearer ") {
			msg = "The dashboard takes an Authorization header of the form: Bearer TOKEN."
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="drover dashboard"`)
		http.Error(w, msg, http.StatusUnauthorized)
		return
	}
	q := url.Values{"next": {r.URL.RequestURI()}}
	if errors.Is(err, errUnauthorized) {
		setCookie(w, r, sessionCookie, "", -1)
		q.Set("expired", "1")
	}
	http.Redirect(w, r, "/login?"+q.Encode(), http.StatusSeeOther)
}

// --- overview ---

type overviewData struct {
	HostedTotal, HostedConflicts int
	// HostedNotJoined: hosted clusters whose join failed (fleetPlace's "bad").
	HostedNotJoined         int
	Phases                  []string
	Providers               []providerCounts
	FleetTotal              int
	Connected, Disconnected int
	// Unreachable: agents connected that cannot reach their cluster's API server; FleetNotReady:
	// Ready=False for another reason. Neither counts as connected (drover check's verdict).
	Unreachable, FleetNotReady int
	Waiting                    int
	// HostedNotReady: hosted clusters whose Ready condition is False (SecretNotFound,
	// CredentialsRejected, ...), which the phase table alone shows as pending.
	HostedNotReady               int
	BundlesTotal, BundlesReady   int
	BundlesNotReady              int
	GitReposTotal, GitReposError int
	GitReposPaused               int
	MigrationsTotal              int
	MigrationsRunning            int
	MigrationsFailed             int
	MigrationsSucceeded          int
	Events                       []eventRow
}

type providerCounts struct {
	Provider string
	Counts   []int
	Total    int
}

// phaseOrder is the overview's phase columns ("" is a cluster not read yet: pending).
var phaseOrder = []string{"active", "creating", "importing", "updating", "deleting", "failed", "pending"}

func (h *Handler) overview(ctx context.Context, _ *http.Request, _ *viewer, s *scope, l *layoutData) (string, any, error) {
	l.Title, l.Nav = "Overview", "overview"
	d := &overviewData{Phases: phaseOrder}
	var (
		hostedClusters         []managementv1alpha1.Cluster
		fleetClusters          []fleetv1alpha1.Cluster
		bundles                []fleetv1alpha1.Bundle
		gitRepos               []fleetv1alpha1.GitRepo
		migrations             []migrationv1alpha1.CloudProviderMigration
		events                 []corev1.Event
		hi, fi, bi, gi, mi, ei listInfo
	)
	err := together(
		func() (err error) { hostedClusters, hi, err = listHosted(ctx, s); return err },
		func() (err error) { fleetClusters, fi, err = listFleet(ctx, s); return err },
		func() (err error) { bundles, bi, err = listBundles(ctx, s); return err },
		func() (err error) { gitRepos, gi, err = listGitRepos(ctx, s); return err },
		func() (err error) { migrations, mi, err = listMigrations(ctx, s); return err },
		func() (err error) {
			events, ei, err = listScoped[corev1.Event](ctx, s, "events", "Warning events", "type="+corev1.EventTypeWarning)
			return err
		},
	)
	if err != nil {
		return "", nil, err
	}
	l.Lists = []listInfo{hi, fi, bi, gi, mi, ei}
	h.setWatch(l, watchOf("hosted", hi, ""), watchOf("fleet", fi, ""), watchOf("bundles", bi, ""), watchOf("gitrepos", gi, ""), watchOf("migrations", mi, ""),
		watchOf("events", ei, "type="+corev1.EventTypeWarning))

	// The counts use the states the list pages' filters select by (hostedStates, connState,
	// bundleStates, newGitRepoView), so that each count's link shows the rows counted.
	counts := map[string]map[string]int{}
	for i := range hostedClusters {
		c := &hostedClusters[i]
		p, states := providerName(c), hostedStates(c)
		if counts[p] == nil {
			counts[p] = map[string]int{}
		}
		counts[p][hostedPhase(c)]++
		for _, st := range states {
			switch st {
			case hostedStateConflict:
				d.HostedConflicts++
			case hostedStateNotJoined:
				d.HostedNotJoined++
			case hostedStateNotReady:
				d.HostedNotReady++
			}
		}
	}
	d.HostedTotal = len(hostedClusters)
	for _, p := range sortedKeys(counts) {
		row := providerCounts{Provider: p}
		for _, ph := range phaseOrder {
			row.Counts = append(row.Counts, counts[p][ph])
			row.Total += counts[p][ph]
		}
		d.Providers = append(d.Providers, row)
	}
	d.FleetTotal = len(fleetClusters)
	for i := range fleetClusters {
		switch connState(&fleetClusters[i]) {
		case stateConnected:
			d.Connected++
		case stateDisconnected:
			d.Disconnected++
		case stateUnreachable:
			d.Unreachable++
		case stateNotReady:
			d.FleetNotReady++
		default:
			d.Waiting++
		}
	}
	d.BundlesTotal = len(bundles)
	for i := range bundles {
		if slices.Contains(bundleStates(&bundles[i]), bundleReady) {
			d.BundlesReady++
		}
	}
	d.BundlesNotReady = d.BundlesTotal - d.BundlesReady
	d.GitReposTotal = len(gitRepos)
	for i := range gitRepos {
		switch newGitRepoView(&gitRepos[i]).State {
		case gitStateError:
			d.GitReposError++
		case gitStatePaused:
			d.GitReposPaused++
		}
	}
	d.MigrationsTotal = len(migrations)
	for i := range migrations {
		switch migrations[i].Status.Phase {
		case migrationv1alpha1.PhaseFailed:
			d.MigrationsFailed++
		case migrationv1alpha1.PhaseSucceeded:
			d.MigrationsSucceeded++
		case migrationv1alpha1.PhaseRolledBack:
		default:
			d.MigrationsRunning++
		}
	}
	d.Events = eventRows(events, 20, s.namespace)
	return "overview", d, nil
}

// --- hosted clusters ---

type hostedRow struct {
	Namespace, Name, Provider, Location, Version, Phase string
	Ready, Synced                                       string
	// ReadyReason and ReadyMessage: the Ready condition's, when it is not True.
	ReadyReason, ReadyMessage string
	Conflict                  bool
	ConflictMessage           string
	LastRefresh               string
	Imported                  bool
	Policy                    string
	// Fleet is the cluster's place in the fleet: "agent ready", "joined" (agent not checked in
	// yet), "out" (does not join), the Joined condition's reason when it could not join
	// (AccessEntryMissing, EndpointPrivate, ...), or "" before the join controller looked.
	Fleet, FleetMessage string
	FleetState          string // a badge class: good, info, bad, muted
}

// fleetPlace says where a hosted cluster is in the fleet: the words shown, the Joined
// condition's message and a badge class (bad: the join failed).
func fleetPlace(c *managementv1alpha1.Cluster) (place, msg, state string) {
	p, joined := c.FleetPlace()
	if joined == nil {
		return "", "", "muted"
	}
	switch p {
	case managementv1alpha1.FleetPlaceAgentReady:
		return "agent ready", joined.Message, "good"
	case managementv1alpha1.FleetPlaceJoined:
		if agent := meta.FindStatusCondition(c.Status.Fleet.Conditions, managementv1alpha1.ConditionAgentReady); agent != nil {
			return "joined", agent.Message, "info"
		}
		return "joined", joined.Message, "info"
	case managementv1alpha1.FleetPlaceWaiting:
		return "waiting", joined.Message, "info"
	case managementv1alpha1.FleetPlaceOut, managementv1alpha1.FleetPlaceLeaving:
		return string(p), joined.Message, "muted"
	}
	return joined.Reason, joined.Message, "bad"
}

// hostedNotReady is a hosted cluster's Ready condition when it is False (nil otherwise).
func hostedNotReady(c *managementv1alpha1.Cluster) *metav1.Condition {
	cond := meta.FindStatusCondition(c.Status.Conditions, hosted.CondReady)
	if cond == nil || cond.Status != metav1.ConditionFalse {
		return nil
	}
	return cond
}

func listHosted(ctx context.Context, s *scope) ([]managementv1alpha1.Cluster, listInfo, error) {
	return listScoped[managementv1alpha1.Cluster](ctx, s, "hosted", "hosted clusters", "")
}

func (h *Handler) hostedList(ctx context.Context, r *http.Request, _ *viewer, s *scope, l *layoutData) (string, any, error) {
	l.Title, l.Nav = "Hosted clusters", "hosted"
	f := newFilter(r, l, "hosted clusters", hostedStateChoices)
	clusters, info, err := listHosted(ctx, s)
	if err != nil {
		return "", nil, err
	}
	l.Lists = []listInfo{info}
	h.setWatch(l, watchOf("hosted", info, ""))
	now := h.opts.Now()
	rows := make([]hostedRow, 0, len(clusters))
	for i := range clusters {
		c := &clusters[i]
		if !f.match(c.Namespace, c.Name, c.Labels, hostedStates(c)) {
			continue
		}
		row := hostedRow{Namespace: c.Namespace, Name: c.Name, Provider: providerName(c), Location: orDash(c.Location()), Version: orDash(c.KubernetesVersion()),
			Phase: orDash(string(c.Status.Phase)), Ready: condStatus(c.Status.Conditions, hosted.CondReady),
			Synced: condStatus(c.Status.Conditions, hosted.CondSynced), LastRefresh: ago(now, c.Status.LastRefreshTime),
			Imported: c.Imported(), Policy: string(c.Spec.SyncPolicy)}
		if cond := meta.FindStatusCondition(c.Status.Conditions, hosted.CondConflict); cond != nil && cond.Status == metav1.ConditionTrue {
			row.Conflict, row.ConflictMessage = true, cond.Message
		}
		if cond := meta.FindStatusCondition(c.Status.Conditions, hosted.CondReady); cond != nil && cond.Status != metav1.ConditionTrue {
			row.ReadyReason, row.ReadyMessage = cond.Reason, cond.Message
		}
		row.Fleet, row.FleetMessage, row.FleetState = fleetPlace(c)
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Name < rows[j].Name
	})
	return "hosted", rows, nil
}

type hostedClusterData struct {
	Cluster    *managementv1alpha1.Cluster
	Provider   string
	Location   string
	Version    string
	Policy     string
	Imported   bool
	Conditions []metav1.Condition
	Fleet      []metav1.Condition
	FleetName  string
	Fields     []fieldRow
	// NotRead: the provider has not been read yet; the fields are the config only.
	NotRead     bool
	LastRefresh string
	Timeline    []eventRow
	// CanRefresh: a SelfSubjectAccessReview says the viewer may patch the cluster.
	CanRefresh  bool
	Refreshed   bool
	RefreshPath string
}

func (h *Handler) hostedCluster(ctx context.Context, r *http.Request, v *viewer, s *scope, l *layoutData) (string, any, error) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if !validNamespace(ns) {
		return "", nil, errNotFound{"namespace " + ns}
	}
	l.Title, l.Nav = "Hosted cluster "+ns+"/"+name, "hosted"
	one := &scope{namespace: ns, viewer: v, cache: s.cache}
	found, ci, err := listScoped[managementv1alpha1.Cluster](ctx, one, "hosted", "the hosted cluster", "metadata.name="+name)
	switch {
	case err != nil:
		return "", nil, err
	case len(ci.Denied) > 0:
		return "", nil, errNotFound{fmt.Sprintf("hosted cluster %s/%s (you may not read it)", ns, name)}
	case len(found) == 0:
		return "", nil, errNotFound{fmt.Sprintf("hosted cluster %s/%s", ns, name)}
	}
	c := &found[0]
	events, ei, err := listScoped[corev1.Event](ctx, one, "events", "events of the cluster", "involvedObject.uid="+string(c.UID))
	if err != nil {
		return "", nil, err
	}
	l.Lists = []listInfo{ei}
	h.setWatch(l, watchOf("hosted", ci, "metadata.name="+name), watchOf("events", ei, "involvedObject.uid="+string(c.UID)))
	d := &hostedClusterData{Cluster: c, Provider: providerName(c), Location: orDash(c.Location()), Version: orDash(c.KubernetesVersion()), Policy: string(c.Spec.SyncPolicy),
		Imported: c.Imported(), Conditions: c.Status.Conditions, LastRefresh: ago(h.opts.Now(), c.Status.LastRefreshTime),
		Refreshed:   r.URL.Query().Get("refreshed") != "",
		RefreshPath: "/hosted/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/refresh"}
	if f := c.Status.Fleet; f != nil {
		d.Fleet, d.FleetName = f.Conditions, f.ClusterName
	}
	if p := providerOf(c); p != nil {
		rows, notRead, err := fieldRows(p, c, events)
		if err != nil {
			return "", nil, err
		}
		d.Fields, d.NotRead = rows, notRead
	}
	d.Timeline = eventRows(events, 0, "")
	allowed, err := canPatch(ctx, v, c)
	if err != nil {
		return "", nil, err
	}
	d.CanRefresh = allowed
	return "cluster", d, nil
}

// canPatch asks the API server whether the viewer may patch the cluster.
func canPatch(ctx context.Context, v *viewer, c *managementv1alpha1.Cluster) (bool, error) {
	return canPatchNamed(ctx, v, c.Namespace, c.Name, managementv1alpha1.GroupVersion.Group, "clusters")
}

// canPatchIn asks the API server whether the viewer may patch every object of a resource in a
// namespace.
func canPatchIn(ctx context.Context, v *viewer, namespace, group, resource string) (bool, error) {
	return canPatchNamed(ctx, v, namespace, "", group, resource)
}

func canPatchNamed(ctx context.Context, v *viewer, namespace, name, group, resource string) (bool, error) {
	rev := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Name: name, Verb: "patch",
			Group: group, Resource: resource}}}
	if err := v.client.Create(ctx, rev); err != nil {
		if apierrors.IsUnauthorized(err) {
			return false, errUnauthorized
		}
		return false, fmt.Errorf("check whether you may patch %s: %w", resource, err)
	}
	return rev.Status.Allowed, nil
}

// refreshNow asks drover to re-read a hosted cluster now: it sets the refresh annotation the
// hosted reconciler acts on (a new value triggers a pass), as the viewer. A 403 from the API
// server is the answer: nothing changes.
func (h *Handler) refreshNow(w http.ResponseWriter, r *http.Request, v *viewer) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if err := checkCSRF(r, v); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if !validNamespace(ns) {
		http.Error(w, "no such namespace", http.StatusNotFound)
		return
	}
	value := h.opts.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, hosted.RefreshAnnotation, value)
	c := &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	err := v.client.Patch(r.Context(), c, client.RawPatch(types.MergePatchType, []byte(patch)))
	if patchFailed(w, err, v, "refresh", "hosted cluster", ns, name) {
		return
	}
	q := url.Values{"refreshed": {"1"}}
	if sel := selected(r); sel != "" {
		q.Set("namespace", sel)
	}
	http.Redirect(w, r, "/hosted/"+url.PathEscape(ns)+"/"+url.PathEscape(name)+"?"+q.Encode(), http.StatusSeeOther)
}

// pausable is a kind the dashboard pauses and resumes, as drover bundle|gitrepo pause|resume do.
type pausable struct {
	kind string
	// cacheKind is the kind's name in the viewer's cache ("bundles").
	cacheKind string
	// object is the object to patch; patch the merge patch setting its paused field.
	object func(ns, name string) client.Object
	patch  func(paused bool) string
	// back is the page to return to.
	back string
}

var (
	bundlePause = pausable{kind: "Bundle", cacheKind: "bundles", back: "/bundles",
		object: func(ns, name string) client.Object {
			return &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		},
		patch: func(paused bool) string { return fmt.Sprintf(`{"spec":{"rollout":{"paused":%t}}}`, paused) }}
	gitRepoPause = pausable{kind: "GitRepo", cacheKind: "gitrepos", back: "/gitrepos",
		object: func(ns, name string) client.Object {
			return &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		},
		patch: func(paused bool) string { return fmt.Sprintf(`{"spec":{"paused":%t}}`, paused) }}
)

// pause pauses or resumes an object of kind p with the viewer's identity: a Bundle's rollout
// (spec.rollout.paused), a GitRepo's fetching (spec.paused).
func (h *Handler) pause(p pausable) func(w http.ResponseWriter, r *http.Request, v *viewer) {
	return func(w http.ResponseWriter, r *http.Request, v *viewer) {
		ns, name, action := r.PathValue("namespace"), r.PathValue("name"), r.PathValue("action")
		if err := checkCSRF(r, v); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		if !validNamespace(ns) || (action != "pause" && action != "resume") {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		patch := client.RawPatch(types.MergePatchType, []byte(p.patch(action == "pause")))
		obj := p.object(ns, name)
		err := v.client.Patch(r.Context(), obj, patch, client.FieldOwner("drover-dashboard"))
		if patchFailed(w, err, v, action, p.kind, ns, name) {
			return
		}
		// The page redirected to shows the pause, not the list from before it.
		h.cache.awaitWrite(r.Context(), v, p.cacheKind, ns+"/"+name, obj.GetResourceVersion(), 2*time.Second)
		// Back to the page as it was: its namespace selection and filter.
		http.Redirect(w, r, p.back+backQuery(r), http.StatusSeeOther) //nolint:gosec // G710: p.back is this handler's fixed path; the query is url.Values-encoded
	}
}

// patchFailed answers an action's failed patch (the API server's refusal as 403, with whose)
// and reports whether it did.
func patchFailed(w http.ResponseWriter, err error, v *viewer, action, kind, ns, name string) bool {
	switch {
	case err == nil:
		return false
	case apierrors.IsForbidden(err):
		http.Error(w, fmt.Sprintf("You may not %s %s %s/%s: the API server refused to let %s patch it.", action, kind, ns, name, v.user), http.StatusForbidden)
	case apierrors.IsNotFound(err):
		http.Error(w, fmt.Sprintf("%s %s/%s not found", kind, ns, name), http.StatusNotFound)
	case apierrors.IsUnauthorized(err):
		http.Error(w, "sign in again", http.StatusUnauthorized)
	default:
		http.Error(w, action+": "+err.Error(), http.StatusBadGateway)
	}
	return true
}

// --- fleet clusters ---

type fleetRow struct {
	Namespace, Name string
	State           string
	StateLabel      string
	StateMessage    string
	// Reason and Message say, inline, why a cluster is not connected (the Ready condition).
	Reason, Message string
	LastSeen        string
	Agent           string
	Labels          []string
	Bundles         []cellData
	// Unknown counts the Bundles whose state on the cluster the viewer may not read.
	Unknown int
}

func listFleet(ctx context.Context, s *scope) ([]fleetv1alpha1.Cluster, listInfo, error) {
	return listScoped[fleetv1alpha1.Cluster](ctx, s, "fleet", "fleet clusters", "")
}

func listBundles(ctx context.Context, s *scope) ([]fleetv1alpha1.Bundle, listInfo, error) {
	return listScoped[fleetv1alpha1.Bundle](ctx, s, "bundles", "Bundles", "")
}

// listDeployments lists BundleDeployments. They live in each cluster's own namespace, so a
// namespace selection does not narrow them (the matrix keeps the clusters shown), and where
// they cannot be listed cluster-wide they are looked for in the shown clusters' namespaces.
func listDeployments(ctx context.Context, s *scope, clusters func() []fleetv1alpha1.Cluster) ([]fleetv1alpha1.BundleDeployment, listInfo, error) {
	all := &scope{viewer: s.viewer, cache: s.cache, fixed: func() []string {
		var out []string
		for _, c := range clusters() {
			out = append(out, c.Status.Namespace)
		}
		return out
	}}
	return listScoped[fleetv1alpha1.BundleDeployment](ctx, all, "bundledeployments", "BundleDeployments", "")
}

// fleetReads lists the fleet clusters, Bundles and BundleDeployments at once.
func fleetReads(ctx context.Context, s *scope) (clusters []fleetv1alpha1.Cluster, bundles []fleetv1alpha1.Bundle, bds []fleetv1alpha1.BundleDeployment,
	fi, bi, di listInfo, err error) {
	listed := make(chan struct{})
	err = together(
		func() (err error) {
			defer close(listed)
			clusters, fi, err = listFleet(ctx, s)
			return err
		},
		func() (err error) { bundles, bi, err = listBundles(ctx, s); return err },
		func() (err error) {
			bds, di, err = listDeployments(ctx, s, func() []fleetv1alpha1.Cluster { <-listed; return clusters })
			return err
		},
	)
	return clusters, bundles, bds, fi, bi, di, err
}

// together runs a page's reads at once and returns the first error.
func together(reads ...func() error) error {
	var g errgroup.Group
	for _, r := range reads {
		g.Go(r)
	}
	return g.Wait()
}

func listMigrations(ctx context.Context, s *scope) ([]migrationv1alpha1.CloudProviderMigration, listInfo, error) {
	return listScoped[migrationv1alpha1.CloudProviderMigration](ctx, s, "migrations", "migrations", "")
}

func (h *Handler) fleetList(ctx context.Context, r *http.Request, _ *viewer, s *scope, l *layoutData) (string, any, error) {
	l.Title, l.Nav = "Fleet clusters", "fleet"
	f := newFilter(r, l, "fleet clusters", fleetStateChoices)
	clusters, bundles, bds, fi, bi, di, err := fleetReads(ctx, s)
	if err != nil {
		return "", nil, err
	}
	l.Lists = []listInfo{fi, bi}
	h.setWatch(l, watchOf("fleet", fi, ""), watchOf("bundles", bi, ""), watchOf("bundledeployments", di, ""))
	m := newMatrix(clusters, bundles, bds, di)
	now := h.opts.Now()
	d := &fleetData{Unreadable: m.Unreadable, Rows: make([]fleetRow, 0, len(clusters))}
	for _, c := range m.clusters {
		state := connState(c)
		if !f.match(c.Namespace, c.Name, c.Labels, fleetStates(state)) {
			continue
		}
		row := fleetRow{Namespace: c.Namespace, Name: c.Name, LastSeen: ago(now, c.Status.Agent.LastSeen), Agent: manifests.AgentVersion(c),
			Labels: labelList(c.Labels)}
		row.State, row.StateMessage = state, readyMessage(c)
		row.StateLabel = connLabel(row.State)
		row.Reason, row.Message = notReadyReason(c, row.State)
		for _, b := range m.columns {
			switch cell := m.cell(c, b); cell.State {
			case "none":
			case "unknown":
				row.Unknown++
			default:
				row.Bundles = append(row.Bundles, cell)
			}
		}
		d.Rows = append(d.Rows, row)
	}
	return "fleet", d, nil
}

type fleetData struct {
	Rows []fleetRow
	// Unreadable counts the clusters whose BundleDeployments the viewer may not read.
	Unreadable int
}

// A fleet Cluster's state, as data-state and badge class; stateLabels words them.
const (
	stateConnected    = "connected"
	stateDisconnected = "disconnected"
	// stateUnreachable: the agent checks in but cannot reach its own cluster's API server, so
	// nothing it applies gets there (drover check counts these apart from disconnected ones).
	stateUnreachable = "unreachable"
	// stateNotReady: Ready=False for any other reason.
	stateNotReady = "notready"
	stateWaiting  = "waiting"
)

var connLabels = map[string]string{stateUnreachable: "API server unreachable", stateNotReady: "not ready"}

// connLabel is the words of a connState.
func connLabel(state string) string {
	if l, ok := connLabels[state]; ok {
		return l
	}
	return state
}

// connState: waiting (the agent never checked in), disconnected (Ready=False
// AgentDisconnected, see internal/registration/cluster), unreachable (the agent checks in but
// cannot reach its cluster's API server: Ready=False DownstreamUnreachable, or the agent's
// downstreamError before the condition says so, as drover check reads it), not ready (any other
// Ready=False) or connected. A Ready=False cluster is never shown as connected: its agent may
// answer, but nothing it applies takes effect.
func connState(c *fleetv1alpha1.Cluster) string {
	switch {
	case c.Status.Agent.LastSeen == nil:
		return stateWaiting
	case cluster.Disconnected(c):
		return stateDisconnected
	case cluster.Unreachable(c) || c.Status.Agent.DownstreamError != "":
		return stateUnreachable
	case readyFalse(c) != nil:
		return stateNotReady
	}
	return stateConnected
}

// readyFalse is c's Ready condition when it is False (nil otherwise).
func readyFalse(c *fleetv1alpha1.Cluster) *metav1.Condition {
	cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionReady)
	if cond == nil || cond.Status != metav1.ConditionFalse {
		return nil
	}
	return cond
}

func readyMessage(c *fleetv1alpha1.Cluster) string {
	if cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionReady); cond != nil {
		return cond.Reason + ": " + cond.Message
	}
	return ""
}

// notReadyReason is why a cluster that is not connected is so, shown on its row: the Ready
// condition's reason and message, or the agent's downstreamError before Ready says it.
func notReadyReason(c *fleetv1alpha1.Cluster, state string) (reason, msg string) {
	if state == stateConnected {
		return "", ""
	}
	if cond := readyFalse(c); cond != nil {
		return cond.Reason, cond.Message
	}
	if e := c.Status.Agent.DownstreamError; e != "" {
		return fleetv1alpha1.ReasonDownstreamUnreachable, e
	}
	return "", ""
}

// --- Bundles matrix ---

// matrix is the clusters × Bundles grid, from the BundleDeployments. Each cluster's own agent
// Bundle (drover-agent-<cluster>) is one "agent" column.
type matrix struct {
	clusters []*fleetv1alpha1.Cluster
	columns  []*bundleColumn
	// bds by bundle namespace/name, then cluster namespace/name.
	bds map[string]map[string]*fleetv1alpha1.BundleDeployment
	// agent bundles by cluster namespace/name.
	agents map[string]*fleetv1alpha1.Bundle
	// readable: the namespaces whose BundleDeployments were listed (nil: all of them).
	readable map[string]bool
	// Unreadable counts the clusters whose BundleDeployments the viewer may not read.
	Unreadable int
}

// canRead reports whether c's BundleDeployments were listed, so that a missing one means
// "not targeted". A cluster without a namespace yet has none.
func (m *matrix) canRead(c *fleetv1alpha1.Cluster) bool {
	return m.readable == nil || c.Status.Namespace == "" || m.readable[c.Status.Namespace]
}

type bundleColumn struct {
	Bundle *fleetv1alpha1.Bundle
	// Agent: the column of every cluster's agent Bundle.
	Agent bool
	Name  string
	Ready string
	// Header says the Bundle's summary.
	Summary string
	// Paused: the Bundle's rollout is paused. CanPause: a SelfSubjectAccessReview says the
	// viewer may patch Bundles in its namespace; PausePath pauses or resumes it (POST).
	Paused    bool
	CanPause  bool
	PausePath string
}

type cellData struct {
	Bundle string
	// State: ready, pending, outofdate, modified (drift), errapplied, notready, none (not
	// targeted), unknown (the viewer may not read its BundleDeployment and the Bundle's summary
	// does not name the cluster).
	State   string
	Label   string
	Message string
	// Hint is the tooltip when it is not the message: where an unread cell's state comes from.
	Hint string
	// DriftCorrected says the agent last re-applied drifted resources (correctDrift).
	DriftCorrected string
}

func key(ns, name string) string { return ns + "/" + name }

// newMatrix builds the grid; di says where the BundleDeployments were listed.
func newMatrix(clusters []fleetv1alpha1.Cluster, bundles []fleetv1alpha1.Bundle, bds []fleetv1alpha1.BundleDeployment, di listInfo) *matrix {
	m := &matrix{bds: map[string]map[string]*fleetv1alpha1.BundleDeployment{}, agents: map[string]*fleetv1alpha1.Bundle{}}
	if !di.All {
		m.readable = map[string]bool{}
		for _, ns := range di.Namespaces {
			m.readable[ns] = true
		}
	}
	for i := range clusters {
		m.clusters = append(m.clusters, &clusters[i])
		if !m.canRead(&clusters[i]) {
			m.Unreadable++
		}
	}
	sort.Slice(m.clusters, func(i, j int) bool {
		return key(m.clusters[i].Namespace, m.clusters[i].Name) < key(m.clusters[j].Namespace, m.clusters[j].Name)
	})
	hasAgents := false
	for i := range bundles {
		b := &bundles[i]
		if c := b.Labels[fleetv1alpha1.ClusterLabel]; c != "" && b.Name == agentmgmt.BundleName(c) {
			m.agents[key(b.Namespace, c)] = b
			hasAgents = true
			continue
		}
		col := &bundleColumn{Bundle: b, Name: b.Name, Ready: condStatus(b.Status.Conditions, fleetv1alpha1.ConditionReady),
			Summary: fmt.Sprintf("%d/%d ready", b.Status.Summary.Ready, b.Status.Summary.DesiredReady)}
		if b.Namespace != "" {
			col.Name = b.Namespace + "/" + b.Name
		}
		m.columns = append(m.columns, col)
	}
	sort.Slice(m.columns, func(i, j int) bool { return m.columns[i].Name < m.columns[j].Name })
	if hasAgents {
		m.columns = append([]*bundleColumn{{Agent: true, Name: "agent", Summary: "each cluster's drover-agent Bundle"}}, m.columns...)
	}
	for i := range bds {
		bd := &bds[i]
		bk := key(bd.Labels[bundle.BundleNamespaceLabel], bd.Labels[bundle.BundleNameLabel])
		if m.bds[bk] == nil {
			m.bds[bk] = map[string]*fleetv1alpha1.BundleDeployment{}
		}
		m.bds[bk][key(bd.Labels[fleetv1alpha1.ClusterNamespaceLabel], bd.Labels[fleetv1alpha1.ClusterLabel])] = bd
	}
	return m
}

var stateLabels = map[string]string{
	"ready": "ready", "pending": "pending", "outofdate": "out of date", "modified": "drift", "errapplied": "apply failed",
	"notready": "not ready", "none": "", "unknown": "unknown", "dependencynotready": "waiting for a dependency",
}

func (m *matrix) cell(c *fleetv1alpha1.Cluster, col *bundleColumn) cellData {
	b := col.Bundle
	if col.Agent {
		if b = m.agents[key(c.Namespace, c.Name)]; b == nil {
			return cellData{Bundle: "agent", State: "none"}
		}
	}
	cell := cellData{Bundle: b.Name}
	bd := m.bds[key(b.Namespace, b.Name)][key(c.Namespace, c.Name)]
	switch {
	case bd != nil:
		// The state the agent computed (status.display): a BundleDeployment listed as a Table
		// carries nothing else of its status.
		state, msg := bundle.DisplayState(bd, bundle.WantedDeploymentID(b, bd))
		cell.State, cell.Message = strings.ToLower(state), msg
		if state == bundle.StateReady {
			cell.State = "ready"
		}
		if d := bd.Status.Display; d != nil {
			cell.DriftCorrected = d.DriftCorrected
		}
	case !m.canRead(c):
		cell = fromSummary(cell, b, c, col.Agent)
	default:
		cell.State = "none"
	}
	cell.Label = stateLabels[cell.State]
	if cell.Label == "" && cell.State != "none" {
		cell.Label = cell.State
	}
	return cell
}

// fromSummary is the cell of a cluster whose BundleDeployments the viewer may not read: what
// the Bundle's summary says of it. Its nonReadyClusters name up to 20 clusters with their state;
// an agent Bundle targets its own cluster only, so its counts are that cluster's. Otherwise the
// state is unknown, never "not targeted".
func fromSummary(cell cellData, b *fleetv1alpha1.Bundle, c *fleetv1alpha1.Cluster, agent bool) cellData {
	s := b.Status.Summary
	for _, nr := range s.NonReadyClusters {
		if nr.Name == c.Name && b.Namespace == c.Namespace {
			cell.State, cell.Message = strings.ToLower(nr.State), nr.Message
			cell.Hint = "From the Bundle's summary (you may not read this cluster's BundleDeployment)"
			if nr.Message != "" {
				cell.Hint += ": " + nr.Message
			}
			return cell
		}
	}
	if agent && s.DesiredReady > 0 && s.Ready == s.DesiredReady {
		cell.State, cell.Hint = "ready", "From the agent Bundle's summary (you may not read this cluster's BundleDeployment)"
		return cell
	}
	cell.State = "unknown"
	cell.Hint = fmt.Sprintf("Unknown: you may not read this cluster's BundleDeployments (namespace %s). The Bundle's summary: %d/%d clusters ready",
		c.Status.Namespace, s.Ready, s.DesiredReady)
	if s.DesiredReady > 0 && len(s.NonReadyClusters) == s.DesiredReady-s.Ready {
		cell.Hint += "; it names every cluster not ready, and not this one: ready or not targeted"
	}
	return cell
}

type bundlesData struct {
	Columns []*bundleColumn
	Rows    []matrixRow
	// Unreadable counts the clusters whose BundleDeployments the viewer may not read: their
	// cells come from the Bundles' summaries.
	Unreadable int
}

type matrixRow struct {
	Namespace, Name, State string
	StateLabel             string
	// Reason and Message: why the cluster is not connected (its hover title).
	Reason, Message string
	Cells           []cellData
}

func (h *Handler) bundles(ctx context.Context, r *http.Request, v *viewer, s *scope, l *layoutData) (string, any, error) {
	l.Title, l.Nav = "Bundles", "bundles"
	f := newFilter(r, l, "Bundles", bundleStateChoices)
	clusters, bundles, bds, fi, bi, di, err := fleetReads(ctx, s)
	if err != nil {
		return "", nil, err
	}
	// The filter selects Bundles (the columns; each cluster's agent Bundle on its own): the
	// clusters stay the rows.
	if f.Active() {
		kept := make([]fleetv1alpha1.Bundle, 0, len(bundles))
		for i := range bundles {
			if f.match(bundles[i].Namespace, bundles[i].Name, bundles[i].Labels, bundleStates(&bundles[i])) {
				kept = append(kept, bundles[i])
			}
		}
		bundles = kept
	}
	// The BundleDeployments' own notice is the page's: they are not in a namespace to choose.
	l.Lists = []listInfo{fi, bi}
	h.setWatch(l, watchOf("fleet", fi, ""), watchOf("bundles", bi, ""), watchOf("bundledeployments", di, ""))
	m := newMatrix(clusters, bundles, bds, di)
	d := &bundlesData{Columns: m.columns, Unreadable: m.Unreadable}
	// One access review per namespace, not per Bundle: pausing needs patch on Bundles there.
	mayPatch := map[string]bool{}
	for _, col := range m.columns {
		b := col.Bundle
		if b == nil {
			continue
		}
		allowed, ok := mayPatch[b.Namespace]
		if !ok {
			if allowed, err = canPatchIn(ctx, v, b.Namespace, fleetv1alpha1.GroupVersion.Group, "bundles"); err != nil {
				return "", nil, err
			}
			mayPatch[b.Namespace] = allowed
		}
		col.Paused, col.CanPause = b.Spec.Rollout.Paused, allowed
		action := "pause"
		if col.Paused {
			action = "resume"
		}
		col.PausePath = "/bundles/" + url.PathEscape(b.Namespace) + "/" + url.PathEscape(b.Name) + "/" + action
	}
	for _, c := range m.clusters {
		row := matrixRow{Namespace: c.Namespace, Name: c.Name, State: connState(c)}
		row.StateLabel = connLabel(row.State)
		row.Reason, row.Message = notReadyReason(c, row.State)
		for _, col := range m.columns {
			row.Cells = append(row.Cells, m.cell(c, col))
		}
		d.Rows = append(d.Rows, row)
	}
	return "bundles", d, nil
}

// --- migrations ---

type migrationView struct {
	Namespace, Name, Distribution, Phase, Target string
	CurrentStep                                  int32
	Steps                                        []stepView
	Conditions                                   []conditionView
	Done, Total                                  int
	// Retry and Rollback are the commands that act on a failed step, as drover migrate get
	// prints them (empty unless the migration failed at a step).
	Retry, Rollback string
}

// conditionView is a condition with the age of its last transition.
type conditionView struct {
	metav1.Condition
	Since, Age string
}

type stepView struct {
	Index             int32
	Name, Phase       string
	Message           string
	Action            string
	Verifies          []string
	Started, Finished string
	// StartedAge and FinishedAge: how long ago ("3m5s"), next to the times.
	StartedAge, FinishedAge string
	Current                 bool
	PhaseClass              string
}

func (h *Handler) migrations(ctx context.Context, _ *http.Request, _ *viewer, s *scope, l *layoutData) (string, any, error) {
	l.Title, l.Nav = "Migrations", "migrations"
	list, info, err := listMigrations(ctx, s)
	if err != nil {
		return "", nil, err
	}
	l.Lists = []listInfo{info}
	h.setWatch(l, watchOf("migrations", info, ""))
	now := h.opts.Now()
	out := make([]migrationView, 0, len(list))
	for i := range list {
		m := &list[i]
		mv := migrationView{Namespace: m.Namespace, Name: m.Name, Distribution: string(m.Spec.Distribution), Phase: orDash(string(m.Status.Phase)),
			CurrentStep: m.Status.CurrentStep, Conditions: conditionViews(now, m.Status.Conditions), Total: migration.NumSteps, Done: m.StepsDone()}
		mv.Retry, mv.Rollback = nextCommands(m)
		if ref := m.Spec.ClusterRef; ref != nil {
			mv.Target = ref.Namespace + "/" + ref.Name
		}
		recorded := map[int32]migrationv1alpha1.StepStatus{}
		for _, st := range m.Status.Steps {
			recorded[st.Index] = st
		}
		for i := range migration.NumSteps {
			st, ok := recorded[int32(i)]
			sv := stepView{Index: int32(i), Name: migration.StepNames[i], Phase: string(migrationv1alpha1.StepPending),
				Action: migration.StepAction(i), Verifies: migration.StepVerifies(i)}
			if ok {
				sv.Phase, sv.Message = string(st.Phase), st.Message
				sv.Started, sv.Finished = stamp(st.StartedAt), stamp(st.FinishedAt)
				sv.StartedAge, sv.FinishedAge = sinceStamp(now, st.StartedAt), sinceStamp(now, st.FinishedAt)
			}
			sv.Current = m.Status.Phase == migrationv1alpha1.PhaseRunning && int32(i) == m.Status.CurrentStep
			sv.PhaseClass = strings.ToLower(sv.Phase)
			mv.Steps = append(mv.Steps, sv)
		}
		out = append(out, mv)
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i].Namespace, out[i].Name) < key(out[j].Namespace, out[j].Name) })
	return "migrations", out, nil
}

// nextCommands are the kubectl commands that retry a migration's failed step or roll it back,
// the ones drover migrate get prints: only for a migration that failed at a step.
func nextCommands(m *migrationv1alpha1.CloudProviderMigration) (retry, rollback string) {
	if m.Status.Phase != migrationv1alpha1.PhaseFailed || !slices.ContainsFunc(m.Status.Steps, func(s migrationv1alpha1.StepStatus) bool {
		return s.Phase == migrationv1alpha1.StepFailed
	}) {
		return "", ""
	}
	retry = fmt.Sprintf("kubectl -n %s annotate cloudprovidermigration %s %s=$(date +%%s) --overwrite", m.Namespace, m.Name, controller.RetryAnnotation)
	rollback = fmt.Sprintf("kubectl -n %s annotate cloudprovidermigration %s %s=true", m.Namespace, m.Name, controller.RollbackAnnotation)
	return retry, rollback
}

// conditionViews are conditions with their transitions' times and ages.
func conditionViews(now time.Time, conds []metav1.Condition) []conditionView {
	out := make([]conditionView, 0, len(conds))
	for _, c := range conds {
		cv := conditionView{Condition: c}
		if !c.LastTransitionTime.IsZero() {
			cv.Since, cv.Age = stamp(&c.LastTransitionTime), humanAge(now.Sub(c.LastTransitionTime.Time))
		}
		out = append(out, cv)
	}
	return out
}

// --- helpers ---

type eventRow struct {
	Time, Age, Type, Reason, Object, Message string
	Count                                    int32
	// Link is the dashboard page of the object, if it has one.
	Link string
	at   time.Time
}

// eventRows sorts events newest first (n > 0 keeps the newest n); links keep the namespace
// selection sel.
func eventRows(events []corev1.Event, n int, sel string) []eventRow {
	rows := make([]eventRow, 0, len(events))
	now := time.Now()
	for i := range events {
		e := &events[i]
		at := kubeevents.LastTime(e)
		count := e.Count
		if e.Series != nil && e.Series.Count > count {
			count = e.Series.Count
		}
		row := eventRow{Time: at.UTC().Format(time.RFC3339), Age: humanAge(now.Sub(at)), Type: e.Type, Reason: e.Reason,
			Message: e.Message, Count: count, at: at,
			Object: strings.ToLower(e.InvolvedObject.Kind) + " " + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name}
		o := &e.InvolvedObject
		inNS := nsQuery(o.Namespace)
		switch group, _, _ := strings.Cut(o.APIVersion, "/"); {
		case group == managementv1alpha1.GroupVersion.Group && o.Kind == "Cluster":
			row.Object = "hosted cluster " + o.Namespace + "/" + o.Name
			row.Link = "/hosted/" + url.PathEscape(o.Namespace) + "/" + url.PathEscape(o.Name) + nsQuery(sel)
		case group == migrationv1alpha1.GroupVersion.Group && o.Kind == "CloudProviderMigration":
			row.Object = "migration " + o.Namespace + "/" + o.Name
			row.Link = "/migrations" + inNS
		case group == fleetv1alpha1.GroupVersion.Group:
			switch o.Kind {
			case "GitRepo":
				row.Link = "/gitrepos" + inNS
			case "Bundle":
				row.Link = "/bundles" + inNS
			case "Cluster":
				row.Object, row.Link = "fleet cluster "+o.Namespace+"/"+o.Name, "/fleet"+inNS
			case "ClusterRegistrationToken":
				row.Link = "/tokens" + inNS
			}
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].at.After(rows[j].at) })
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	return rows
}

func providerOf(c *managementv1alpha1.Cluster) hosted.Provider {
	for _, p := range providers {
		if p.Matches(c) {
			return p
		}
	}
	return nil
}

func providerName(c *managementv1alpha1.Cluster) string {
	if p := providerOf(c); p != nil {
		return p.Name()
	}
	return "?"
}

func condTrue(conds []metav1.Condition, t string) bool {
	c := meta.FindStatusCondition(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue
}

func condStatus(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return "-"
}

// condClass styles a hosted cluster's condition by what its status means for its type: a
// Conflict is bad when True, Updating is news either way, and Joined=False is no failure when
// the cluster stays out by choice (JoinDisabled), is leaving or waits to be active.
func condClass(c metav1.Condition) string {
	good, bad := "cond-good", "cond-bad"
	switch c.Type {
	case managementv1alpha1.ConditionConflict:
		good, bad = bad, good
	case managementv1alpha1.ConditionUpdating:
		good, bad = "cond-info", "cond-neutral"
	case managementv1alpha1.ConditionJoined:
		switch c.Reason {
		case managementv1alpha1.ReasonJoinDisabled, managementv1alpha1.ReasonLeaving:
			bad = "cond-neutral"
		case managementv1alpha1.ReasonWaitingForCluster:
			bad = "cond-info"
		}
	case managementv1alpha1.ConditionAgentReady:
		if c.Reason == managementv1alpha1.ReasonWaitingForAgent {
			bad = "cond-info"
		}
	}
	switch c.Status {
	case metav1.ConditionTrue:
		return good
	case metav1.ConditionFalse:
		return bad
	}
	return "cond-neutral"
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

func labelList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, k+"="+m[k])
	}
	return out
}

func stamp(t *metav1.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// sinceStamp is how long ago t was ("" for none), shown next to stamp(t).
func sinceStamp(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return humanAge(now.Sub(t.Time))
}

func ago(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return humanAge(now.Sub(t.Time)) + " ago"
}

func humanAge(d time.Duration) string {
	if d < 0 {
		return "0s"
	}
	// kubectl's (and drover's CLI's) rendering, so the page and the terminal agree: 119m, 3h5m.
	return duration.HumanDuration(d)
}
