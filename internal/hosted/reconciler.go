package hosted

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted/merge"
	"github.com/droverhq/drover/internal/metrics"
)

// Finalizer keeps a Cluster until its cloud resources are gone (or, imported, forgotten).
const Finalizer = "management.drover.io/hosted-cluster"

// JoinFinalizer is the join's finalizer (internal/hosted/join): while it is on a Cluster being
// deleted, the cluster is still leaving the fleet (its fleet Cluster and agent are being
// removed), so the cloud cluster is not deleted yet.
const JoinFinalizer = "management.drover.io/fleet-join"

// RefreshAnnotation asks for a refresh now when set to a new value.
const RefreshAnnotation = "management.drover.io/refresh"

// AdoptAnnotation ("true") lets a Cluster to create take over a cluster of its name that already
// exists at the provider: for a Cluster that created it and lost its status (restored from a
// backup without status). drover takes the provider's settings as the Cluster's (nothing is
// reverted) and manages it as its own from then on, deleting it with the Cluster.
const AdoptAnnotation = "management.drover.io/adopt"

// OrphanAnnotation ("true") makes deleting the Cluster leave the cloud cluster running: the way
// out when it cannot or should not be deleted (credentials gone with a deleted namespace, a
// closed account, a cluster handed over to another tool).
const OrphanAnnotation = "management.drover.io/orphan"

// Condition types (their reasons are the v1.Reason* constants).
const (
	CondReady       = v1.ConditionReady
	CondSynced      = v1.ConditionSynced
	CondUpdating    = v1.ConditionUpdating
	CondConflict    = v1.ConditionConflict
	CondCredentials = v1.ConditionCredentialsValid
	CondConfigValid = v1.ConditionConfigValid
)

// Reconciler syncs management Clusters with their provider.
type Reconciler struct {
	Client client.Client
	// APIReader reads credential Secrets uncached (default Client): the controller watches
	// Secrets' metadata only, so no Secret's data sits in the manager's cache.
	APIReader client.Reader
	Providers []Provider
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// Limits rate-limits provider calls per account and location.
	Limits *Limits
	// Workers is the number of clusters synced at once (default 8, as in the refresh-round
	// benchmark): a pass mostly waits for the provider, so one worker would take 5,000 clusters'
	// refreshes at real cloud latencies past the refresh interval.
	Workers int
	// RefreshInterval is how often an idle cluster is re-read (default 300s); Jitter is the
	// fraction of it added at random so clusters spread out (default 0.1).
	RefreshInterval time.Duration
	// RefreshIntervals overrides RefreshInterval per provider name ("eks", "aks", "gke").
	RefreshIntervals map[string]time.Duration
	Jitter           float64
	// PollInterval is how often a cluster with work in progress is re-read (default 30s).
	PollInterval time.Duration
	// StatusHeartbeat bounds how stale status.lastRefreshTime may get (default 10m). A refresh
	// that changes nothing else in the status is not written until then: at thousands of
	// clusters, a write per refresh would cost more than the refresh itself.
	StatusHeartbeat time.Duration
	// PassTimeout bounds one pass's work with the provider (default DefaultPassTimeout): a
	// provider, or a proxy, that accepts connections and never answers would otherwise hold
	// a worker for good, and with every worker held, stop the sync of every cluster. A pass
	// that runs out of time reports Synced=False/ProviderTimeout and is retried with backoff.
	PassTimeout time.Duration

	// lastRead remembers when each cluster was last read, for refreshes not yet written.
	lastRead sync.Map // types.NamespacedName → time.Time
}

func (r *Reconciler) defaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.RefreshInterval == 0 {
		r.RefreshInterval = 300 * time.Second
	}
	if r.Jitter == 0 {
		r.Jitter = 0.1
	}
	if r.PollInterval == 0 {
		r.PollInterval = 30 * time.Second
	}
	if r.Limits == nil {
		r.Limits = &Limits{}
	}
	if r.StatusHeartbeat == 0 {
		r.StatusHeartbeat = 10 * time.Minute
	}
	if r.Workers <= 0 {
		r.Workers = 8
	}
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	if r.PassTimeout <= 0 {
		r.PassTimeout = DefaultPassTimeout
	}
}

const secretIndex = "spec.credentialSecret"

// SetupWithManager registers the reconciler. Status-only changes do not trigger it: they are
// its own writes, and re-reading the cloud for them would waste quota. Secrets are watched by
// metadata only (a rotation changes the resourceVersion) and read uncached when used.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.defaults()
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1.Cluster{}, secretIndex, func(o client.Object) []string {
		c := o.(*v1.Cluster)
		if p := r.provider(c); p != nil {
			return []string{p.CredentialSecret(c)}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index clusters by credential secret: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.Cluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, leftFleet))).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.clustersForSecret)).
		Named("hosted-cluster").
		WithOptions(r.controllerOptions()).
		Complete(r)
}

// controllerOptions are the hosted controller's options: Workers, and RateLimiter's backoff for
// a failing cluster.
func (r *Reconciler) controllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: r.Workers, RateLimiter: RateLimiter()}
}

// leftFleet passes the update that removes the join's finalizer from a Cluster being deleted:
// the cloud delete waited for it.
var leftFleet = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectNew.GetDeletionTimestamp().IsZero() &&
			controllerutil.ContainsFinalizer(e.ObjectOld, JoinFinalizer) && !controllerutil.ContainsFinalizer(e.ObjectNew, JoinFinalizer)
	},
}

// clustersForSecret re-syncs the clusters using a credential Secret when it changes (rotation).
func (r *Reconciler) clustersForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1.ClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{secretIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the Clusters using a credential Secret", "secret", client.ObjectKeyFromObject(o))
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
	}
	return out
}

func (r *Reconciler) provider(c *v1.Cluster) Provider {
	for _, p := range r.Providers {
		if p.Matches(c) {
			return p
		}
	}
	return nil
}

// pass carries one reconcile's state.
type pass struct {
	r      *Reconciler
	p      Provider
	c      *v1.Cluster
	orig   *v1.Cluster
	log    func(msg string, kv ...any)
	status *v1.ClusterStatus
	// observed: the provider was read in this pass; invalidConfig: the config was refused.
	observed, invalidConfig bool
	// deadline is the pass's own deadline (PassTimeout): its Err says the pass ran out of time.
	deadline context.Context
}

// Hosted clusters, their cloud credential Secrets (metadata watched, values read on demand) and
// an Event per provider operation.
// +kubebuilder:rbac:groups=management.drover.io,resources=clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=management.drover.io,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=management.drover.io,resources=clusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one pass for one Cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.defaults()
	log := ctrl.LoggerFrom(ctx)
	c := &v1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.HostedClusters.Delete(req.String())
			HostedCredentials.Delete(req.String())
			metrics.RefreshAge.Delete(req.String())
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	p := r.provider(c)
	if p == nil {
		return reconcile.Result{}, nil
	}
	ps := &pass{r: r, p: p, c: c, orig: c.DeepCopy(), status: &c.Status, log: func(msg string, kv ...any) { log.Info(msg, kv...) }}
	// The pass's work runs under its deadline; the final status write (finish) does not, so a
	// pass that ran out of time still reports it.
	pctx, cancel := context.WithTimeout(ctx, r.PassTimeout)
	defer cancel()
	ps.deadline = pctx

	if !c.DeletionTimestamp.IsZero() {
		res, err := ps.delete(pctx)
		return res, ps.finish(ctx, err)
	}
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		patch := client.MergeFrom(c.DeepCopy())
		controllerutil.AddFinalizer(c, Finalizer)
		if err := r.Client.Patch(ctx, c, patch); err != nil {
			return reconcile.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		ps.orig = c.DeepCopy()
	}
	res, err := ps.sync(pctx)
	return requeueOnConflict(ctx, res, ps.finish(ctx, err))
}

// conflictRetry is how soon a pass whose write met a newer version of the Cluster runs again.
const conflictRetry = 200 * time.Millisecond

// requeueOnConflict: a write refused because the Cluster changed during the pass (a user's
// edit, which the optimistic lock keeps from being overwritten) is an expected outcome, not an
// error: the pass runs again shortly, re-reads the Cluster and merges again.
func requeueOnConflict(ctx context.Context, res reconcile.Result, err error) (reconcile.Result, error) {
	if err == nil || !apierrors.IsConflict(err) {
		return res, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("The Cluster changed during the pass; reading it again", "error", err.Error())
	return reconcile.Result{RequeueAfter: conflictRetry}, nil
}

// finish writes the status if it changed and turns engine errors into results.
func (ps *pass) finish(ctx context.Context, err error) error {
	if apierrors.IsConflict(err) {
		// The spec write that adopts upstream changes met a newer Cluster (a user's edit, or
		// another controller's annotation or finalizer): the pass changed nothing at the
		// provider and adopted nothing. Recording its refresh would make the pass that runs
		// again skip the provider until the next refresh interval, with Synced=True over a
		// change still to adopt; record nothing and let it redo the whole pass.
		return err
	}
	if ps.observed && !ps.invalidConfig {
		ps.setCondition(CondConfigValid, metav1.ConditionTrue, v1.ReasonValid, "The config is valid.")
	}
	if ps.status.LastRefreshTime != nil {
		ps.r.lastRead.Store(ps.key(), ps.status.LastRefreshTime.Time)
		metrics.RefreshAge.Set(ps.key().String(), ps.p.Name(), ps.status.LastRefreshTime.Time)
	}
	phase := string(ps.status.Phase)
	if phase == "" {
		phase = "pending"
	}
	metrics.HostedClusters.Set(ps.key().String(), ps.p.Name(), phase)
	state, reason := CredentialsState(ps.status.Conditions)
	HostedCredentials.Set(ps.key().String(), ps.p.Name(), state, reason)
	if ps.onlyRefreshTimeChanged() {
		return ps.result(err)
	}
	if !equalStatus(&ps.orig.Status, &ps.c.Status) {
		patch := client.MergeFrom(ps.orig)
		if perr := ps.r.Client.Status().Patch(ctx, ps.c, patch); perr != nil && !apierrors.IsNotFound(perr) {
			return errors.Join(err, fmt.Errorf("patch status: %w", perr))
		}
	}
	return ps.result(err)
}

// writeStatus writes the status now, mid-pass, and makes it the base of the pass's final write.
func (ps *pass) writeStatus(ctx context.Context) error {
	if equalStatus(&ps.orig.Status, &ps.c.Status) {
		return nil
	}
	patch := client.MergeFromWithOptions(ps.orig, client.MergeFromWithOptimisticLock{})
	status := *ps.c.Status.DeepCopy()
	err := ps.r.Client.Status().Patch(ctx, ps.c, patch)
	ps.c.Status = status
	if err != nil {
		return err
	}
	ps.orig = ps.c.DeepCopy()
	return nil
}

func (ps *pass) key() types.NamespacedName {
	return types.NamespacedName{Namespace: ps.c.Namespace, Name: ps.c.Name}
}

// onlyRefreshTimeChanged reports a status that differs from the stored one only by a
// lastRefreshTime younger than the heartbeat.
func (ps *pass) onlyRefreshTimeChanged() bool {
	old, cur := ps.orig.Status, ps.c.Status
	if old.LastRefreshTime == nil || cur.LastRefreshTime == nil || cur.LastRefreshTime.Sub(old.LastRefreshTime.Time) >= ps.r.StatusHeartbeat {
		return false
	}
	old.LastRefreshTime = cur.LastRefreshTime
	return equalStatus(&old, &cur)
}

func (ps *pass) result(err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return nil // reported in a condition; a spec change retriggers
	}
	return err
}

func (ps *pass) sync(ctx context.Context) (reconcile.Result, error) {
	c, p, st := ps.c, ps.p, ps.status
	if err := p.Validate(c); err != nil {
		res, err := ps.invalid(err)
		// A cluster that exists keeps being observed (and upstream changes adopted) on
		// schedule while its config is invalid; one never created has nothing to observe.
		if err != nil || st.Phase == "" || st.Phase == v1.PhaseCreating || st.Phase == v1.PhaseFailed {
			return res, err
		}
	}
	if !ps.due() {
		return reconcile.Result{RequeueAfter: ps.untilDue()}, nil
	}
	if st.Phase == "" && !p.Imported(c) && meta.FindStatusCondition(st.Conditions, CondReady) == nil {
		// A cluster to create is not ready from its first pass, also when the provider cannot
		// be reached or throttles (Synced says why). The phase stays empty until the provider
		// says the cluster does not exist yet (notFound records creating before the call).
		ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonCreating, "drover is about to create the cluster at the provider.")
	}

	sess, res, err := ps.connect(ctx)
	if sess == nil {
		if err != nil && ps.invalidConfig {
			ctrl.LoggerFrom(ctx).Info("No session while the config is invalid", "error", err)
			return reconcile.Result{RequeueAfter: ps.nextRefresh()}, nil
		}
		return res, err
	}
	observeStart := time.Now()
	obs, err := sess.Observe(ctx, c)
	metrics.RefreshDuration.WithLabelValues(p.Name()).Observe(time.Since(observeStart).Seconds())
	if err != nil {
		if ps.invalidConfig {
			// The invalid config may be why (a bad identity field): keep its conditions, try
			// again at the next refresh.
			ctrl.LoggerFrom(ctx).Info("Observe failed while the config is invalid", "error", err)
			return reconcile.Result{RequeueAfter: ps.nextRefresh()}, nil
		}
		return ps.providerError("Observe", err)
	}
	ps.setCondition(CondCredentials, metav1.ConditionTrue, v1.ReasonAccepted, "The provider accepted the credentials.")
	ps.readAgain()
	// The config is valid unless checks against upstream (CheckPush) find otherwise below; set
	// at the end of the pass so the condition does not flap within it.
	ps.observed = true
	now := metav1.NewTime(ps.r.Clock.Now())
	st.LastRefreshTime = &now
	st.RefreshRequest = c.Annotations[RefreshAnnotation]
	st.ObservedGeneration = c.Generation
	st.PendingOperations = obs.Pending
	failedFields := ps.settleOperations(obs)

	config, err := p.Config(c)
	if err != nil {
		return reconcile.Result{}, err
	}

	if !obs.Exists {
		return ps.notFound(ctx, sess, config)
	}
	// Never observed by this Cluster: a new import, a Cluster that lost its status (restore),
	// or one naming someone else's cluster. Its config has no base to tell drover's changes
	// from the provider's, so this pass changes nothing at the provider.
	firstSight := st.Phase == "" || st.Phase == v1.PhaseImporting
	if st.Phase == "" && p.Imported(c) {
		st.Phase = v1.PhaseImporting
	}
	adopting := st.Phase == "" && !p.Imported(c)
	if adopting && c.Annotations[AdoptAnnotation] != "true" {
		// The cache may not hold this pass's own create yet (phase creating): confirm live.
		live := &v1.Cluster{}
		if err := ps.r.APIReader.Get(ctx, client.ObjectKeyFromObject(c), live); err != nil {
			return reconcile.Result{}, fmt.Errorf("re-read Cluster %s: %w", ps.key(), err)
		}
		if live.Status.Phase != "" {
			ps.orig = ps.c.DeepCopy() // nothing to write from a stale read
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		// Someone else's cluster (another Cluster's, a console's): taking it over would push
		// this config over it, and deleting this Cluster would delete it.
		msg := fmt.Sprintf("A %s cluster of this name already exists at the provider, and this Cluster did not create it: drover neither changes nor deletes it. "+
			"To manage it, set imported: true in the config (drover never deletes an imported cluster); to create a new one, choose another name. "+
			"If drover did create it and this Cluster lost its status (a restore from a backup), annotate the Cluster %s=true.", p.Name(), AdoptAnnotation)
		st.FailureMessage = msg
		ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonAlreadyExists, msg)
		if old := meta.FindStatusCondition(ps.orig.Status.Conditions, CondReady); old == nil || old.Reason != v1.ReasonAlreadyExists {
			ps.event(corev1.EventTypeWarning, v1.ReasonAlreadyExists, "Create", "%s", msg)
		}
		return reconcile.Result{RequeueAfter: ps.nextRefresh()}, nil
	}
	if err := p.SetStatus(c, obs.Upstream, nil, obs); err != nil {
		return reconcile.Result{}, err
	}
	if obs.Failed {
		st.Phase = v1.PhaseFailed
		st.FailureMessage = obs.FailedMessage
		ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonProviderFailed, obs.FailedMessage)
		return reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
	}
	if obs.Creating {
		st.Phase = v1.PhaseCreating
		ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonCreating, "The provider is creating the cluster ("+obs.Status+").")
		return reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
	}

	applied, err := p.Applied(c)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(failedFields) > 0 {
		// The provider did not apply these fields: forget that they were applied, so the
		// merge pushes them again rather than adopting the old upstream value over the user's.
		applied = deepCopyTree(applied)
		for _, path := range failedFields {
			v, ok := p.Schema().Get(obs.Upstream, path)
			p.Schema().Set(applied, path, v, ok)
		}
		if err := p.SetStatus(c, nil, applied, nil); err != nil {
			return reconcile.Result{}, err
		}
	}
	policy := merge.Adopt
	// The first pass after a create adopts what the provider chose for defaulted fields (GKE's
	// zones of a regional cluster), whatever the policy: that is not drift.
	created := st.Phase == v1.PhaseCreating
	if c.Spec.SyncPolicy == v1.SyncPolicyEnforce && !created && !firstSight {
		policy = merge.Enforce
	}
	if firstSight {
		// Whatever a restored or imported config says, the provider's state is newer: with the
		// config as the base, every difference is an upstream change and is adopted, none
		// pushed (an Adopted event each); edits after this pass are pushed as usual.
		applied = config
		st.FailureMessage = ""
		if adopting {
			ps.event(corev1.EventTypeNormal, "AdoptedCluster", "Adopt", "Took over the existing %s cluster (%s=true), with the provider's settings", p.Name(), AdoptAnnotation)
		}
	}
	result := merge.ThreeWay(p.Schema(), policy, applied, config, obs.Upstream)

	if obs.Updating {
		// Mid-update the provider shows a mix of old and new: adopt nothing, push nothing.
		st.Phase = v1.PhaseUpdating
		ps.setCondition(CondUpdating, metav1.ConditionTrue, v1.ReasonInProgress, obs.Why)
		ps.setCondition(CondReady, metav1.ConditionTrue, v1.ReasonUpdating, "The cluster is usable; an update is in progress: "+obs.Why)
		if obs.External != "" {
			ps.setCondition(CondSynced, metav1.ConditionFalse, v1.ReasonExternalUpdate, "An update started outside drover is in progress ("+obs.External+"); drover pushes nothing until it ends, then adopts its result.")
		}
		return reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
	}
	ps.setCondition(CondUpdating, metav1.ConditionFalse, v1.ReasonIdle, "No update is in progress.")

	// Adopt upstream-only changes into the spec first: if the status write below were lost, the
	// self-healing base rule (fields equal on both sides re-enter the base) keeps us correct.
	schema := p.Schema()
	newConfig := config
	if len(result.Adopt) > 0 {
		newConfig = deepCopyTree(config)
		for _, ch := range result.Adopt {
			schema.Set(newConfig, ch.Path, ch.Upstream, ch.HasUpstream)
		}
		if err := ps.patchSpec(ctx, newConfig); err != nil {
			return reconcile.Result{}, err
		}
		for _, ch := range result.Adopt {
			field, value := p.Name()+"Config."+ch.Path.String(), show(ch.Upstream, ch.HasUpstream)
			if created {
				ps.event(corev1.EventTypeNormal, EventProviderDefault, "Adopted", "%s", ProviderDefaultNote(field, value))
				continue
			}
			ps.event(corev1.EventTypeNormal, EventAdopted, "Adopted", "%s", AdoptedNote(field, value))
		}
	}

	var done []merge.Change
	var started *Started
	var effective map[string]any // what the provider should hold once the push is done
	if len(result.Push) > 0 {
		effective = overlay(schema, obs.Upstream, newConfig)
	}
	if len(result.Push) > 0 && !ps.invalidConfig {
		if err := sess.CheckPush(result.Push, effective, obs.Upstream); err != nil {
			if _, err := ps.invalid(err); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	if ps.invalidConfig {
		// Nothing is pushed, but the pass still refreshed the status and adopted upstream
		// changes; the unpushed fields keep their old base, so they stay drover's changes.
		if err := ps.recordBase(applied, newConfig, result.Push, nil); err != nil {
			return reconcile.Result{}, err
		}
		st.Phase = v1.PhaseActive
		ps.setCondition(CondReady, metav1.ConditionTrue, v1.ReasonActive, "The cluster is active; drover pushes nothing until its config is fixed (see ConfigValid).")
		return reconcile.Result{RequeueAfter: ps.nextRefresh()}, nil
	}
	if len(result.Push) > 0 {
		done, started, err = sess.Push(ctx, c, result.Push, effective, obs.Upstream)
		if err != nil && !retryNextPass(err) {
			// What was done before the error still counts.
			if berr := ps.recordBase(applied, newConfig, result.Push, done); berr != nil {
				return reconcile.Result{}, errors.Join(err, berr)
			}
			return ps.providerError("Push", err)
		}
		if errors.Is(err, ErrBusy) {
			ps.setCondition(CondUpdating, metav1.ConditionTrue, v1.ReasonProviderBusy, "The provider is busy with another operation; drover will retry.")
		}
	}
	if err := ps.recordBase(applied, newConfig, result.Push, done); err != nil {
		return reconcile.Result{}, err
	}
	ps.reportConflicts(result)
	for _, ch := range result.Reverts {
		if merge.Has(done, ch.Path) {
			ps.event(corev1.EventTypeNormal, EventDriftReverted, "Reverted", "%s", RevertedNote(p.Name()+"Config."+ch.Path.String(), show(ch.Upstream, ch.HasUpstream), show(ch.Config, ch.HasConfig)))
		}
	}
	if started != nil {
		if started.ID != "" {
			st.PendingOperations = append(st.PendingOperations, started.ID)
			if st.PendingFields == nil {
				st.PendingFields = map[string][]string{}
			}
			for _, ch := range done {
				st.PendingFields[started.ID] = append(st.PendingFields[started.ID], ch.Path.String())
			}
		}
		st.Phase = v1.PhaseUpdating
		ps.setCondition(CondUpdating, metav1.ConditionTrue, v1.ReasonInProgress, started.What)
		ps.event(corev1.EventTypeNormal, "UpdateStarted", "Update", "%s", started.What)
	}
	pending := len(result.Push) > len(done) || started != nil || retryNextPass(err)
	st.FailureMessage = ""
	if pending {
		if started == nil {
			st.Phase = v1.PhaseUpdating
		}
		if errors.Is(err, ErrChangedSinceRead) {
			ps.setCondition(CondSynced, metav1.ConditionFalse, v1.ReasonChangedSinceRead, msgChangedSinceRead)
		} else {
			msg := fmt.Sprintf("%d field(s) still to push.", len(result.Push)-len(done))
			if len(result.Push) == len(done) {
				msg = "Every change was sent; the provider is applying it."
			}
			ps.setCondition(CondSynced, metav1.ConditionFalse, v1.ReasonPushing, msg)
		}
		ps.setCondition(CondReady, metav1.ConditionTrue, v1.ReasonUpdating, "The cluster is usable; drover is applying changes.")
		return reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
	}
	if len(done) > 0 {
		// Everything pushed is done (synchronous calls such as tags): the provider now holds
		// the pushed values, so the status shows them rather than the read from before the push,
		// which would say the fields differ until the next refresh.
		up := deepCopyTree(obs.Upstream)
		for _, ch := range done {
			v, ok := schema.Get(effective, ch.Path)
			schema.Set(up, ch.Path, v, ok)
		}
		if err := p.SetStatus(c, up, nil, nil); err != nil {
			return reconcile.Result{}, fmt.Errorf("record the pushed values: %w", err)
		}
	}
	st.Phase = v1.PhaseActive
	ps.setCondition(CondSynced, metav1.ConditionTrue, v1.ReasonInSync, "Every managed field matches the provider.")
	ps.setCondition(CondReady, metav1.ConditionTrue, v1.ReasonActive, "The cluster is active.")
	return reconcile.Result{RequeueAfter: ps.nextRefresh()}, nil
}

// recordBase stores the new applied base: the config as it now is, except for changes that
// were not pushed yet, which keep their old base so they are still seen as drover's changes.
func (ps *pass) recordBase(applied, config map[string]any, push, done []merge.Change) error {
	schema := ps.p.Schema()
	base := deepCopyTree(config)
	for _, ch := range push {
		if merge.Has(done, ch.Path) {
			continue
		}
		v, ok := schema.Get(applied, ch.Path)
		schema.Set(base, ch.Path, v, ok)
	}
	if err := ps.p.SetStatus(ps.c, nil, base, nil); err != nil {
		return fmt.Errorf("record the applied config: %w", err)
	}
	return nil
}

func (ps *pass) reportConflicts(result merge.Result) {
	if len(result.Conflicts) == 0 {
		// A conflict stays reported until the config changes again, so it is seen after the
		// passes that follow (which no longer conflict: drover's value was applied).
		if prev := meta.FindStatusCondition(ps.status.Conditions, CondConflict); prev != nil && prev.Status == metav1.ConditionTrue && prev.ObservedGeneration == ps.c.Generation {
			return
		}
		ps.setCondition(CondConflict, metav1.ConditionFalse, v1.ReasonNoConflict, "No field was changed on both sides since the last sync.")
		return
	}
	var msgs []string
	for _, ch := range result.Conflicts {
		field := ps.p.Name() + "Config." + ch.Path.String()
		msgs = append(msgs, conflictEntry(field, show(ch.Config, ch.HasConfig), show(ch.Upstream, ch.HasUpstream)))
		ps.event(corev1.EventTypeWarning, EventConflict, "Conflict", "%s", ConflictNote(field, show(ch.Config, ch.HasConfig), show(ch.Upstream, ch.HasUpstream)))
	}
	ps.setCondition(CondConflict, metav1.ConditionTrue, v1.ReasonChangedOnBothSides, ConflictMessagePrefix+strings.Join(msgs, "; "))
}

func (ps *pass) notFound(ctx context.Context, sess Session, config map[string]any) (reconcile.Result, error) {
	c, p, st := ps.c, ps.p, ps.status
	if p.Imported(c) {
		st.Phase = v1.PhaseFailed
		msg := fmt.Sprintf("The cluster to import does not exist at the provider (%s): check its name, location and credentials.", p.Name())
		st.FailureMessage = msg
		ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonNotFound, msg)
		return reconcile.Result{RequeueAfter: ps.nextRefresh()}, nil
	}
	if st.Phase != "" && st.Phase != v1.PhaseCreating && st.Phase != v1.PhaseFailed {
		st.Phase = v1.PhaseFailed
		msg := "The cluster no longer exists at the provider: it was deleted outside drover. Delete this Cluster, or recreate it by removing its status."
		st.FailureMessage = msg
		ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonDeletedOutsideDrover, msg)
		return reconcile.Result{RequeueAfter: ps.nextRefresh()}, nil
	}
	defaulted, err := p.CreateDefaults(config)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !reflect.DeepEqual(defaulted, config) {
		if err := ps.patchSpec(ctx, defaulted); err != nil {
			return reconcile.Result{}, err
		}
		config = defaulted
	}
	// Record the create before sending it. A create whose outcome this pass never learns (the
	// process ends, or the response is lost after the provider accepted it) would otherwise
	// leave no trace here, and the next pass would find "someone else's" cluster and refuse it
	// as AlreadyExists. With phase creating recorded, the next pass takes an existing cluster
	// as this create's and a missing one as never created (and creates it).
	before := st.DeepCopy()
	st.Phase = v1.PhaseCreating
	st.FailureMessage = ""
	if err := p.SetStatus(c, nil, p.CreateBase(config), nil); err != nil {
		return reconcile.Result{}, err
	}
	ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonCreating, "drover is asking the provider to create the cluster.")
	if err := ps.writeStatus(ctx); err != nil {
		return reconcile.Result{}, fmt.Errorf("record the create before sending it: %w", err)
	}
	started, err := sess.Create(ctx, c, config)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) || errors.Is(err, ErrCredentials) {
			// Refused before anything was created (a config or credential the provider
			// rejects): nothing exists to take as this create's. Any other failure (lost
			// response, throttling after an SDK retry, a 5xx) may hide an accepted create.
			*st = *before
		}
		return ps.providerError("Create", err)
	}
	if started != nil && started.ID != "" {
		st.PendingOperations = append(st.PendingOperations, started.ID)
	}
	ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonCreating, "drover asked the provider to create the cluster.")
	ps.event(corev1.EventTypeNormal, "Creating", "Create", "Creating the cluster at the provider")
	return reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
}

func (ps *pass) delete(ctx context.Context) (reconcile.Result, error) {
	c, p, st := ps.c, ps.p, ps.status
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return reconcile.Result{}, nil
	}
	if controllerutil.ContainsFinalizer(c, JoinFinalizer) {
		// The cluster leaves the fleet first: its agent is removed while the cluster is there.
		ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonDeleting, "The cluster is leaving the fleet (its fleet Cluster and agent are removed first); then it is deleted at the provider.")
		return reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
	}
	if p.Imported(c) || st.Phase == "" {
		// Imported clusters are forgotten, never deleted in the cloud; never-created ones (and
		// ones refused as AlreadyExists) have nothing to delete.
		return reconcile.Result{}, ps.removeFinalizer(ctx)
	}
	if c.Annotations[OrphanAnnotation] == "true" {
		ps.event(corev1.EventTypeWarning, "Orphaned", "Delete", "The cluster was left running at the provider (%s=true): drover no longer manages it; delete it there when it is no longer needed", OrphanAnnotation)
		ctrl.LoggerFrom(ctx).Info("Cluster left running at the provider", "annotation", OrphanAnnotation)
		return reconcile.Result{}, ps.removeFinalizer(ctx)
	}
	// Deleting from here on, also while credentials are missing: the phase says what is
	// pending, CredentialsValid what blocks it.
	st.Phase = v1.PhaseDeleting
	// Not ready from the start of the delete, whatever the passes that follow run into.
	ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonDeleting, "drover is deleting the cluster at the provider.")
	sess, res, err := ps.connect(ctx)
	if sess == nil {
		ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonDeleting, fmt.Sprintf(
			"The cluster cannot be deleted at the provider until its credentials work (see CredentialsValid). To remove this Cluster and leave the cloud cluster running instead, annotate it %s=true.", OrphanAnnotation))
		return res, err
	}
	obs, err := sess.Observe(ctx, c)
	if err != nil {
		return ps.providerError("Observe", err)
	}
	ps.setCondition(CondCredentials, metav1.ConditionTrue, v1.ReasonAccepted, "The provider accepted the credentials.")
	ps.readAgain()
	gone, err := sess.Delete(ctx, c, obs)
	if err != nil && !retryNextPass(err) {
		return ps.providerError("Delete", err)
	}
	if gone {
		ps.r.lastRead.Delete(ps.key())
		ps.event(corev1.EventTypeNormal, "Deleted", "Delete", "The cluster was deleted at the provider")
		return reconcile.Result{}, ps.removeFinalizer(ctx)
	}
	ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonDeleting, "The provider is deleting the cluster.")
	return reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
}

func (ps *pass) removeFinalizer(ctx context.Context) error {
	patch := client.MergeFrom(ps.c.DeepCopy())
	controllerutil.RemoveFinalizer(ps.c, Finalizer)
	if err := ps.r.Client.Patch(ctx, ps.c, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	ps.orig = ps.c.DeepCopy() // the object may be gone: skip the status write
	return nil
}

// connect loads the credential Secret and builds a session.
func (ps *pass) connect(ctx context.Context) (Session, reconcile.Result, error) {
	c, p := ps.c, ps.p
	name := p.CredentialSecret(c)
	secret := &corev1.Secret{}
	if err := ps.r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			ps.setCondition(CondCredentials, metav1.ConditionFalse, v1.ReasonSecretNotFound,
				fmt.Sprintf("Secret %s/%s named by %sConfig.credentialSecret does not exist: create it.", c.Namespace, name, p.Name()))
			ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonCredentialsMissing, "No credentials; see the CredentialsValid condition.")
			ps.cannotCompare(v1.ReasonCredentialsUnavailable, "Secret "+c.Namespace+"/"+name+" does not exist (see CredentialsValid)")
			// The Secret watch retriggers as soon as it appears; this is a safety net.
			return nil, reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
		}
		return nil, reconcile.Result{}, fmt.Errorf("get credential secret: %w", err)
	}
	sess, err := p.Connect(ctx, c, secret, ps.r.Limits.Transport(LimitKey(p, c, secret)))
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			ps.setCondition(CondCredentials, metav1.ConditionFalse, fe.Reason, fe.Message)
			ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonCredentialsInvalid, "Unusable credentials; see the CredentialsValid condition.")
			ps.cannotCompare(v1.ReasonCredentialsUnavailable, "Secret "+c.Namespace+"/"+name+" holds no usable credentials (see CredentialsValid)")
			return nil, reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
		}
		return nil, reconcile.Result{}, err
	}
	return sess, reconcile.Result{}, nil
}

func (ps *pass) providerError(op string, err error) (reconcile.Result, error) {
	if ps.timedOut(err) {
		// Before the other kinds: an SDK may report a call it gave up on as anything.
		limit := time.Duration(0)
		if ps.deadline != nil && errors.Is(ps.deadline.Err(), context.DeadlineExceeded) {
			limit = ps.r.PassTimeout
		}
		ps.setCondition(CondSynced, metav1.ConditionFalse, ReasonProviderTimeout, TimeoutMessage(op, limit))
		return reconcile.Result{}, fmt.Errorf("%s %s/%s: the provider did not answer in time: %w", op, ps.c.Namespace, ps.c.Name, err)
	}
	switch {
	case errors.Is(err, ErrCredentials):
		ps.rejected(op, err)
	case errors.Is(err, ErrChangedSinceRead):
		ps.setCondition(CondSynced, metav1.ConditionFalse, v1.ReasonChangedSinceRead, msgChangedSinceRead)
		return reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
	case errors.Is(err, ErrBusy):
		return reconcile.Result{RequeueAfter: ps.r.PollInterval}, nil
	case errors.Is(err, ErrThrottled):
		if wait := RetryAfterOf(err); wait >= BackoffBase {
			// The provider said when to come back: no call before then. Returning no error
			// keeps the controller's own backoff from retrying sooner; a little jitter keeps
			// the clusters of one throttled account from coming back all at once.
			ps.setCondition(CondSynced, metav1.ConditionFalse, v1.ReasonThrottled, fmt.Sprintf(
				"The provider is throttling drover: drover waits for the provider's Retry-After of %s before calling it again.", roughDuration(wait)))
			ps.log("The provider is throttling; waiting for its Retry-After", "op", op, "retryAfter", wait.String(), "error", err.Error())
			return reconcile.Result{RequeueAfter: wait + time.Duration(rand.Float64()*0.1*float64(wait))}, nil //nolint:gosec // jitter, not security
		}
		ps.setCondition(CondSynced, metav1.ConditionFalse, v1.ReasonThrottled, "The provider is throttling drover; backing off.")
	default:
		var fe *FieldError
		if errors.As(err, &fe) {
			return ps.invalid(err)
		}
		ps.status.FailureMessage = fmt.Sprintf("%s failed: %s", op, stableMessage(err))
		ps.setCondition(CondSynced, metav1.ConditionFalse, v1.ReasonProviderError, ps.status.FailureMessage)
	}
	// Returning the error gives exponential backoff per cluster; it is logged in full.
	return reconcile.Result{}, fmt.Errorf("%s %s/%s: %w", op, ps.c.Namespace, ps.c.Name, err)
}

// timedOut reports a provider call that got no answer in time: the pass's deadline passed, or
// the call's own timeout (response headers, TLS handshake, an SDK's per-try timeout) did.
func (ps *pass) timedOut(err error) bool {
	if ps.deadline != nil && errors.Is(ps.deadline.Err(), context.DeadlineExceeded) {
		return true
	}
	return IsTimeout(err)
}

// EventCredentialsRejected (Warning) is recorded when the provider starts rejecting a
// cluster's credentials (once per finding, not once per retry).
const EventCredentialsRejected = v1.ReasonCredentialsRejected

// rejected reports credentials the provider refused: CredentialsValid=False/Rejected naming the
// Secret, Ready=False, Synced=Unknown (drover cannot compare the cluster with the provider), and
// a Warning Event when this is new. Every message is stable across retries that fail the same
// way, so those write nothing.
func (ps *pass) rejected(op string, err error) {
	secret := ps.c.Namespace + "/" + ps.p.CredentialSecret(ps.c)
	why := Sentence(stableMessage(err))
	msg := fmt.Sprintf("The provider rejected the credentials of Secret %s: %s If the Secret holds current values, check the account, project or subscription the config names (a provider may refuse a wrong one as forbidden); drover retries with backoff.", secret, why)
	if prev := meta.FindStatusCondition(ps.status.Conditions, CondCredentials); prev == nil || prev.Status != metav1.ConditionFalse || prev.Reason != v1.ReasonRejected || prev.Message != msg {
		ps.event(corev1.EventTypeWarning, EventCredentialsRejected, op, "%s: the provider rejected the credentials of Secret %s: %s Put current values in the Secret (not an expired, revoked or mistyped key or client secret) for the account, project or subscription the config names: until then drover can neither read nor change the cluster, and retries with backoff.", op, secret, why)
	}
	ps.setCondition(CondCredentials, metav1.ConditionFalse, v1.ReasonRejected, msg)
	ps.setCondition(CondReady, metav1.ConditionFalse, v1.ReasonCredentialsInvalid, "See the CredentialsValid condition.")
	ps.cannotCompare(v1.ReasonCredentialsRejected, "the provider rejects the credentials of Secret "+secret+" (see CredentialsValid)")
}

// cannotCompare sets Synced=Unknown: the provider cannot be read, so whether the cluster matches
// the config is not known. The message gives the last successful read (stable across retries);
// the next successful refresh sets Synced again.
func (ps *pass) cannotCompare(reason, why string) {
	since := "drover has never read the cluster at the provider"
	if t := ps.status.LastRefreshTime; t != nil {
		since = "drover cannot compare the cluster with the provider since its last successful read at " + t.UTC().Format(time.RFC3339)
	}
	ps.setCondition(CondSynced, metav1.ConditionUnknown, reason, since+": "+why+".")
}

// readAgain: the provider was read, so a Synced=Unknown of a pass that could not read it no
// longer holds; the rest of the pass sets Synced from what it finds.
func (ps *pass) readAgain() {
	if sc := meta.FindStatusCondition(ps.status.Conditions, CondSynced); sc != nil && sc.Status == metav1.ConditionUnknown {
		meta.RemoveStatusCondition(&ps.status.Conditions, CondSynced)
	}
}

// Sentence is msg ending in exactly one period (provider messages come with or without one),
// for messages that go on after it.
func Sentence(msg string) string {
	msg = strings.TrimRight(strings.TrimSpace(msg), ".")
	if msg == "" {
		return msg
	}
	return msg + "."
}

// TokenRefusal is the code and message of a token request an identity provider refused with
// an OAuth error body, as one stable line: the error code (else "token" and the HTTP status;
// status 0: no response) and the description's first line (else the status text). The lines
// after the first carry trace IDs and timestamps that differ on every call and would rewrite
// the status on each retry.
func TokenRefusal(errorCode, description string, status int) (code, msg string) {
	code, msg = errorCode, description
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.TrimSpace(msg)
	if code == "" {
		code = "token"
		if status != 0 {
			code = fmt.Sprintf("token %d", status)
		}
	}
	if msg == "" && status != 0 {
		msg = http.StatusText(status)
	}
	return code, msg
}

// msgChangedSinceRead is the Synced message of a write refused with 412 (ErrChangedSinceRead).
const msgChangedSinceRead = "The cluster was changed at the provider by someone else since drover read it, so the provider refused drover's write (precondition failed: the eTag no longer matches). drover re-reads it, keeps that change and pushes again on the next pass."

// retryNextPass says whether err is no failure but a reason to re-read and try again on the
// next pass: the provider busy with another operation, or the resource changed since it was read.
func retryNextPass(err error) bool {
	return errors.Is(err, ErrBusy) || errors.Is(err, ErrChangedSinceRead)
}

// requestID matches the request and correlation IDs SDK errors carry (AWS "RequestID: x",
// Azure "X-Ms-Request-Id: x"), which differ on every call.
var requestID = regexp.MustCompile(`(?i)((?:x-ms-)?(?:correlation-)?request-?id)(["']?\s*[:=]\s*["']?)[0-9a-z][0-9a-z-]*`)

// StableMessage describes err for a condition: the provider's error code and message, without
// the SDK's wrapping or request IDs.
func StableMessage(err error) string { return stableMessage(err) }

// stableMessage describes err for a condition: the provider's error code and message, without
// the SDK's wrapping or request IDs, so a retry that fails the same way leaves the status as it
// is (a status write per retry would cost more than the retry).
func stableMessage(err error) string {
	var pe *ProviderError
	if errors.As(err, &pe) {
		if pe.Message == "" {
			return pe.Code
		}
		return pe.Code + ": " + requestID.ReplaceAllString(pe.Message, "$1$2…")
	}
	return requestID.ReplaceAllString(err.Error(), "$1$2…")
}

func (ps *pass) invalid(err error) (reconcile.Result, error) {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return reconcile.Result{}, err
	}
	ps.invalidConfig = true
	msg := fe.Field + ": " + fe.Message
	if prev := meta.FindStatusCondition(ps.status.Conditions, CondConfigValid); prev == nil || prev.Status != metav1.ConditionFalse || prev.Message != msg {
		// Once per finding, not once per refresh.
		ps.event(corev1.EventTypeWarning, "InvalidConfig", "Validate", "%s", msg)
	}
	ps.setCondition(CondConfigValid, metav1.ConditionFalse, fe.Reason, msg)
	ps.setCondition(CondSynced, metav1.ConditionFalse, v1.ReasonInvalidConfig, "Nothing is sent to the provider until the config is fixed: "+msg)
	ps.status.ObservedGeneration = ps.c.Generation
	if ps.status.Phase == "" {
		return reconcile.Result{}, nil // nothing exists to refresh; a spec change retriggers
	}
	// The cluster exists: keep refreshing it (and adopting console changes) on schedule.
	return reconcile.Result{RequeueAfter: ps.nextRefresh()}, nil
}

func (ps *pass) patchSpec(ctx context.Context, config map[string]any) error {
	before := ps.c.DeepCopy()
	if err := ps.p.SetConfig(ps.c, config); err != nil {
		return err
	}
	// The optimistic lock makes a concurrent user edit win: we re-read and merge again.
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	// Patch decodes the stored object into ps.c: keep this pass's status, still to be written.
	status := *ps.c.Status.DeepCopy()
	err := ps.r.Client.Patch(ctx, ps.c, patch)
	ps.c.Status = status
	if err != nil {
		return fmt.Errorf("adopt upstream changes into the spec: %w", err)
	}
	ps.status.ObservedGeneration = ps.c.Generation
	ps.orig.ObjectMeta = ps.c.ObjectMeta
	return nil
}

// due reports whether the provider must be read in this pass.
func (ps *pass) due() bool {
	st := ps.status
	switch {
	case st.ObservedGeneration != ps.c.Generation,
		st.LastRefreshTime == nil,
		st.Phase != v1.PhaseActive,
		ps.c.Annotations[RefreshAnnotation] != st.RefreshRequest:
		return true
	}
	return ps.untilDue() <= 0
}

func (ps *pass) untilDue() time.Duration {
	if ps.status.LastRefreshTime == nil {
		return 0
	}
	last := ps.status.LastRefreshTime.Time
	if t, ok := ps.r.lastRead.Load(ps.key()); ok && t.(time.Time).After(last) {
		last = t.(time.Time)
	}
	return last.Add(ps.refreshInterval()).Sub(ps.r.Clock.Now())
}

func (ps *pass) nextRefresh() time.Duration {
	interval := ps.refreshInterval()
	return interval + time.Duration(rand.Float64()*ps.r.Jitter*float64(interval)) //nolint:gosec // jitter, not security
}

func (ps *pass) refreshInterval() time.Duration {
	if d, ok := ps.r.RefreshIntervals[ps.p.Name()]; ok && d > 0 {
		return d
	}
	return ps.r.RefreshInterval
}

func (ps *pass) setCondition(t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&ps.status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: ps.c.Generation})
}

// changeKinds map the Events of fields found changed at the provider to drover_hosted_changes_total.
var changeKinds = map[string]string{EventConflict: metrics.ChangeConflict, EventAdopted: metrics.ChangeAdoption, EventDriftReverted: metrics.ChangeDriftRevert}

func (ps *pass) event(typ, reason, action, format string, args ...any) {
	if kind, ok := changeKinds[reason]; ok {
		metrics.HostedChanges.WithLabelValues(ps.p.Name(), kind).Inc()
	}
	if ps.r.Recorder != nil {
		ps.r.Recorder.Eventf(ps.c, nil, typ, reason, action, format, args...)
	}
}

// settleOperations forgets finished operations and returns the fields of failed ones, reporting
// each failure in a Warning event and the Synced condition.
func (ps *pass) settleOperations(obs *Observation) []merge.Path {
	st := ps.status
	var failed []merge.Path
	for id, fields := range st.PendingFields {
		if slices.Contains(obs.Pending, id) {
			continue
		}
		if msg, ok := obs.FailedOps[id]; ok {
			for _, f := range fields {
				if path, err := merge.ParsePath(f); err == nil {
					failed = append(failed, path)
				}
			}
			text := fmt.Sprintf("The provider reports operation %s failed (%s) while applying %s; drover will push these fields again.", id, msg, strings.Join(fields, ", "))
			ps.setCondition(CondSynced, metav1.ConditionFalse, v1.ReasonOperationFailed, text)
			ps.event(corev1.EventTypeWarning, "OperationFailed", "Update", "%s", text)
		}
		delete(st.PendingFields, id)
	}
	if len(st.PendingFields) == 0 {
		st.PendingFields = nil
	}
	return failed
}
