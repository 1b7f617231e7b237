// Package join makes hosted clusters members of drover's fleet. When a management.drover.io
// Cluster is active, the Reconciler gets credentials for its Kubernetes API the provider's own
// way (internal/hosted/access), keeps them in a kubeconfig Secret next to it (replaced before
// the token expires), and keeps a fleet.drover.io Cluster of the same name that references the
// Secret: manager-initiated registration (internal/registration) then deploys the agent, which
// registers, and Bundles reach the cluster. The fleet Cluster's labels say the provider, region,
// Kubernetes version and carry the hosted Cluster's own labels, so Bundles can target "all EKS
// clusters in us-west-2".
//
// Deleting the hosted Cluster (or opting out with spec.fleet.join: false) removes the fleet
// Cluster and the agent before anything else: the join's finalizer holds the hosted
// reconciler's cloud delete until then.
package join

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/access"
	"github.com/droverhq/drover/internal/metrics"
)

// Labels drover puts on the fleet Cluster of a hosted cluster (besides the hosted Cluster's own
// labels, copied except those under management.drover.io/ and fleet.drover.io/).
const (
	// LabelProvider is eks, aks or gke.
	LabelProvider = "management.drover.io/provider"
	// LabelRegion is the AWS region, the Azure location or the Google Cloud region (of a zonal
	// cluster: the zone's region).
	LabelRegion = "management.drover.io/region"
	// LabelZone is the zone of a zonal GKE cluster.
	LabelZone = "management.drover.io/zone"
	// LabelKubernetesVersion is the control plane's version as the provider reports it.
	LabelKubernetesVersion = "management.drover.io/kubernetes-version"
	// LabelHostedCluster names the hosted Cluster (same namespace); it is also on the kubeconfig
	// Secret.
	LabelHostedCluster = "management.drover.io/hosted-cluster"
)

// Annotations on the kubeconfig Secret (never the token itself).
const (
	// AnnotationExpires is when the Secret's token expires (RFC 3339).
	AnnotationExpires = "management.drover.io/token-expires"
)

// Finalizer is the join's finalizer on hosted Clusters: the hosted reconciler does not delete
// the cloud cluster while it is there (hosted.JoinFinalizer).
const Finalizer = hosted.JoinFinalizer

// FieldOwner is the field manager of the kubeconfig Secret and the fleet Cluster.
const FieldOwner = "drover-hosted-join"

// SecretName is the kubeconfig Secret of the hosted Cluster called name.
func SecretName(name string) string { return name + "-kubeconfig" }

// Accessor is a provider whose clusters can join: it returns credentials for the cluster's
// Kubernetes API, made with the cluster's credential Secret. Errors wrap access.ErrNotReady,
// access.ErrEndpointPrivate, hosted.ErrCredentials, or are a *hosted.FieldError.
type Accessor interface {
	Access(ctx context.Context, c *v1.Cluster, secret *corev1.Secret, transport hosted.Transport) (*access.Credentials, error)
}

// AccessChecker is a provider that can say why its cluster's API server refuses drover's
// token: the principal the cluster has no access entry for (EKS), or "".
type AccessChecker interface {
	MissingAccess(ctx context.Context, c *v1.Cluster, secret *corev1.Secret, transport hosted.Transport) (string, error)
}

// Reconciler joins active hosted Clusters to the fleet.
type Reconciler struct {
	// Client reads hosted and fleet Clusters and Secrets' metadata from the cache and writes.
	Client client.Client
	// APIReader reads credential Secrets uncached (their data never sits in the cache).
	APIReader client.Reader
	Providers []hosted.Provider
	Recorder  events.EventRecorder
	// Clock decides when the kubeconfig Secret's token is replaced.
	Clock clock.PassiveClock
	// Limits rate-limits provider calls (share the hosted reconciler's).
	Limits *hosted.Limits
	// DefaultJoin is whether a Cluster without spec.fleet.join joins (drover server
	// --hosted-join).
	DefaultJoin bool
	// RetryInterval is how soon a join that failed for a reason someone must fix (access
	// entry missing, token refused, unreachable, no credentials) is tried again (default 1m).
	RetryInterval time.Duration
	// PrivateRetryInterval is how soon a cluster whose endpoint is private only is looked at
	// again (default 10m; a spec change looks at once).
	PrivateRetryInterval time.Duration
	// AgentRemovalTimeout is how long a leaving cluster's agent removal is retried before the
	// fleet Cluster's removal goes on without it (default 5m): a cluster that cannot be reached
	// must not keep its hosted Cluster from being deleted.
	AgentRemovalTimeout time.Duration
	// ProbeTimeout bounds the call that checks the credentials on the cluster (default 15s).
	ProbeTimeout time.Duration
	// ProviderTimeout bounds each provider call of a join (Access, MissingAccess; default
	// hosted.DefaultPassTimeout), so a provider that never answers cannot hold a worker.
	ProviderTimeout time.Duration
	// Workers is the number of clusters joined at once (default 8).
	Workers int

	// warned remembers, per hosted Cluster UID, the finding last sent as a Warning event, so a
	// finding is reported once even when the next pass reads a status from the cache that does
	// not show it yet.
	warned sync.Map
	// written remembers, per hosted Cluster UID, the credentials this process last wrote
	// (*writtenCreds): the cache may not show the Secret or the status of a write yet, and a
	// pass that read it stale would otherwise replace a token just written.
	written sync.Map
	// statusWritten remembers, per hosted Cluster UID, the last status.fleet this process
	// wrote and the resourceVersion it was written over (*writtenStatus): a pass that reads
	// the Cluster from the cache before that write shows in it has nothing new to write.
	statusWritten sync.Map
	// left remembers the clusters whose leave this process finished (finalizer removed), so a
	// pass reading them stale from the cache does not leave again.
	left sync.Map
	// seen maps each hosted Cluster's name to its UID, to forget the above when it is gone.
	seen sync.Map
}

// writtenStatus is a status.fleet patch this process made over resourceVersion base.
type writtenStatus struct {
	base  string
	fleet *v1.FleetStatus
}

// writtenCreds is what a kubeconfig Secret write put in status.fleet.
type writtenCreds struct {
	secret          string
	expire, refresh metav1.Time
}

func (r *Reconciler) defaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	if r.Limits == nil {
		r.Limits = &hosted.Limits{}
	}
	if r.RetryInterval <= 0 {
		r.RetryInterval = time.Minute
	}
	if r.PrivateRetryInterval <= 0 {
		r.PrivateRetryInterval = 10 * time.Minute
	}
	if r.AgentRemovalTimeout <= 0 {
		r.AgentRemovalTimeout = 5 * time.Minute
	}
	if r.ProbeTimeout <= 0 {
		r.ProbeTimeout = 15 * time.Second
	}
	if r.ProviderTimeout <= 0 {
		r.ProviderTimeout = hosted.DefaultPassTimeout
	}
	if r.Workers <= 0 {
		r.Workers = 8
	}
}

// SetupWithManager registers the reconciler: hosted Clusters (every change, the status
// included: the phase says when to join), their fleet Clusters (by name, so a conflicting one
// going away is seen too) and their kubeconfig Secrets (metadata only).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.defaults()
	sameName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.Cluster{}).
		Watches(&fleetv1.Cluster{}, sameName).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name := o.GetLabels()[LabelHostedCluster]
			if name == "" || o.GetName() != SecretName(name) {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		})).
		Named("hosted-join").
		// The hosted controller's backoff (1 s to 5 min): controller-runtime's default retries a
		// failing provider call after 5 ms, in bursts, and waits up to 16 min after an outage.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers, RateLimiter: hosted.RateLimiter()}).
		Complete(r)
}

func (r *Reconciler) provider(c *v1.Cluster) hosted.Provider {
	for _, p := range r.Providers {
		if p.Matches(c) {
			return p
		}
	}
	return nil
}

// wantsJoin says whether the cluster should be in the fleet.
func (r *Reconciler) wantsJoin(c *v1.Cluster) bool {
	if c.Spec.Fleet != nil && c.Spec.Fleet.Join != nil {
		return *c.Spec.Fleet.Join
	}
	return r.DefaultJoin
}

// The join: hosted Clusters (their finalizer; its credential Secrets read uncached), the
// kubeconfig Secret it writes, the fleet Cluster it creates, and Events.
// +kubebuilder:rbac:groups=management.drover.io,resources=clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=management.drover.io,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=management.drover.io,resources=clusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile joins, refreshes or removes one hosted Cluster's fleet membership.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.defaults()
	c := &v1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.HostedFleet.Delete(req.String())
			if uid, ok := r.seen.LoadAndDelete(req.NamespacedName); ok {
				r.warned.Delete(uid)
				r.written.Delete(uid)
				r.statusWritten.Delete(uid)
				r.left.Delete(uid)
			}
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	p := r.provider(c)
	if p == nil {
		return reconcile.Result{}, nil
	}
	r.seen.Store(req.NamespacedName, c.UID)
	ps := &pass{r: r, p: p, c: c, orig: c.DeepCopy(), fleet: &v1.FleetStatus{}}
	if c.Status.Fleet != nil {
		ps.fleet = c.Status.Fleet.DeepCopy()
	}
	var (
		res reconcile.Result
		err error
	)
	switch {
	case !c.DeletionTimestamp.IsZero():
		res, err = ps.leave(ctx, "The cluster is being deleted")
	case !r.wantsJoin(c):
		if controllerutil.ContainsFinalizer(c, Finalizer) {
			res, err = ps.leave(ctx, "The cluster opted out of the fleet (spec.fleet.join: false)")
		} else {
			ps.set(v1.ConditionJoined, false, v1.ReasonJoinDisabled, "The cluster does not join the fleet: spec.fleet.join is false (or unset while drover server runs with --hosted-join=false).")
			meta.RemoveStatusCondition(&ps.fleet.Conditions, v1.ConditionAgentReady)
		}
	default:
		res, err = ps.join(ctx)
	}
	return res, errors.Join(err, ps.finish(ctx))
}

// pass is one reconcile of one hosted Cluster.
type pass struct {
	r    *Reconciler
	p    hosted.Provider
	c    *v1.Cluster
	orig *v1.Cluster
	// fleet is the status.fleet this pass writes (kept apart from c, which patches of the
	// finalizer overwrite with what the server has).
	fleet *v1.FleetStatus
	gone  bool // the hosted Cluster's last finalizer was removed: nothing to write
}

func (ps *pass) st() *v1.FleetStatus { return ps.fleet }

func (ps *pass) set(typ string, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&ps.st().Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: ps.c.Generation})
}

func (ps *pass) event(typ, reason, action, format string, args ...any) {
	if ps.r.Recorder != nil {
		ps.r.Recorder.Eventf(ps.c, nil, typ, reason, action, format, args...)
	}
}

// finish writes status.fleet when it changed (a merge patch of that field only: the hosted
// reconciler owns the rest of the status).
func (ps *pass) finish(ctx context.Context) error {
	key := types.NamespacedName{Namespace: ps.c.Namespace, Name: ps.c.Name}.String()
	if ps.gone {
		metrics.HostedFleet.Delete(key)
		return nil
	}
	ps.track(key)
	before := ps.orig.Status.Fleet
	after := ps.fleet
	if after != nil && after.ClusterName == "" && after.KubeconfigSecret == "" && after.CredentialsExpireTime == nil && len(after.Conditions) == 0 {
		after = nil
	}
	if equalFleet(before, after) {
		return nil
	}
	if w, ok := ps.r.statusWritten.Load(ps.c.UID); ok && w.(*writtenStatus).base == ps.orig.ResourceVersion && equalFleet(w.(*writtenStatus).fleet, after) {
		// This pass read the Cluster as it was before this process's last status write,
		// which wrote what it would write: the cache is behind, not the status.
		return nil
	}
	base := ps.orig.DeepCopy()
	patched := base.DeepCopy()
	patched.Status.Fleet = after
	if err := ps.r.Client.Status().Patch(ctx, patched, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patch status.fleet of %s/%s: %w", ps.c.Namespace, ps.c.Name, err)
	}
	ps.r.statusWritten.Store(ps.c.UID, &writtenStatus{base: base.ResourceVersion, fleet: after.DeepCopy()})
	return nil
}

// track counts the cluster in the HostedFleet gauge by its place in the fleet.
func (ps *pass) track(key string) {
	place, joined := v1.FleetPlaceOf(ps.fleet.Conditions)
	if joined == nil {
		metrics.HostedFleet.Delete(key)
		return
	}
	metrics.HostedFleet.Set(key, ps.p.Name(), string(place), joined.Reason)
}

func equalFleet(a, b *v1.FleetStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ClusterName == b.ClusterName && a.KubeconfigSecret == b.KubeconfigSecret &&
		a.CredentialsExpireTime.Equal(b.CredentialsExpireTime) && a.CredentialsRefreshTime.Equal(b.CredentialsRefreshTime) &&
		equalConditions(a.Conditions, b.Conditions)
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		y := meta.FindStatusCondition(b, x.Type)
		if y == nil || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

// usable: the provider says the cluster is there and serving (an update keeps it usable).
func usable(c *v1.Cluster) bool {
	return c.Status.Phase == v1.PhaseActive || c.Status.Phase == v1.PhaseUpdating
}

func (ps *pass) join(ctx context.Context) (reconcile.Result, error) {
	c, r := ps.c, ps.r
	r.left.Delete(c.UID) // joining (again)
	if !usable(c) {
		if ps.st().ClusterName == "" {
			ps.set(v1.ConditionJoined, false, v1.ReasonWaitingForCluster, fmt.Sprintf("The cluster joins the fleet once it is active (phase %q).", c.Status.Phase))
		}
		return reconcile.Result{}, nil // a phase change triggers the next pass
	}
	fleet, err := ps.fleetCluster(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if fleet != nil && !ownedBy(fleet, c) {
		ps.set(v1.ConditionJoined, false, v1.ReasonFleetClusterConflict, fmt.Sprintf(
			"A fleet Cluster %s/%s exists that drover did not create for this hosted cluster: delete or rename it (the hosted cluster joins under its own name).", c.Namespace, c.Name))
		return reconcile.Result{}, nil // its deletion triggers the next pass
	}
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		before := c.DeepCopy()
		controllerutil.AddFinalizer(c, Finalizer)
		// Optimistic lock: a merge patch replaces the whole finalizer list.
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				// The cache is behind (often: the finalizer is there already); the update
				// event brings the next pass, this is a safety net.
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, fmt.Errorf("add the join finalizer to %s/%s: %w", c.Namespace, c.Name, err)
		}
		ps.orig.ObjectMeta = *c.ObjectMeta.DeepCopy()
	}

	now := r.Clock.Now()
	st := ps.st()
	wrote, _ := r.written.Load(c.UID)
	if w, ok := wrote.(*writtenCreds); ok && (st.CredentialsRefreshTime == nil || w.refresh.After(st.CredentialsRefreshTime.Time)) {
		// The cached status predates this process's last write: keep what was written.
		st.KubeconfigSecret, st.CredentialsExpireTime, st.CredentialsRefreshTime = w.secret, w.expire.DeepCopy(), w.refresh.DeepCopy()
	}
	secretOK, err := ps.secretPresent(ctx, wrote != nil)
	if err != nil {
		return reconcile.Result{}, err
	}
	if refresh := st.CredentialsRefreshTime; !secretOK || refresh == nil || !now.Before(refresh.Time) {
		res, done, err := ps.writeCredentials(ctx, now)
		if !done {
			return res, err
		}
	}
	if err := ps.applyFleetCluster(ctx, fleet); err != nil {
		return reconcile.Result{}, err
	}
	st.ClusterName = c.Name
	r.warned.Delete(c.UID)
	ps.set(v1.ConditionJoined, true, v1.ReasonJoined, fmt.Sprintf(
		"The cluster is fleet Cluster %s/%s; drover keeps its kubeconfig in Secret %s and replaces the token before it expires.", c.Namespace, c.Name, st.KubeconfigSecret))
	ps.agentReady(fleet)
	return reconcile.Result{RequeueAfter: max(st.CredentialsRefreshTime.Sub(r.Clock.Now()), time.Second)}, nil
}

// agentReady mirrors the fleet Cluster's Ready condition (the agent checked in).
func (ps *pass) agentReady(fleet *fleetv1.Cluster) {
	if fleet != nil && fleet.Status.Agent.LastSeen != nil && meta.IsStatusConditionTrue(fleet.Status.Conditions, fleetv1.ConditionReady) {
		ps.set(v1.ConditionAgentReady, true, v1.ReasonAgentCheckedIn, "The agent checked in; Bundles targeting the fleet Cluster are deployed by it.")
		return
	}
	msg := "Waiting for the agent to register and check in."
	if fleet != nil {
		if imp := meta.FindStatusCondition(fleet.Status.Conditions, fleetv1.ConditionImported); imp != nil && imp.Status != metav1.ConditionTrue {
			msg += fmt.Sprintf(" The agent is not deployed yet: %s (%s).", imp.Reason, imp.Message)
		}
	}
	ps.set(v1.ConditionAgentReady, false, v1.ReasonWaitingForAgent, msg)
}

func ownedBy(o metav1.Object, c *v1.Cluster) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == c.UID {
			return true
		}
	}
	return false
}

func (ps *pass) fleetCluster(ctx context.Context) (*fleetv1.Cluster, error) {
	f := &fleetv1.Cluster{}
	if err := ps.r.Client.Get(ctx, client.ObjectKeyFromObject(ps.c), f); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get fleet Cluster %s/%s: %w", ps.c.Namespace, ps.c.Name, err)
	}
	return f, nil
}

// secretPresent: the kubeconfig Secret exists and is this hosted Cluster's (its metadata, from
// the cache; when the cache does not show it but this process wrote it, from the API server).
func (ps *pass) secretPresent(ctx context.Context, wrote bool) (bool, error) {
	key := client.ObjectKey{Namespace: ps.c.Namespace, Name: SecretName(ps.c.Name)}
	for _, r := range []client.Reader{ps.r.Client, ps.r.APIReader} {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := r.Get(ctx, key, m)
		switch {
		case err == nil:
			return ownedBy(m, ps.c) && m.DeletionTimestamp.IsZero(), nil
		case !apierrors.IsNotFound(err):
			return false, fmt.Errorf("get kubeconfig Secret metadata: %w", err)
		case !wrote:
			return false, nil
		}
	}
	return false, nil
}

// credentials gets fresh credentials for the cluster from its provider.
func (ps *pass) credentials(ctx context.Context) (*access.Credentials, *corev1.Secret, error) {
	c, p := ps.c, ps.p
	acc, ok := p.(Accessor)
	if !ok {
		return nil, nil, fmt.Errorf("provider %s cannot give access to its clusters", p.Name())
	}
	name := p.CredentialSecret(c)
	secret := &corev1.Secret{}
	if err := ps.r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, &hosted.FieldError{Field: p.Name() + "Config.credentialSecret", Reason: v1.ReasonSecretNotFound,
				Message: fmt.Sprintf("Secret %s/%s does not exist: create it", c.Namespace, name)}
		}
		return nil, nil, fmt.Errorf("get credential Secret %s/%s: %w", c.Namespace, name, err)
	}
	actx, cancel := context.WithTimeout(ctx, ps.r.ProviderTimeout)
	defer cancel()
	creds, err := acc.Access(actx, c, secret, ps.r.Limits.Transport(hosted.LimitKey(p, c, secret)))
	if err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return nil, secret, &providerTimeout{limit: ps.r.ProviderTimeout, err: err}
	}
	return creds, secret, err
}

// providerTimeout is a provider call of the join that got no answer within limit.
type providerTimeout struct {
	limit time.Duration
	err   error
}

func (e *providerTimeout) Error() string {
	return fmt.Sprintf("the provider did not answer within %s: %v", e.limit, e.err)
}
func (e *providerTimeout) Unwrap() error { return e.err }

// writeCredentials gets new credentials, checks them on the cluster and writes the kubeconfig
// Secret. done is false when the join cannot go on (the status says why; res says when to
// look again).
func (ps *pass) writeCredentials(ctx context.Context, now time.Time) (res reconcile.Result, done bool, err error) {
	c, r := ps.c, ps.r
	log := ctrl.LoggerFrom(ctx)
	creds, secret, err := ps.credentials(ctx)
	var fe *hosted.FieldError
	switch {
	case err == nil:
	case errors.Is(err, access.ErrEndpointPrivate):
		ps.set(v1.ConditionJoined, false, v1.ReasonEndpointPrivate, privateMessage(ps.p.Name()))
		return reconcile.Result{RequeueAfter: r.PrivateRetryInterval}, false, nil
	case errors.Is(err, access.ErrNotReady):
		ps.set(v1.ConditionJoined, false, v1.ReasonWaitingForCluster, msgNotReady(err))
		return reconcile.Result{RequeueAfter: r.RetryInterval}, false, nil
	case errors.As(err, &fe):
		ps.set(v1.ConditionJoined, false, v1.ReasonCredentialsUnavailable, fmt.Sprintf("%s: %s", fe.Field, fe.Message))
		return reconcile.Result{RequeueAfter: r.RetryInterval}, false, nil
	default:
		if wait := hosted.RetryAfterOf(err); wait >= hosted.BackoffBase {
			// The provider said when to come back: no call before then (an error would have
			// the controller's backoff retry sooner).
			log.Info("The provider is throttling; waiting for its Retry-After", "retryAfter", wait.String(), "error", err.Error())
			ps.set(v1.ConditionJoined, false, v1.ReasonCredentialsUnavailable, fmt.Sprintf(
				"The provider is throttling drover: drover waits for the provider's Retry-After of %s before asking it for credentials for the cluster's API again.",
				wait.Round(time.Second)))
			return reconcile.Result{RequeueAfter: wait}, false, nil
		}
		log.Info("Getting credentials for the cluster's API failed", "error", err)
		msg := msgNoCredentials(err)
		var pt *providerTimeout
		if errors.As(err, &pt) {
			msg = fmt.Sprintf("The provider did not answer within %ds when drover asked it for credentials for the cluster's API; drover tries again with backoff.",
				int((pt.limit+time.Second-1)/time.Second))
		}
		ps.set(v1.ConditionJoined, false, v1.ReasonCredentialsUnavailable, msg)
		return reconcile.Result{}, false, fmt.Errorf("credentials for %s/%s: %w", c.Namespace, c.Name, err)
	}
	if perr := ps.probe(ctx, creds); perr != nil {
		return ps.probeFailed(ctx, secret, perr)
	}
	kubeconfig, err := creds.Kubeconfig(c.Name)
	if err != nil {
		return reconcile.Result{}, false, err
	}
	name := SecretName(c.Name)
	ac := corev1ac.Secret(name, c.Namespace).
		WithLabels(map[string]string{LabelHostedCluster: c.Name, fleetv1.ManagedLabel: "true"}).
		WithAnnotations(map[string]string{AnnotationExpires: creds.Expiry.UTC().Format(time.RFC3339)}).
		WithOwnerReferences(ownerRef(c)).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{fleetv1.KeyKubeconfig: kubeconfig})
	if err := r.Client.Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return reconcile.Result{}, false, fmt.Errorf("write kubeconfig Secret %s/%s: %w", c.Namespace, name, err)
	}
	log.Info("Wrote the kubeconfig Secret", "secret", name, "expires", creds.Expiry.UTC().Format(time.RFC3339))
	st := ps.st()
	st.KubeconfigSecret = name
	st.CredentialsExpireTime = &metav1.Time{Time: creds.Expiry.UTC().Truncate(time.Second)}
	st.CredentialsRefreshTime = &metav1.Time{Time: creds.RefreshAt(now).UTC().Truncate(time.Second)}
	r.written.Store(c.UID, &writtenCreds{secret: name, expire: *st.CredentialsExpireTime, refresh: *st.CredentialsRefreshTime})
	return reconcile.Result{}, true, nil
}

func privateMessage(provider string) string {
	what := map[string]string{
		"eks": "enable the public endpoint (eksConfig.publicAccess: true, with eksConfig.publicAccessSources allowing drover's address)",
		"aks": "the cluster is private (aksConfig.privateCluster: true): use a public cluster",
		"gke": "disable the private-endpoint-only setting of the cluster",
	}[provider]
	return "The cluster's API endpoint is private only, so drover cannot reach it to deploy the agent: " + what +
		", or run drover where it reaches the private endpoint. drover looks again every few minutes and at once when the spec changes."
}

// probe checks the credentials on the cluster: a SelfSubjectReview, which every authenticated
// user may create and no unauthenticated one.
func (ps *pass) probe(ctx context.Context, creds *access.Credentials) error {
	cfg := creds.RESTConfig()
	cfg.Timeout = ps.r.ProbeTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", creds.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ps.r.ProbeTimeout)
	defer cancel()
	_, err = cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	return err
}

func (ps *pass) probeFailed(ctx context.Context, secret *corev1.Secret, perr error) (reconcile.Result, bool, error) {
	c, r, p := ps.c, ps.r, ps.p
	log := ctrl.LoggerFrom(ctx)
	if !apierrors.IsUnauthorized(perr) {
		log.Info("The cluster's API server cannot be reached", "error", perr)
		ps.set(v1.ConditionJoined, false, v1.ReasonUnreachable, msgUnreachable(perr))
		return reconcile.Result{RequeueAfter: r.RetryInterval}, false, nil
	}
	if chk, ok := p.(AccessChecker); ok {
		actx, cancel := context.WithTimeout(ctx, r.ProviderTimeout)
		principal, err := chk.MissingAccess(actx, c, secret, r.Limits.Transport(hosted.LimitKey(p, c, secret)))
		cancel()
		if err != nil {
			log.Info("Checking the cluster's access entries failed", "error", err)
		}
		if principal != "" {
			cluster, region := c.Spec.EKSConfig.DisplayName, c.Spec.EKSConfig.Region
			msg := fmt.Sprintf("EKS cluster %s has no access entry for drover's IAM principal %s, so its API server refuses drover's token. Add one with cluster admin rights, in the console or with: %s. drover joins the cluster on its next try (every minute).",
				cluster, principal, accessEntryHelp(cluster, region, principal))
			if prev, _ := r.warned.Swap(c.UID, v1.ReasonAccessEntryMissing+" "+principal); prev != v1.ReasonAccessEntryMissing+" "+principal {
				ps.event(corev1.EventTypeWarning, v1.ReasonAccessEntryMissing, "Join", "%s", msg)
			}
			ps.set(v1.ConditionJoined, false, v1.ReasonAccessEntryMissing, msg)
			return reconcile.Result{RequeueAfter: r.RetryInterval}, false, nil
		}
	}
	ps.set(v1.ConditionJoined, false, v1.ReasonCredentialsRejected, "The cluster's API server refused drover's token (401 Unauthorized): check that the identity of the credential Secret may use the cluster's Kubernetes API. drover tries again in a minute.")
	return reconcile.Result{RequeueAfter: r.RetryInterval}, false, nil
}

func accessEntryHelp(cluster, region, principal string) string {
	return fmt.Sprintf("aws eks create-access-entry --region %s --cluster-name %s --principal-arn %s && "+
		"aws eks associate-access-policy --region %s --cluster-name %s --principal-arn %s --policy-arn arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy --access-scope type=cluster",
		region, cluster, principal, region, cluster, principal)
}

func ownerRef(c *v1.Cluster) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().WithAPIVersion(v1.GroupVersion.String()).WithKind("Cluster").
		WithName(c.Name).WithUID(c.UID).WithController(true).WithBlockOwnerDeletion(true)
}

// Labels are the labels of the hosted Cluster c's fleet Cluster.
func Labels(p hosted.Provider, c *v1.Cluster) map[string]string {
	out := map[string]string{}
	for k, v := range c.Labels {
		if !strings.HasPrefix(k, "management.drover.io/") && !strings.HasPrefix(k, fleetv1.LabelPrefix) {
			out[k] = v
		}
	}
	out[LabelProvider] = p.Name()
	out[LabelHostedCluster] = c.Name
	switch {
	case c.Spec.EKSConfig != nil:
		out[LabelRegion] = c.Spec.EKSConfig.Region
	case c.Spec.AKSConfig != nil:
		out[LabelRegion] = c.Spec.AKSConfig.ResourceLocation
	case c.Spec.GKEConfig != nil:
		if g := c.Spec.GKEConfig; g.Zone != "" {
			out[LabelZone] = g.Zone
			if i := strings.LastIndex(g.Zone, "-"); i > 0 {
				out[LabelRegion] = g.Zone[:i]
			}
		} else {
			out[LabelRegion] = g.Region
		}
	}
	if v := kubernetesVersion(p, c); v != "" {
		out[LabelKubernetesVersion] = v
	}
	for k, v := range out {
		if len(validation.IsValidLabelValue(v)) > 0 {
			delete(out, k)
		}
	}
	return out
}

// kubernetesVersion is the version the provider reports, else the configured one.
func kubernetesVersion(p hosted.Provider, c *v1.Cluster) string {
	for _, tree := range []func(*v1.Cluster) (map[string]any, error){p.Upstream, p.Config} {
		if t, err := tree(c); err == nil && t != nil {
			if v, ok := t["kubernetesVersion"].(string); ok && v != "" {
				return v
			}
		}
	}
	return ""
}

// applyFleetCluster creates or updates the fleet Cluster (server-side apply of the fields the
// join owns: labels, owner, spec.kubeConfigSecret, spec.agentNamespace), only when they differ.
func (ps *pass) applyFleetCluster(ctx context.Context, fleet *fleetv1.Cluster) error {
	c := ps.c
	labels := Labels(ps.p, c)
	agentNS := ""
	if c.Spec.Fleet != nil {
		agentNS = c.Spec.Fleet.AgentNamespace
	}
	if fleet != nil && maps.Equal(labelsOwned(fleet, labels), labels) && fleet.Spec.KubeConfigSecret == SecretName(c.Name) &&
		(agentNS == "" || fleet.Spec.AgentNamespace == agentNS) {
		return nil
	}
	spec := map[string]any{"kubeConfigSecret": SecretName(c.Name)}
	if agentNS != "" {
		spec["agentNamespace"] = agentNS
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": fleetv1.GroupVersion.String(), "kind": "Cluster",
		"metadata": map[string]any{
			"name": c.Name, "namespace": c.Namespace, "labels": toAny(labels),
			"ownerReferences": []any{map[string]any{
				"apiVersion": v1.GroupVersion.String(), "kind": "Cluster", "name": c.Name, "uid": string(c.UID),
				"controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": spec,
	}}
	if err := ps.r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply fleet Cluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	if fleet == nil {
		ps.event(corev1.EventTypeNormal, "Joining", "Join", "Created fleet Cluster %s/%s with kubeconfig Secret %s: the agent is deployed next", c.Namespace, c.Name, SecretName(c.Name))
	}
	return nil
}

// labelsOwned is fleet's labels restricted to the keys the join sets now or set before (its
// managed fields), so a label the hosted Cluster lost is seen to go.
func labelsOwned(fleet *fleetv1.Cluster, want map[string]string) map[string]string {
	owned := map[string]bool{}
	for _, mf := range fleet.ManagedFields {
		if mf.Manager != FieldOwner || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Labels map[string]any `json:"f:labels"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields) == nil {
			for k := range fields.Metadata.Labels {
				owned[strings.TrimPrefix(k, "f:")] = true
			}
		}
	}
	out := map[string]string{}
	for k, v := range fleet.Labels {
		if _, ok := want[k]; ok || owned[k] {
			out[k] = v
		}
	}
	return out
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// leave removes the cluster from the fleet: the agent first (while it runs it would delete the
// workloads of the BundleDeployments the fleet Cluster's deletion removes), then the fleet
// Cluster (its own finalizer revokes the agent's identity), the agent once more (a deployment
// that raced the first removal), the kubeconfig Secret, and the join's finalizer — so the
// hosted reconciler deletes the cloud cluster only after all that.
func (ps *pass) leave(ctx context.Context, why string) (reconcile.Result, error) {
	c, r := ps.c, ps.r
	if _, done := r.left.Load(c.UID); done || !controllerutil.ContainsFinalizer(c, Finalizer) {
		return reconcile.Result{}, nil
	}
	fleet, err := ps.fleetCluster(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if fleet != nil && ownedBy(fleet, c) {
		if fleet.DeletionTimestamp.IsZero() {
			// The agent goes first: while it runs, it would delete the workloads of the
			// BundleDeployments that the fleet Cluster's deletion removes — and an imported
			// cluster drover forgets keeps its workloads.
			if !ps.agentRemoved(ctx, why) {
				return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
			}
			if err := r.Client.Delete(ctx, fleet); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("delete fleet Cluster %s/%s: %w", c.Namespace, c.Name, err)
			}
			ps.event(corev1.EventTypeNormal, "Leaving", "Leave", "%s: removed the agent and deleted fleet Cluster %s/%s", why, c.Namespace, c.Name)
		}
		ps.set(v1.ConditionJoined, false, v1.ReasonLeaving, why+": the agent is removed; waiting for fleet Cluster "+c.Name+" to be deleted.")
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil // its deletion triggers the next pass
	}
	// Once more now that the fleet Cluster is gone: an agent deployment that raced the first
	// removal (the importer was busy with it) is removed too; nothing redeploys it any more.
	if ps.st().ClusterName != "" && !ps.agentRemoved(ctx, why) {
		return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: SecretName(c.Name)}}
	if ok, err := ps.secretPresent(ctx, false); err != nil {
		return reconcile.Result{}, err
	} else if ok {
		if err := r.Client.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("delete kubeconfig Secret %s/%s: %w", c.Namespace, sec.Name, err)
		}
	}
	ps.fleet = &v1.FleetStatus{}
	if c.DeletionTimestamp.IsZero() {
		ps.set(v1.ConditionJoined, false, v1.ReasonJoinDisabled, "The cluster left the fleet: spec.fleet.join is false (or unset while drover server runs with --hosted-join=false).")
	}
	before := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, Finalizer)
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			ps.gone = true
			return reconcile.Result{}, nil
		}
		if apierrors.IsConflict(err) {
			// Another writer (the hosted controller's own finalizer, a status) came first: read
			// the Cluster again and retry, which is expected during a delete, not an error.
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, fmt.Errorf("remove the join finalizer from %s/%s: %w", c.Namespace, c.Name, err)
	}
	r.left.Store(c.UID, true)
	r.written.Delete(c.UID)
	ps.event(corev1.EventTypeNormal, "Left", "Leave", "%s: the cluster left the fleet (fleet Cluster and agent removed)", why)
	if !c.DeletionTimestamp.IsZero() {
		ps.gone = true // the hosted reconciler takes it from here; the object may be gone
	}
	ps.orig.ObjectMeta = *c.ObjectMeta.DeepCopy()
	return reconcile.Result{}, nil
}

// agentRemoved removes the agent from the cluster and reports whether the leave may go on: it
// is removed, or could not be for AgentRemovalTimeout (counted from the deletion, or from the
// start of an opt-out), which a Warning event reports.
func (ps *pass) agentRemoved(ctx context.Context, why string) bool {
	c, r := ps.c, ps.r
	err := ps.removeAgent(ctx)
	if err == nil {
		return true
	}
	since := c.DeletionTimestamp
	if since == nil {
		if j := meta.FindStatusCondition(ps.st().Conditions, v1.ConditionJoined); j != nil && j.Reason == v1.ReasonLeaving {
			since = &j.LastTransitionTime
		}
	}
	if since == nil || r.Clock.Since(since.Time) < r.AgentRemovalTimeout {
		ctrl.LoggerFrom(ctx).Info("Removing the agent from the cluster is not done; retrying", "error", err)
		ps.set(v1.ConditionJoined, false, v1.ReasonLeaving, why+": removing the agent from the cluster: "+hosted.StableMessage(err)+"; retrying.")
		return false
	}
	if prev, _ := r.warned.Swap(c.UID, "AgentNotRemoved"); prev != "AgentNotRemoved" {
		ps.event(corev1.EventTypeWarning, "AgentNotRemoved", "Leave", "%s: the agent could not be removed from the cluster within %s (%s); it stays there, unable to reach drover", why, r.AgentRemovalTimeout, hosted.StableMessage(err))
	}
	return true
}

// removeAgent deletes the agent's objects from the cluster with fresh credentials (the stored
// token may have expired). A cluster that is gone or cannot be reached any more has no agent
// to remove.
func (ps *pass) removeAgent(ctx context.Context) error {
	creds, _, err := ps.credentials(ctx)
	if errors.Is(err, access.ErrNotReady) || errors.Is(err, access.ErrEndpointPrivate) {
		return nil
	}
	if err != nil {
		return err
	}
	agentNS := manifests.DefaultNamespace
	if f := ps.c.Spec.Fleet; f != nil && f.AgentNamespace != "" {
		agentNS = f.AgentNamespace
	}
	objs, err := manifests.Objects(manifests.Options{Namespace: agentNS, Bootstrap: map[string][]byte{}})
	if err != nil {
		return err
	}
	// The Secrets holding the agent's credentials for the management cluster go first.
	cred := &unstructured.Unstructured{}
	cred.SetAPIVersion("v1")
	cred.SetKind("Secret")
	cred.SetNamespace(agentNS)
	cred.SetName(manifests.CredentialSecret)
	objs = append(objs, cred)
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	dc, err := client.New(creds.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client for %s: %w", creds.Host, err)
	}
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		if err := dc.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s downstream: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	// Done when no agent pod runs any more (it may still act until it stops).
	var pods corev1.PodList
	if err := dc.List(ctx, &pods, client.InNamespace(agentNS), client.MatchingLabels{"app.kubernetes.io/name": manifests.Name}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("list agent pods downstream: %w", err)
	}
	if n := len(pods.Items); n > 0 {
		return fmt.Errorf("%d agent pod(s) still stopping in namespace %s", n, agentNS)
	}
	ctrl.LoggerFrom(ctx).Info("Removed the agent from the cluster", "agentNamespace", agentNS)
	return nil
}

// The Joined messages that quote a provider's or API server's error go on after it: the error
// ends in exactly one period whether or not its text had one (no "for details.. drover tries").

func msgNotReady(err error) string {
	return "The provider reports no API endpoint for the cluster yet: " + hosted.Sentence(hosted.StableMessage(err))
}

func msgNoCredentials(err error) string {
	return "The provider gave drover no credentials for the cluster's API: " + hosted.Sentence(hosted.StableMessage(err)) + " drover tries again with backoff."
}

func msgUnreachable(err error) string {
	return "drover cannot reach the cluster's API server: " + hosted.Sentence(hosted.StableMessage(err)) + " drover tries again in a minute."
}
