// Package gitrepo deploys from Git: for every GitRepo it follows a branch, tag or commit of a
// repository (cloned with go-git, shallow and in memory, no git binary), renders every path
// matching spec.paths into a Bundle owned by the GitRepo, deletes the Bundles of paths that
// disappeared, and reports the commit deployed, the Bundles' readiness and fetch or render
// errors as conditions with stable reasons.
package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/metrics"
	"github.com/droverhq/drover/internal/text"
)

// FieldOwner is the GitRepo controller's field manager.
const FieldOwner = "drover-gitrepo"

// specHashAnnotation records the hash of the Bundle spec a GitRepo wrote, so unchanged Bundles
// get no write when a commit changes other paths.
const specHashAnnotation = fleetv1alpha1.LabelPrefix + "gitrepo-spec-hash"

// syncGenerationAnnotation records the GitRepo's spec.forceSyncGeneration a Bundle was last
// written for: a change of it is one more redeploy of the Bundle, added to the Bundle's own
// count, which `drover bundle redeploy` may have raised and a rewrite must not undo.
const syncGenerationAnnotation = fleetv1alpha1.LabelPrefix + "gitrepo-sync-generation"

// DefaultPollingInterval is how often a GitRepo without spec.pollingInterval is checked.
const DefaultPollingInterval = 15 * time.Second

// DefaultFetchTimeout is how long one fetch of a repository may take.
const DefaultFetchTimeout = 2 * time.Minute

// conflictRetry is how soon a pass whose status write met a newer GitRepo runs again.
const conflictRetry = 100 * time.Millisecond

// minPollingInterval bounds spec.pollingInterval from below.
const minPollingInterval = time.Second

// Reconciler keeps the Bundles of GitRepos.
type Reconciler struct {
	// Client reads GitRepos and Bundles (cached) and writes Bundles and GitRepo status.
	Client client.Client
	// SecretReader reads auth Secrets (uncached: drover does not keep every Secret in memory).
	SecretReader client.Reader
	// Concurrency is the number of GitRepos reconciled at once (default 4).
	Concurrency int
	// FetchTimeout bounds one fetch (ls-remote and clone) of a repository (default
	// DefaultFetchTimeout), so an unresponsive server cannot hold a worker.
	FetchTimeout time.Duration
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Recorder, when set, records Events on GitRepos: Deployed (a new commit), SyncFailed.
	Recorder events.EventRecorder

	mu    sync.Mutex
	state map[types.NamespacedName]*repoState
}

// repoState is what the controller remembers of a GitRepo between passes: when it fetched last,
// for which generation, and the content of the last commit it read (so a poll that finds the
// same commit costs one ls-remote and no clone).
type repoState struct {
	nextFetch  time.Time
	generation int64
	source     string // repo URL and ref the checkout was read for
	co         *checkout
	// fetchRequested is the fetch-requested annotation the last fetch was made for.
	fetchRequested string
}

// +kubebuilder:rbac:groups=fleet.drover.io,resources=gitrepos,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=gitrepos/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=gitrepos/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundles,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Concurrency == 0 {
		r.Concurrency = 4
	}
	if r.FetchTimeout == 0 {
		r.FetchTimeout = DefaultFetchTimeout
	}
	if r.SecretReader == nil {
		r.SecretReader = mgr.GetAPIReader()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("gitrepo").
		For(&fleetv1alpha1.GitRepo{}).
		Owns(&fleetv1alpha1.Bundle{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Concurrency}).
		Complete(r)
}

// Controllers returns a function for server.Options.Controllers.
func Controllers() func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		r := &Reconciler{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("drover-gitrepo")}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up gitrepo controller: %w", err)
		}
		return nil
	}
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func pollingInterval(gr *fleetv1alpha1.GitRepo) time.Duration {
	if gr.Spec.PollingInterval == nil {
		return DefaultPollingInterval
	}
	return max(gr.Spec.PollingInterval.Duration, minPollingInterval)
}

func (r *Reconciler) stateOf(key types.NamespacedName) *repoState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == nil {
		r.state = map[types.NamespacedName]*repoState{}
	}
	st := r.state[key]
	if st == nil {
		st = &repoState{}
		r.state[key] = st
	}
	return st
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.state, key)
}

// Reconcile fetches the GitRepo's revision when its polling interval has passed (or its spec
// changed, or one of its Bundles went missing), writes the Bundles, and summarises them.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gr := &fleetv1alpha1.GitRepo{}
	if err := r.Client.Get(ctx, req.NamespacedName, gr); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			metrics.GitRepos.Delete(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !gr.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName) // the Bundles go with it (owner references)
		metrics.GitRepos.Delete(req.String())
		return ctrl.Result{}, nil
	}
	before := gr.DeepCopy()
	owned, err := r.ownedBundles(ctx, gr)
	if err != nil {
		return ctrl.Result{}, err
	}
	st := r.stateOf(req.NamespacedName)
	var requeue time.Duration
	synced := false
	if gr.Spec.Paused {
		msg := "spec.paused is set: nothing is fetched; the Bundles of commit " + gr.Status.Commit + " stay deployed"
		if gr.Status.Commit == "" {
			msg = "spec.paused is set: nothing is fetched, and nothing was fetched yet"
		}
		setCondition(gr, fleetv1alpha1.ConditionSynced, metav1.ConditionFalse, fleetv1alpha1.ReasonPaused, msg)
	} else {
		if synced = r.due(gr, st, owned); synced {
			r.sync(ctx, gr, st, owned)
			if owned, err = r.ownedBundles(ctx, gr); err != nil {
				return ctrl.Result{}, err
			}
		}
		requeue = max(st.nextFetch.Sub(r.now()), 0) + 10*time.Millisecond
	}
	summarise(gr, owned)
	if !equality.Semantic.DeepEqual(before.Status, gr.Status) {
		// Optimistic lock: a merge patch replaces lists (conditions, bundles) whole, so one
		// computed from a stale read would undo the status another pass just wrote.
		if err := r.Client.Status().Patch(ctx, gr, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				if synced {
					st.nextFetch = time.Time{} // this pass's results were not recorded: sync again
				}
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, fmt.Errorf("patch status of GitRepo %s: %w", req.NamespacedName, err)
		}
		r.recordEvents(before, gr)
	}
	r.track(req.String(), gr)
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// recordEvents records what a pass changed: a new commit deployed, a new sync failure. A
// failure that stays the same (every poll of a missing branch) is recorded once.
func (r *Reconciler) recordEvents(before, gr *fleetv1alpha1.GitRepo) {
	if r.Recorder == nil {
		return
	}
	old := meta.FindStatusCondition(before.Status.Conditions, fleetv1alpha1.ConditionSynced)
	cur := meta.FindStatusCondition(gr.Status.Conditions, fleetv1alpha1.ConditionSynced)
	if cur == nil {
		return
	}
	if cur.Status == metav1.ConditionFalse && cur.Reason != fleetv1alpha1.ReasonPaused &&
		(old == nil || old.Status != cur.Status || old.Reason != cur.Reason || old.Message != cur.Message) {
		r.Recorder.Eventf(gr, nil, corev1.EventTypeWarning, fleetv1alpha1.EventGitRepoSyncFailed, "Sync", "%s: %s", cur.Reason, cur.Message)
	}
	if cur.Status == metav1.ConditionTrue && gr.Status.Commit != before.Status.Commit {
		r.Recorder.Eventf(gr, nil, corev1.EventTypeNormal, fleetv1alpha1.EventGitRepoDeployed, "Sync", "%s", cur.Message)
	}
}

// track counts gr in the GitRepos gauge by its Synced condition.
func (r *Reconciler) track(key string, gr *fleetv1alpha1.GitRepo) {
	c := meta.FindStatusCondition(gr.Status.Conditions, fleetv1alpha1.ConditionSynced)
	switch {
	case c == nil:
		metrics.GitRepos.Delete(key) // not fetched yet
	case gr.Spec.Paused:
		metrics.GitRepos.Set(key, metrics.GitRepoPaused, c.Reason)
	case c.Status == metav1.ConditionTrue:
		metrics.GitRepos.Set(key, metrics.GitRepoSynced, c.Reason)
	default:
		metrics.GitRepos.Set(key, metrics.GitRepoNotSynced, c.Reason)
	}
}

// due reports whether gr must be fetched now: its polling interval passed, its spec changed
// since the last fetch, a fetch was requested (the push webhook), or a Bundle it should have
// is missing.
func (r *Reconciler) due(gr *fleetv1alpha1.GitRepo, st *repoState, owned map[string]*fleetv1alpha1.Bundle) bool {
	if st.generation != gr.Generation || !r.now().Before(st.nextFetch) ||
		gr.Annotations[fleetv1alpha1.FetchRequestedAnnotation] != st.fetchRequested {
		return true
	}
	for _, b := range gr.Status.Bundles {
		if owned[b.Name] == nil {
			return true
		}
	}
	return false
}

// sync fetches and renders gr's revision and writes its Bundles. Failures go into the Synced
// condition; the Bundles of the last good commit are then left as they are.
func (r *Reconciler) sync(ctx context.Context, gr *fleetv1alpha1.GitRepo, st *repoState, owned map[string]*fleetv1alpha1.Bundle) {
	st.generation, st.nextFetch = gr.Generation, r.now().Add(pollingInterval(gr))
	st.fetchRequested = gr.Annotations[fleetv1alpha1.FetchRequestedAnnotation]
	gr.Status.ObservedGeneration = gr.Generation
	fetchCtx, cancel := context.WithTimeout(ctx, r.FetchTimeout)
	out, err := r.fetchAndRender(fetchCtx, gr, st)
	timedOut := fetchCtx.Err() != nil && ctx.Err() == nil
	cancel()
	if err != nil && timedOut {
		err = failf(fleetv1alpha1.ReasonFetchFailed, nil, "fetching %s did not finish within %s: the server is unresponsive or the repository too large", gr.Spec.Repo, r.FetchTimeout)
	}
	if err == nil {
		err = r.write(ctx, gr, st.co.commit, out, owned)
	}
	if err != nil {
		reason := fleetv1alpha1.ReasonFetchFailed
		var se *syncError
		if errors.As(err, &se) {
			reason = se.reason
		}
		log.FromContext(ctx).Info("GitRepo not synced", "reason", reason, "error", err.Error())
		metrics.GitRepoFetches.WithLabelValues("failed").Inc()
		setCondition(gr, fleetv1alpha1.ConditionSynced, metav1.ConditionFalse, reason, text.Clip(err.Error(), 1024))
		return
	}
	result := "unchanged"
	if gr.Status.Commit != st.co.commit {
		result = "deployed"
	}
	metrics.GitRepoFetches.WithLabelValues(result).Inc()
	gr.Status.Commit = st.co.commit
	gr.Status.Bundles = gr.Status.Bundles[:0]
	var warnings []string
	for _, b := range out {
		gr.Status.Bundles = append(gr.Status.Bundles, fleetv1alpha1.GitRepoBundle{Name: b.name, Path: b.path})
		for _, w := range b.warnings {
			warnings = append(warnings, "path "+b.path+": "+w)
		}
	}
	if len(warnings) > 0 {
		setCondition(gr, fleetv1alpha1.ConditionConfigSupported, metav1.ConditionFalse, fleetv1alpha1.ReasonUnsupportedFleetKeys,
			text.Clip("settings not used as Fleet uses them (the rest is deployed): "+strings.Join(warnings, "; "), 2048))
	} else {
		setCondition(gr, fleetv1alpha1.ConditionConfigSupported, metav1.ConditionTrue, fleetv1alpha1.ReasonSucceeded,
			"every key of the paths' drover.yaml and fleet.yaml files is used")
	}
	setCondition(gr, fleetv1alpha1.ConditionSynced, metav1.ConditionTrue, fleetv1alpha1.ReasonSucceeded,
		fmt.Sprintf("commit %s of %s rendered into %d Bundle%s", st.co.commit, gr.Spec.Follows(), len(out), plural(len(out))))
}

// fetchAndRender returns the rendered paths of the revision's current commit, reading the
// repository only when the commit is not the one read last time.
func (r *Reconciler) fetchAndRender(ctx context.Context, gr *fleetv1alpha1.GitRepo, st *repoState) ([]rendered, error) {
	ep, err := endpoint(gr.Spec.Repo)
	if err != nil {
		return nil, err
	}
	var secret *corev1.Secret
	if name := gr.Spec.ClientSecretName; name != "" {
		secret = &corev1.Secret{}
		if err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: gr.Namespace, Name: name}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil, "Secret %s (spec.clientSecretName) not found in namespace %s", name, gr.Namespace)
			}
			return nil, failf(fleetv1alpha1.ReasonFetchFailed, err, "read Secret %s/%s", gr.Namespace, name)
		}
	}
	auth, err := authFor(ep, gr.Spec.ClientSecretName, secret)
	if err != nil {
		return nil, err
	}
	source := gr.Spec.Repo + " " + gr.Spec.Follows()
	var caBundle []byte
	if secret != nil {
		caBundle = secret.Data[fleetv1alpha1.GitKeyCACerts]
	}
	commit, err := resolve(ctx, &gr.Spec, auth, caBundle)
	if err != nil {
		return nil, err
	}
	if st.co == nil || st.source != source || gr.Spec.Revision == "" && commit != st.co.commit {
		co, err := fetch(ctx, &gr.Spec, auth, caBundle)
		if err != nil {
			return nil, err
		}
		st.co, st.source = co, source
	}
	if st.co.helm, err = r.helmAccessFor(ctx, gr); err != nil {
		return nil, err
	}
	out, err := render(ctx, st.co, gr)
	if err != nil {
		var se *syncError
		if errors.As(err, &se) {
			se.msg = fmt.Sprintf("commit %s: %s", st.co.commit, se.msg)
		}
		return nil, err
	}
	return out, nil
}

// ownedBundles returns the Bundles gr controls, by name.
func (r *Reconciler) ownedBundles(ctx context.Context, gr *fleetv1alpha1.GitRepo) (map[string]*fleetv1alpha1.Bundle, error) {
	var list fleetv1alpha1.BundleList
	if err := r.Client.List(ctx, &list, client.InNamespace(gr.Namespace), client.MatchingLabels{fleetv1alpha1.GitRepoNameLabel: gr.Name}); err != nil {
		return nil, fmt.Errorf("list Bundles of GitRepo %s/%s: %w", gr.Namespace, gr.Name, err)
	}
	out := map[string]*fleetv1alpha1.Bundle{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], gr) {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out, nil
}

// write applies the rendered Bundles that changed (several at once: a commit may change every
// path of a large repository) and deletes the owned Bundles of paths that are gone.
func (r *Reconciler) write(ctx context.Context, gr *fleetv1alpha1.GitRepo, commit string, out []rendered, owned map[string]*fleetv1alpha1.Bundle) error {
	want := map[string]bool{}
	for i := range out {
		want[out[i].name] = true
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(bundleWriters)
	for i := range out {
		rb := &out[i]
		g.Go(func() error { return r.writeBundle(gctx, gr, commit, rb, owned[rb.name]) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for name, b := range owned {
		if want[name] {
			continue
		}
		if err := r.Client.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete Bundle %s/%s of removed path %s: %w", gr.Namespace, name, b.Annotations[fleetv1alpha1.GitRepoPathAnnotation], err)
		}
	}
	return nil
}

// bundleWriters is how many Bundles of one GitRepo are written at once.
const bundleWriters = 8

// writeBundle applies rb's Bundle unless cur, the Bundle as it is, already has its content.
func (r *Reconciler) writeBundle(ctx context.Context, gr *fleetv1alpha1.GitRepo, commit string, rb *rendered, cur *fleetv1alpha1.Bundle) error {
	if cur == nil {
		existing := &fleetv1alpha1.Bundle{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: gr.Namespace, Name: rb.name}, existing)
		if err == nil && !metav1.IsControlledBy(existing, gr) {
			return failf(fleetv1alpha1.ReasonRenderFailed, nil, "path %s: Bundle %s already exists and does not belong to this GitRepo: delete or rename it", rb.path, rb.name)
		}
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("get Bundle %s/%s: %w", gr.Namespace, rb.name, err)
		}
		if err == nil {
			cur = existing
		}
	}
	spec := holdTargets(rb, cur)
	hash := specHash(&spec)
	if len(rb.labels) > 0 {
		hash = specHash(&struct {
			Spec   *fleetv1alpha1.BundleSpec `json:"spec"`
			Labels map[string]string         `json:"labels"`
		}{&spec, rb.labels})
	}
	if cur != nil && cur.Annotations[specHashAnnotation] == hash && cur.Annotations[fleetv1alpha1.GitRepoPathAnnotation] == rb.path {
		return nil
	}
	labels := map[string]string{}
	for k, v := range rb.labels {
		labels[k] = v
	}
	labels[fleetv1alpha1.GitRepoNameLabel] = gr.Name
	spec.ForceSyncGeneration = bundleSyncGeneration(gr, cur)
	b := &fleetv1alpha1.Bundle{
		TypeMeta: metav1.TypeMeta{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "Bundle"},
		ObjectMeta: metav1.ObjectMeta{Namespace: gr.Namespace, Name: rb.name,
			Labels: labels,
			Annotations: map[string]string{
				fleetv1alpha1.GitRepoPathAnnotation:   rb.path,
				fleetv1alpha1.GitRepoCommitAnnotation: commit,
				specHashAnnotation:                    hash,
				syncGenerationAnnotation:              strconv.FormatInt(gr.Spec.ForceSyncGeneration, 10),
			}},
		Spec: spec,
	}
	if err := controllerutil.SetControllerReference(gr, b, r.Client.Scheme()); err != nil {
		return fmt.Errorf("own Bundle %s: %w", rb.name, err)
	}
	if err := r.Client.Patch(ctx, b, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply with a typed object is fine here
		return fmt.Errorf("apply Bundle %s/%s: %w", gr.Namespace, rb.name, err)
	}
	return nil
}

// bundleSyncGeneration is the spec.forceSyncGeneration to write on gr's Bundle cur: the
// Bundle's own (raised by drover bundle redeploy), one more when gr's changed since the Bundle
// was last written (drover gitrepo redeploy), gr's for a new Bundle.
func bundleSyncGeneration(gr *fleetv1alpha1.GitRepo, cur *fleetv1alpha1.Bundle) int64 {
	if cur == nil {
		return gr.Spec.ForceSyncGeneration
	}
	seen, err := strconv.ParseInt(cur.Annotations[syncGenerationAnnotation], 10, 64)
	if err != nil {
		// Written before the annotation: the Bundle carried the GitRepo's value.
		seen = cur.Spec.ForceSyncGeneration
	}
	if seen != gr.Spec.ForceSyncGeneration {
		return cur.Spec.ForceSyncGeneration + 1
	}
	return cur.Spec.ForceSyncGeneration
}

// holdTargets is rb's Bundle spec, targeting no cluster when rb is a paused fleet.yaml path
// whose Bundle, cur, does not exist yet or targets none: drover's rollout.paused holds existing
// BundleDeployments only, and newly matching clusters would get the content, where a paused
// Fleet bundle deploys nowhere. Once the Bundle targets clusters (it was deployed before the
// path was paused), it keeps its targets and rollout.paused holds their versions.
func holdTargets(rb *rendered, cur *fleetv1alpha1.Bundle) fleetv1alpha1.BundleSpec {
	spec := rb.spec
	if rb.holdNew && (cur == nil || len(cur.Spec.Targets) == 0) {
		spec.Targets = nil
	}
	return spec
}

// summarise fills the readiness of gr's Bundles and its Ready condition.
func summarise(gr *fleetv1alpha1.GitRepo, owned map[string]*fleetv1alpha1.Bundle) {
	ready := 0
	var notReady []string
	for i := range gr.Status.Bundles {
		s := &gr.Status.Bundles[i]
		s.Ready, s.DesiredReady, s.Message = 0, 0, ""
		b := owned[s.Name]
		if b == nil {
			s.Message = "Bundle not created yet"
			notReady = append(notReady, s.Name)
			continue
		}
		s.Ready, s.DesiredReady = b.Status.Summary.Ready, b.Status.Summary.DesiredReady
		c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady)
		if c != nil && c.Status == metav1.ConditionTrue && b.Status.ObservedGeneration == b.Generation {
			ready++
			if s.DesiredReady == 0 {
				// Ready, on nothing: say so where the GitRepo lists its paths.
				s.Message = "targets no registered cluster (the GitRepo's targets, or this path's fleet.yaml)"
			}
			continue
		}
		if c != nil {
			s.Message = text.Clip(c.Message, 256)
		} else {
			s.Message = "Bundle not reconciled yet"
		}
		notReady = append(notReady, s.Name)
	}
	sort.Slice(gr.Status.Bundles, func(i, j int) bool { return gr.Status.Bundles[i].Path < gr.Status.Bundles[j].Path })
	gr.Status.Summary = fleetv1alpha1.GitRepoSummary{Bundles: len(gr.Status.Bundles), ReadyBundles: ready}
	synced := meta.FindStatusCondition(gr.Status.Conditions, fleetv1alpha1.ConditionSynced)
	switch {
	case synced == nil:
		setCondition(gr, fleetv1alpha1.ConditionReady, metav1.ConditionFalse, fleetv1alpha1.ReasonPending, "not fetched yet")
	case synced.Status != metav1.ConditionTrue:
		setCondition(gr, fleetv1alpha1.ConditionReady, metav1.ConditionFalse, synced.Reason, synced.Message)
	case len(notReady) > 0:
		setCondition(gr, fleetv1alpha1.ConditionReady, metav1.ConditionFalse, fleetv1alpha1.ReasonBundlesNotReady,
			text.Clip(fmt.Sprintf("%d/%d Bundles ready; not ready: %s", ready, len(gr.Status.Bundles), strings.Join(notReady, ", ")), 1024))
	default:
		setCondition(gr, fleetv1alpha1.ConditionReady, metav1.ConditionTrue, fleetv1alpha1.ReasonSucceeded,
			fmt.Sprintf("commit %s: every Bundle (%d) ready", gr.Status.Commit, len(gr.Status.Bundles)))
	}
}

func setCondition(gr *fleetv1alpha1.GitRepo, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&gr.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: msg, ObservedGeneration: gr.Generation})
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
