// Package clusterregistration grants ClusterRegistrations: it finds or creates the Cluster for
// the clientID, gives the agent a request identity scoped to its own cluster namespace and
// Cluster status, answers with a registration secret readable only by the registering import
// identity, and deletes superseded registrations of the same clientID, so each cluster keeps
// exactly one registration object set however often it re-registers.
package clusterregistration

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/metrics"
	clusterctrl "github.com/droverhq/drover/internal/registration/cluster"
	"github.com/droverhq/drover/internal/registration/internal/kube"
	"github.com/droverhq/drover/internal/registration/names"
)

// DefaultRenewalTokenTTL is the default lifetime of a renewal identity's token.
const DefaultRenewalTokenTTL = 30 * 24 * time.Hour

const (
	finalizer = "fleet.drover.io/registration-cleanup"
	// ClientIDIndex indexes Clusters and ClusterRegistrations by spec.clientID.
	ClientIDIndex = "spec.clientID"
)

// Reconciler grants ClusterRegistrations.
type Reconciler struct {
	Client client.Client
	// APIReader reads the registration secret uncached (the manager caches no Secrets there).
	APIReader client.Reader
	// RequestTokenTTL is the lifetime of a request token (default 24h). The agent renews it
	// itself with a TokenRequest on its own ServiceAccount, so an agent offline for longer than
	// this has to be registered again.
	RequestTokenTTL time.Duration
	// AnswerTTL is how long the registration secret (and the import identity's right to read
	// it) outlives the grant (default 30m): the agent reads it once, right away.
	AnswerTTL time.Duration
	// ReaderWindow is the time window of the Roles that let import identities read their
	// answers (default 10m): a window's Roles are deleted AnswerTTL after it ends.
	ReaderWindow time.Duration
	// RefusedTTL is how long a refused registration is kept (default 1h, twice an agent's wait
	// for its answer, after which the agent registers anew): deleting it removes its answer
	// Secret, so registrations refused by the thousand do not pile up.
	RefusedTTL time.Duration
	// RenewalTokenTTL is the lifetime of the renewal identity's token issued with every grant
	// (default 30 days; the agent renews it while it is online). An agent offline for longer
	// needs a new bootstrap.
	RenewalTokenTTL time.Duration
	// Recorder, when set, records Events: a registration granted (on it and its Cluster),
	// denied, or superseded by a newer one, an old request identity revoked (on the Cluster),
	// an agent re-registered. Never a token.
	Recorder events.EventRecorder
	// MaxConcurrentReconciles defaults to 128: a grant is a few dependent requests, mostly
	// waiting (64 left the 1,000-agent benchmark worker-bound, 256 gained nothing more).
	MaxConcurrentReconciles int

	// answered maps registrations whose secret this process wrote, and whose grant is not
	// finished yet, to the UID of their Cluster (finishGrant re-reads both before relying on it).
	answered sync.Map
}

// SetupWithManager registers the controller and the clientID indexes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Client == nil || r.APIReader == nil {
		return errors.New("clusterregistration reconciler: Client and APIReader are required")
	}
	if r.RequestTokenTTL == 0 {
		r.RequestTokenTTL = 24 * time.Hour
	}
	if r.AnswerTTL == 0 {
		r.AnswerTTL = 30 * time.Minute
	}
	if r.RenewalTokenTTL == 0 {
		r.RenewalTokenTTL = DefaultRenewalTokenTTL
	}
	if r.ReaderWindow == 0 {
		r.ReaderWindow = 10 * time.Minute
	}
	if r.RefusedTTL == 0 {
		r.RefusedTTL = time.Hour
	}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &fleetv1alpha1.Cluster{}, ClientIDIndex, func(o client.Object) []string {
		return []string{o.(*fleetv1alpha1.Cluster).Spec.ClientID}
	}); err != nil {
		return fmt.Errorf("index Clusters by clientID: %w", err)
	}
	if err := idx.IndexField(ctx, &fleetv1alpha1.ClusterRegistration{}, ClientIDIndex, func(o client.Object) []string {
		return []string{o.(*fleetv1alpha1.ClusterRegistration).Spec.ClientID}
	}); err != nil {
		return fmt.Errorf("index ClusterRegistrations by clientID: %w", err)
	}
	workers := r.MaxConcurrentReconciles
	if workers <= 0 {
		workers = 128
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusterregistration").
		// Clusters only when an admin allows a token on one: a grant never waits for the cluster
		// controller (it creates the cluster namespace itself), and re-queueing registrations on
		// every Cluster status change re-granted those whose grant the cache had not seen yet.
		For(&fleetv1alpha1.ClusterRegistration{}).
		Watches(&fleetv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.refusedRegistrations),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				DeleteFunc:  func(event.DeleteEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
				UpdateFunc: func(e event.UpdateEvent) bool {
					allow := e.ObjectNew.GetAnnotations()[fleetv1alpha1.AllowRegistrationTokenAnnotation]
					return allow != "" && allow != e.ObjectOld.GetAnnotations()[fleetv1alpha1.AllowRegistrationTokenAnnotation]
				},
			})).
		// A token's spec.maxClusters raised (or removed): the registrations it refused for want
		// of a place are granted now, not when their agents next retry.
		Watches(&fleetv1alpha1.ClusterRegistrationToken{}, handler.EnqueueRequestsFromMapFunc(r.registrationsOfToken),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				DeleteFunc:  func(event.DeleteEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
				UpdateFunc: func(e event.UpdateEvent) bool {
					o, n := e.ObjectOld.(*fleetv1alpha1.ClusterRegistrationToken), e.ObjectNew.(*fleetv1alpha1.ClusterRegistrationToken)
					return o.Spec.MaxClusters != nil && (n.Spec.MaxClusters == nil || *n.Spec.MaxClusters > *o.Spec.MaxClusters)
				},
			})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// registrationsOfToken are the registrations a token has not granted (yet).
func (r *Reconciler) registrationsOfToken(ctx context.Context, o client.Object) []reconcile.Request {
	return r.ungranted(ctx, "token "+o.GetName(), client.InNamespace(o.GetNamespace()), client.MatchingLabels{fleetv1alpha1.TokenLabel: o.GetName()})
}

// refusedRegistrations are the registrations of a Cluster's clientID not granted yet: when an
// admin allows a token on the Cluster, the one refused with it is granted while its agent still
// waits for the answer, not at the agent's next attempt.
func (r *Reconciler) refusedRegistrations(ctx context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*fleetv1alpha1.Cluster)
	if !ok || c.Spec.ClientID == "" {
		return nil
	}
	return r.ungranted(ctx, "Cluster "+c.Name, client.InNamespace(c.Namespace), client.MatchingFields{ClientIDIndex: c.Spec.ClientID})
}

// ungranted are the registrations the options select that are not granted (yet); what names
// them in the log.
func (r *Reconciler) ungranted(ctx context.Context, what string, opts ...client.ListOption) []reconcile.Request {
	var list fleetv1alpha1.ClusterRegistrationList
	if err := r.Client.List(ctx, &list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing registrations", "of", what)
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if !list.Items[i].Status.Granted {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// Registrations, the request identity (ServiceAccount, token, Role, RoleBinding) and its
// answer Secret. The request identity's Role grants bundledeployments get/list/watch,
// bundledeployments/status update/patch and serviceaccounts/token create, which the server
// holds itself.
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusterregistrations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusterregistrations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusterregistrations/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundledeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundledeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile grants one registration.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cr := &fleetv1alpha1.ClusterRegistration{}
	if err := r.Client.Get(ctx, req.NamespacedName, cr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cr.DeletionTimestamp.IsZero() {
		r.answered.Delete(cr.UID)
		return ctrl.Result{}, r.delete(ctx, cr)
	}
	if cr.Status.Granted {
		return r.expireAnswer(ctx, cr)
	}
	before := cr.DeepCopy()
	// importSA is the identity the registration was made with, once known: a refusal is
	// answered to it.
	var importSA string
	deny := func(reason, msg string) (ctrl.Result, error) {
		old := meta.FindStatusCondition(before.Status.Conditions, fleetv1alpha1.ConditionGranted)
		if old == nil || old.Status != metav1.ConditionFalse || old.Reason != reason || old.Message != msg {
			// Before the status: a failed answer is retried on the next pass.
			if err := r.answerRefusal(ctx, cr, importSA, reason, msg); err != nil {
				return ctrl.Result{}, err
			}
			before.Finalizers = cr.Finalizers
			before.ResourceVersion = cr.ResourceVersion
		}
		kube.SetCondition(&cr.Status.Conditions, cr.Generation, fleetv1alpha1.ConditionGranted, false, reason, msg)
		if err := kube.PatchStatus(ctx, r.Client, cr, before); err != nil {
			return ctrl.Result{}, err
		}
		if old == nil || old.Reason != reason {
			// Once per finding, not once per pass.
			metrics.Registrations.WithLabelValues("denied", reason).Inc()
			r.event(cr, nil, corev1.EventTypeWarning, fleetv1alpha1.EventRegistrationDenied, "Register", "%s: %s", reason, msg)
			ctrl.LoggerFrom(ctx).Info("Registration refused", "reason", reason, "message", msg)
		}
		// Kept for RefusedTTL (a token's raised limit, say, grants it meanwhile), then deleted.
		since := meta.FindStatusCondition(cr.Status.Conditions, fleetv1alpha1.ConditionGranted).LastTransitionTime.Time
		if left := time.Until(since.Add(r.RefusedTTL)); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		ctrl.LoggerFrom(ctx).Info("Deleting a registration refused for longer than its TTL", "refusedTTL", r.RefusedTTL.String())
		return ctrl.Result{}, kube.Delete(ctx, r.Client, cr)
	}
	if msg := validateLabels(cr.Spec.ClusterLabels); msg != "" {
		return deny(fleetv1alpha1.ReasonReservedLabel, msg)
	}

	renewal, err := r.renewalCluster(ctx, cr)
	if err != nil {
		var denied deniedError
		if errors.As(err, &denied) {
			return deny(denied.reason, denied.msg)
		}
		return ctrl.Result{}, err
	}

	// A newer registration of the same clientID supersedes this one: never grant it.
	siblings, err := r.registrationsOf(ctx, cr, renewal)
	if err != nil {
		return ctrl.Result{}, err
	}
	for i := range siblings {
		if newer(&siblings[i], cr) {
			ctrl.LoggerFrom(ctx).Info("Deleting superseded ClusterRegistration", "newer", siblings[i].Name)
			r.event(cr, nil, corev1.EventTypeNormal, fleetv1alpha1.EventRegistrationSuperseded, "Register",
				"Superseded by the newer registration %s of the same clientID: deleted", siblings[i].Name)
			return ctrl.Result{}, kube.Delete(ctx, r.Client, cr)
		}
	}

	if clusterUID, ok := r.answered.Load(cr.UID); ok {
		return r.finishGrant(ctx, cr, before, siblings, clusterUID.(types.UID), renewal != nil)
	}

	// Every check that can refuse the registration runs before its token place is taken, so
	// a refused registration does not use one up.
	sa, tok, err := r.importIdentity(ctx, cr, renewal != nil)
	importSA = sa
	if err == nil && tok != nil {
		if _, uid, isBound := tok.BoundCluster(); isBound {
			err = r.checkBoundCluster(ctx, cr, string(uid))
		}
	}
	if err == nil {
		err = r.checkLegacyName(ctx, cr)
	}
	var existing *fleetv1alpha1.Cluster
	if err == nil && renewal == nil {
		existing, err = r.clusterFor(ctx, cr)
	}
	if err == nil && existing != nil && tok != nil && !bound(tok) {
		err = checkTakeover(existing, tok, siblings)
	}
	if err == nil && tok != nil {
		err = r.takeSlot(ctx, cr, tok)
	}
	if err != nil {
		var denied deniedError
		if errors.As(err, &denied) {
			return deny(denied.reason, denied.msg)
		}
		return ctrl.Result{}, err
	}
	if controllerutil.AddFinalizer(cr, finalizer) {
		if err := r.Client.Patch(ctx, cr, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		before = cr.DeepCopy()
	}
	cluster := renewal
	if cluster == nil {
		if cluster, err = r.findOrCreateCluster(ctx, cr, existing, tok); err != nil {
			var denied deniedError
			if errors.As(err, &denied) {
				return deny(denied.reason, denied.msg)
			}
			return ctrl.Result{}, err
		}
		if err := r.recordToken(ctx, cluster, tok); err != nil {
			return ctrl.Result{}, err
		}
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil // register with its successor
	}
	if cluster.Status.Namespace == "" {
		// The name is deterministic: create it here rather than wait a round trip for the
		// cluster controller (which leaves Clusters made by a registration to it); the
		// Cluster's first status is written when the grant is finished.
		clusterctrl.SetStatus(cluster)
		if err := kube.Create(ctx, r.Client, corev1ac.Namespace(cluster.Status.Namespace).WithLabels(kube.ManagedLabels(clusterctrl.Labels(cluster)))); err != nil {
			return ctrl.Result{}, fmt.Errorf("create cluster namespace: %w", err)
		}
	}
	if err := r.grant(ctx, cr, cluster, importSA, renewal != nil); err != nil {
		var denied deniedError
		if errors.As(err, &denied) {
			return deny(denied.reason, denied.msg)
		}
		return ctrl.Result{}, err
	}
	// The agent has its answer and can list its BundleDeployments. The rest (its right to
	// patch its Cluster's status, which the agent retries for heartbeat.RightsGrace; the
	// statuses; superseded registrations) waits behind other registrations' grants: in a
	// registration storm every agent gets its credential first.
	r.answered.Store(cr.UID, cluster.UID)
	return ctrl.Result{RequeueAfter: time.Millisecond, Priority: ptr.To(bookkeepingPriority)}, nil
}

// event records an Event when r has a Recorder.
func (r *Reconciler) event(regarding, related runtime.Object, typ, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(regarding, related, typ, reason, action, note, args...)
	}
}

// bookkeepingPriority queues the second half of a grant behind new registrations (the
// priority of items from the initial list, handler.LowPriority).
const bookkeepingPriority = -100

// finishGrant runs after the registration secret was written (in this process: r.answered):
// the access Role and RoleBinding in the workspace, the Cluster's first status, superseded
// registrations, and the registration's status. It re-reads the secret first: only an answer
// that exists marks the registration granted.
func (r *Reconciler) finishGrant(ctx context.Context, cr, before *fleetv1alpha1.ClusterRegistration, siblings []fleetv1alpha1.ClusterRegistration, clusterUID types.UID, renewal bool) (ctrl.Result, error) {
	secretName := answerName(cr)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace, Name: secretName}, &corev1.Secret{})
	if apierrors.IsNotFound(err) {
		r.answered.Delete(cr.UID)
		return ctrl.Result{RequeueAfter: time.Millisecond}, nil // grant again
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get registration secret %s: %w", secretName, err)
	}
	var cluster *fleetv1alpha1.Cluster
	if renewal {
		cluster, err = r.renewalCluster(ctx, cr)
	} else {
		cluster, err = r.clusterFor(ctx, cr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if cluster == nil || cluster.UID != clusterUID || !cluster.DeletionTimestamp.IsZero() {
		// The Cluster the answer was for is gone (or going): grant again, to its successor.
		r.answered.Delete(cr.UID)
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	g, gctx := errgroup.WithContext(ctx)
	if cluster.Status.Namespace == "" || renewal {
		clusterBefore := cluster.DeepCopy()
		if cluster.Status.Namespace == "" {
			clusterctrl.SetStatus(cluster)
		}
		if renewal {
			// The admin sees that (and when) the agent came back on its own.
			kube.SetCondition(&cluster.Status.Conditions, cluster.Generation, fleetv1alpha1.ConditionAgentCredential, true, fleetv1alpha1.ReasonReregistered,
				"The agent re-registered with its renewal identity ("+cr.Name+") and has a new request credential")
			if r.Recorder != nil {
				r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, fleetv1alpha1.ReasonReregistered, "Register",
					"Agent re-registered with its renewal identity (registration %s)", cr.Name)
			}
		}
		patched := cluster.DeepCopy() // the patch writes its response back
		g.Go(func() error { return kube.PatchStatus(gctx, r.Client, patched, clusterBefore) })
	}
	// The agent's right to patch its Cluster's status (and, filled in by the access controller,
	// internal/registration/access, to read its BundleContents). The Role is created when
	// missing, never overwritten: the access controller keeps its rules from then on.
	labels, accessRole := clusterctrl.Labels(cluster), names.ClusterAccessRole(cluster.Name)
	sa := cr.Name
	// The Role before its binding: without the bind right the API server refuses a binding to a
	// Role that does not exist yet.
	g.Go(func() error {
		if err := kube.CreateIfAbsent(gctx, r.Client, kube.Role(cluster.Namespace, accessRole, labels, clusterctrl.AccessRules(cluster)...)); err != nil {
			return fmt.Errorf("create cluster access role: %w", err)
		}
		return applyAll(gctx, r.Client, "rights of request identity "+sa+" in "+cluster.Namespace,
			kube.RoleBinding(cluster.Namespace, accessRole, labels, accessRole, cluster.Status.Namespace, sa))
	})
	if err := g.Wait(); err != nil {
		return ctrl.Result{}, err
	}
	for i := range siblings {
		if s := &siblings[i]; s.Name != cr.Name {
			if s.DeletionTimestamp.IsZero() {
				r.event(s, nil, corev1.EventTypeNormal, fleetv1alpha1.EventRegistrationSuperseded, "Register",
					"Superseded by registration %s of the same clientID: deleted", cr.Name)
				if s.Status.Granted {
					r.event(cluster, s, corev1.EventTypeNormal, fleetv1alpha1.EventCredentialRevoked, "Revoke",
						"The request identity of registration %s was revoked: registration %s replaced it", s.Name, cr.Name)
				}
			}
			if err := kube.Delete(ctx, r.Client, s); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	cr.Status.ClusterName = cluster.Name
	cr.Status.Granted = true
	kube.SetCondition(&cr.Status.Conditions, cr.Generation, fleetv1alpha1.ConditionGranted, true, fleetv1alpha1.ReasonSucceeded, "Registration secret written")
	if err := kube.PatchStatus(ctx, r.Client, cr, before); err != nil {
		return ctrl.Result{}, err
	}
	r.answered.Delete(cr.UID)
	metrics.Registrations.WithLabelValues("granted", fleetv1alpha1.ReasonSucceeded).Inc()
	metrics.GrantDuration.Observe(time.Since(cr.CreationTimestamp.Time).Seconds())
	r.event(cr, cluster, corev1.EventTypeNormal, fleetv1alpha1.EventRegistrationGranted, "Register", "Granted: the agent is Cluster %s/%s", cluster.Namespace, cluster.Name)
	r.event(cluster, cr, corev1.EventTypeNormal, fleetv1alpha1.EventRegistrationGranted, "Register", "The agent registered (registration %s)", cr.Name)
	return ctrl.Result{}, nil
}

// reasonAnswerExpired marks a granted registration whose secret was deleted.
const reasonAnswerExpired = "SecretExpired"

// expireAnswer deletes the registration secret AnswerTTL after the grant, and the reader Roles
// of the grant's window AnswerTTL after that window ended (when every answer they name has
// expired).
func (r *Reconciler) expireAnswer(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration) (ctrl.Result, error) {
	cond := meta.FindStatusCondition(cr.Status.Conditions, fleetv1alpha1.ConditionGranted)
	if cond == nil {
		return ctrl.Result{}, nil
	}
	granted := cond.LastTransitionTime.Time // at or after the reader was written
	if cond.Reason == reasonAnswerExpired {
		sweepAt := r.windowEnd(granted).Add(r.AnswerTTL)
		switch now := time.Now(); {
		case now.Before(sweepAt):
			return ctrl.Result{RequeueAfter: sweepAt.Sub(now)}, nil
		case now.Before(sweepAt.Add(r.ReaderWindow)): // once, not on every later resync
			return ctrl.Result{}, r.sweepReaders(ctx, cr)
		}
		return ctrl.Result{}, nil
	}
	if left := r.AnswerTTL - time.Since(granted); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	if err := r.deleteAnswer(ctx, cr); err != nil {
		return ctrl.Result{}, err
	}
	before := cr.DeepCopy()
	cond.Reason, cond.Message = reasonAnswerExpired, "Registration secret delivered and deleted"
	if err := kube.PatchStatus(ctx, r.Client, cr, before); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: time.Until(r.windowEnd(granted).Add(r.AnswerTTL))}, nil
}

func (r *Reconciler) deleteAnswer(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration) error {
	byReg := client.MatchingLabels{fleetv1alpha1.RegistrationLabel: cr.Name, fleetv1alpha1.ClusterNamespaceLabel: cr.Namespace}
	if err := r.Client.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(fleetv1alpha1.SystemRegistrationNamespace), byReg); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete registration secret of %s: %w", cr.Name, err)
	}
	// By name too (a renewal's answer is labelled with its Cluster's workspace), if it is cr's.
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace, Name: answerName(cr)}, s)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("get registration secret of %s: %w", cr.Name, err)
	}
	if err == nil && s.Annotations[answerOwnerAnnotation] == string(cr.UID) {
		if err := r.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete registration secret of %s: %w", cr.Name, err)
		}
	}
	return r.sweepReaders(ctx, cr)
}

// newer reports whether a was created strictly after b. Creation times have one-second
// resolution: on a tie the registration being granted wins (one agent registers at a time, the
// leader, so the one it waits for is the one it made last).
func newer(a, b *fleetv1alpha1.ClusterRegistration) bool {
	return a.Name != b.Name && a.DeletionTimestamp.IsZero() && b.CreationTimestamp.Before(&a.CreationTimestamp)
}

type deniedError struct{ reason, msg string }

func (e deniedError) Error() string { return e.msg }

// validateLabels rejects labels that are invalid or under drover's reserved prefix.
func validateLabels(labels map[string]string) string {
	var bad []string
	for k, v := range labels {
		if strings.HasPrefix(k, fleetv1alpha1.LabelPrefix) || strings.Contains(k, "drover.io/") {
			bad = append(bad, k)
			continue
		}
		if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	slices.Sort(bad)
	return fmt.Sprintf("Cluster labels %s are reserved for drover or invalid", strings.Join(bad, ", "))
}

// clusterFor returns the Cluster of cr's clientID (nil if there is none yet), or refuses the
// registration when the name its Cluster would get is held by a Cluster of another clientID.
func (r *Reconciler) clusterFor(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration) (*fleetv1alpha1.Cluster, error) {
	var list fleetv1alpha1.ClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(cr.Namespace), client.MatchingFields{ClientIDIndex: cr.Spec.ClientID}); err != nil {
		return nil, fmt.Errorf("list clusters by clientID: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			return &list.Items[i], nil
		}
	}
	name := names.ClusterNameForClientID(cr.Spec.ClientID)
	c := &fleetv1alpha1.Cluster{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: cr.Namespace, Name: name}, c); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get cluster %s: %w", name, err)
	case c.Spec.ClientID != cr.Spec.ClientID:
		return nil, deniedError{fleetv1alpha1.ReasonClusterConflict, fmt.Sprintf("Cluster %s exists with another clientID", c.Name)}
	}
	return c, nil // being deleted: the caller waits for its successor
}

// checkTakeover refuses a registration of an already registered Cluster with a token other
// than the one that registered it, unless an admin allowed that token on the Cluster. A Cluster
// no agent has checked in to yet (created by an admin for its clientID, or by a registration
// that never finished) may be registered with any token of the workspace. Clusters registered
// before drover recorded the token count as registered with the token of their granted
// registration, if it is still there.
func checkTakeover(c *fleetv1alpha1.Cluster, tok *fleetv1alpha1.ClusterRegistrationToken, siblings []fleetv1alpha1.ClusterRegistration) error {
	rec := c.Annotations[fleetv1alpha1.RegistrationTokenAnnotation]
	switch {
	case rec == string(tok.UID), c.Annotations[fleetv1alpha1.AllowRegistrationTokenAnnotation] == tok.Name:
		return nil
	case rec == "":
		if c.Status.Agent.LastSeen == nil {
			return nil
		}
		for i := range siblings {
			if siblings[i].Status.Granted && siblings[i].Labels[fleetv1alpha1.TokenLabel] == tok.Name {
				return nil
			}
		}
	}
	return deniedError{fleetv1alpha1.ReasonClusterRegistered, fmt.Sprintf(
		"Cluster %s (clientID %q) is registered with another token, and a registration with token %s may not take it over. "+
			"If this is the same cluster with its agent re-installed, allow the token: kubectl annotate clusters.fleet.drover.io %s -n %s %s=%s (or delete the Cluster to register it anew)",
		c.Name, c.Spec.ClientID, tok.Name, c.Name, c.Namespace, fleetv1alpha1.AllowRegistrationTokenAnnotation, tok.Name)}
}

// recordToken records on c the token it is being registered with (RegistrationTokenAnnotation)
// and removes an admin's allowance once used. Tokens drover makes for one Cluster (bound to
// it) are not recorded: they register nothing else, and a record would cost every imported
// cluster a write.
func (r *Reconciler) recordToken(ctx context.Context, c *fleetv1alpha1.Cluster, tok *fleetv1alpha1.ClusterRegistrationToken) error {
	if tok == nil || bound(tok) {
		return nil
	}
	_, allowed := c.Annotations[fleetv1alpha1.AllowRegistrationTokenAnnotation]
	if c.Annotations[fleetv1alpha1.RegistrationTokenAnnotation] == string(tok.UID) && !allowed {
		return nil
	}
	before := c.DeepCopy()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[fleetv1alpha1.RegistrationTokenAnnotation] = string(tok.UID)
	delete(c.Annotations, fleetv1alpha1.AllowRegistrationTokenAnnotation)
	// Optimistic: an admin's concurrent change of the allowance is not overwritten.
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record registration token on Cluster %s: %w", c.Name, err)
	}
	return nil
}

// findOrCreateCluster returns existing (clusterFor's), else creates cr's Cluster (recording
// tok, when there is one, as the token it was registered with); one created meanwhile by a
// concurrent registration of the same clientID is used, one of another is a conflict.
func (r *Reconciler) findOrCreateCluster(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration, existing *fleetv1alpha1.Cluster, tok *fleetv1alpha1.ClusterRegistrationToken) (*fleetv1alpha1.Cluster, error) {
	if existing != nil {
		return existing, nil
	}
	annotations := map[string]string{clusterctrl.RegisteringAnnotation: cr.Name}
	if tok != nil && !bound(tok) {
		annotations[fleetv1alpha1.RegistrationTokenAnnotation] = string(tok.UID)
	}
	c := &fleetv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: names.ClusterNameForClientID(cr.Spec.ClientID), Labels: cr.Spec.ClusterLabels,
			Annotations: annotations,
			// Set at creation: saves the cluster controller a write.
			Finalizers: []string{clusterctrl.Finalizer}},
		Spec: fleetv1alpha1.ClusterSpec{ClientID: cr.Spec.ClientID},
	}
	err := r.Client.Create(ctx, c)
	if apierrors.IsAlreadyExists(err) {
		// Created by a concurrent registration, or not yet in the cache.
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return nil, fmt.Errorf("get cluster %s: %w", c.Name, err)
		}
		if c.Spec.ClientID != cr.Spec.ClientID {
			return nil, deniedError{fleetv1alpha1.ReasonClusterConflict, fmt.Sprintf("Cluster %s exists with another clientID", c.Name)}
		}
		if tok != nil && !bound(tok) {
			if err := checkTakeover(c, tok, nil); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("create cluster %s: %w", c.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created Cluster for registration", "Cluster", c.Name)
	return c, nil
}

// importIdentity is the ServiceAccount of the token the registration was made with: only it
// may read the answer. boundTo is the UID of the one Cluster the token may register, for the
// import tokens drover makes for a Cluster (manager-initiated import), else "".
func (r *Reconciler) importIdentity(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration, renewal bool) (string, *fleetv1alpha1.ClusterRegistrationToken, error) {
	if renewal {
		return names.RenewalServiceAccount, nil, nil
	}
	name := cr.Labels[fleetv1alpha1.TokenLabel]
	if name == "" {
		return "", nil, deniedError{fleetv1alpha1.ReasonRegistrationFailed, "Registration has no " + fleetv1alpha1.TokenLabel + " label"}
	}
	tok := &fleetv1alpha1.ClusterRegistrationToken{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cr.Namespace, Name: name}, tok); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil, deniedError{fleetv1alpha1.ReasonRegistrationFailed, fmt.Sprintf("Registration token %s does not exist", name)}
		}
		return "", nil, fmt.Errorf("get token %s: %w", name, err)
	}
	if tok.Status.ServiceAccountName == "" {
		return "", nil, fmt.Errorf("token %s has no import identity yet", name)
	}
	return tok.Status.ServiceAccountName, tok, nil
}

// takeSlot records cr's clientID on a token with spec.maxClusters, or refuses the registration
// when the token has registered that many other clusters. The record is written with the
// token's resourceVersion: of two registrations racing for the last slot, one gets a conflict,
// is retried against the updated list and refused.
func (r *Reconciler) takeSlot(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration, tok *fleetv1alpha1.ClusterRegistrationToken) error {
	if tok.Spec.MaxClusters == nil || slices.Contains(tok.Status.RegisteredClientIDs, cr.Spec.ClientID) {
		return nil
	}
	if n := len(tok.Status.RegisteredClientIDs); n >= int(*tok.Spec.MaxClusters) {
		return deniedError{fleetv1alpha1.ReasonTokenMaxClusters, fmt.Sprintf(
			"Token %s may register %d cluster(s) (spec.maxClusters) and has registered %d; clientID %q is not one of them. Register this cluster with a new token (drover token create NAME --max-clusters N) or raise the token's spec.maxClusters",
			tok.Name, *tok.Spec.MaxClusters, n, cr.Spec.ClientID)}
	}
	before := tok.DeepCopy()
	tok.Status.RegisteredClientIDs = append(tok.Status.RegisteredClientIDs, cr.Spec.ClientID)
	if err := r.Client.Status().Patch(ctx, tok, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record clientID %q on token %s: %w", cr.Spec.ClientID, tok.Name, err)
	}
	return nil
}

// checkBoundCluster refuses a registration made with a Cluster's own import token for any
// other cluster. That token sits in the bootstrap Secret on the downstream cluster; without
// this, whoever can read it there could register clusters of their own into the workspace,
// each getting the workspace's Bundles.
func (r *Reconciler) checkBoundCluster(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration, clusterUID string) error {
	var list fleetv1alpha1.ClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(cr.Namespace), client.MatchingFields{ClientIDIndex: cr.Spec.ClientID}); err != nil {
		return fmt.Errorf("list clusters by clientID: %w", err)
	}
	for _, c := range list.Items {
		if string(c.UID) == clusterUID {
			return nil
		}
	}
	return deniedError{fleetv1alpha1.ReasonTokenForOtherCluster, fmt.Sprintf(
		"Token %s was made for one Cluster's agent (manager-initiated import) and registers only that Cluster; clientID %q is not its clientID. Register other clusters with a token of their own (drover token create)",
		cr.Labels[fleetv1alpha1.TokenLabel], cr.Spec.ClientID)}
}

// The import identity's right to read the answers of its token's registrations is kept in a
// few Roles per token and time window (readerShards, readerWindow), each listing secret names:
// a grant adds its secret's name with one JSON patch instead of creating a Role and a
// RoleBinding. Fewer writes on every agent's critical path, and fewer RoleBindings in the
// system namespace for the authorizer to scan on each of the agents' watches. The identity may
// read exactly what the per-registration Roles allowed before (all of them were bound to the
// same import ServiceAccount); a window's Roles are deleted once its answers have expired.
const (
	readerShards = 16
	// readerWindowEndLabel holds the end of a reader Role's window, in Unix seconds.
	readerWindowEndLabel = fleetv1alpha1.LabelPrefix + "reader-window-end"
)

// windowEnd is the end of the reader window t falls in.
func (r *Reconciler) windowEnd(t time.Time) time.Time {
	return t.Truncate(r.ReaderWindow).Add(r.ReaderWindow)
}

// tokenOf is the registration-token label value of objects made for cr.
func tokenOf(cr *fleetv1alpha1.ClusterRegistration) string {
	if isRenewalName(cr) {
		return names.RenewalTokenLabelValue
	}
	return cr.Labels[fleetv1alpha1.TokenLabel]
}

func isRenewalName(cr *fleetv1alpha1.ClusterRegistration) bool {
	return strings.HasPrefix(cr.Name, names.RenewalPrefix)
}

// Reading a renewal's namespace (its labels name the cluster).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// renewalCluster is the Cluster a renewal registration re-registers, nil for a registration in
// a workspace. A registration made in a cluster namespace is a renewal: only that cluster's
// renewal identity (and drover's admins) may create one there, so the namespace, not anything
// the registration says, names the cluster; its clientID must be that cluster's.
func (r *Reconciler) renewalCluster(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration) (*fleetv1alpha1.Cluster, error) {
	if !isRenewalName(cr) {
		// Another name in a cluster namespace is denied for want of a token there.
		return nil, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: cr.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("get namespace %s: %w", cr.Namespace, err)
	}
	l := ns.Labels
	if l[fleetv1alpha1.ManagedLabel] != "true" || l[fleetv1alpha1.ClusterLabel] == "" || l[fleetv1alpha1.ClusterNamespaceLabel] == "" {
		return nil, deniedError{fleetv1alpha1.ReasonRegistrationFailed, "Registrations named " + names.RenewalPrefix + "* are renewals: create them in a cluster namespace"}
	}
	c := &fleetv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: l[fleetv1alpha1.ClusterNamespaceLabel], Name: l[fleetv1alpha1.ClusterLabel]}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, deniedError{fleetv1alpha1.ReasonRegistrationFailed, fmt.Sprintf("Cluster %s of namespace %s no longer exists", l[fleetv1alpha1.ClusterLabel], cr.Namespace)}
		}
		return nil, fmt.Errorf("get cluster of namespace %s: %w", cr.Namespace, err)
	}
	if string(c.UID) != l[fleetv1alpha1.ClusterUIDLabel] || c.Status.Namespace != cr.Namespace {
		return nil, deniedError{fleetv1alpha1.ReasonRegistrationFailed, fmt.Sprintf("Namespace %s belongs to a deleted Cluster %s", cr.Namespace, c.Name)}
	}
	if c.Spec.ClientID != cr.Spec.ClientID {
		return nil, deniedError{fleetv1alpha1.ReasonInvalidClientID, fmt.Sprintf("A renewal of Cluster %s must carry its clientID", c.Name)}
	}
	return c, nil
}

// registrationsOf are the registrations of cr's clientID: in its workspace and in the cluster
// namespace (renewals) of the workspace's Cluster with that clientID.
func (r *Reconciler) registrationsOf(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration, renewal *fleetv1alpha1.Cluster) ([]fleetv1alpha1.ClusterRegistration, error) {
	ws, clusterNS := cr.Namespace, ""
	if renewal != nil {
		ws, clusterNS = renewal.Namespace, renewal.Status.Namespace
	} else {
		var clusters fleetv1alpha1.ClusterList
		if err := r.Client.List(ctx, &clusters, client.InNamespace(ws), client.MatchingFields{ClientIDIndex: cr.Spec.ClientID}); err != nil {
			return nil, fmt.Errorf("list clusters by clientID: %w", err)
		}
		for _, c := range clusters.Items {
			if c.DeletionTimestamp.IsZero() {
				clusterNS = c.Status.Namespace
			}
		}
	}
	var out []fleetv1alpha1.ClusterRegistration
	for _, ns := range []string{ws, clusterNS} {
		if ns == "" {
			continue
		}
		var list fleetv1alpha1.ClusterRegistrationList
		if err := r.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{ClientIDIndex: cr.Spec.ClientID}); err != nil {
			return nil, fmt.Errorf("list registrations of clientID: %w", err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// answerName is the registration secret answering cr: the length-prefixed name for current
// agents, the legacy one for agents that predate it (they wait for that name).
func answerName(cr *fleetv1alpha1.ClusterRegistration) string {
	return names.AnswerSecretName(cr.Annotations, cr.Spec.ClientID, cr.Spec.ClientRandom)
}

// checkLegacyName refuses a legacy-named answer whose name another registration's answer already
// has: the legacy encoding is ambiguous (clientID "ab" with random "c…" and "a" with "bc…"
// share it), and without this check the second registration's import identity would be let
// read the first one's answer, or overwrite it. Current names cannot collide: no check, no read.
func (r *Reconciler) checkLegacyName(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration) error {
	if cr.Annotations[names.SecretNameAnnotation] == names.SecretNameLengthPrefixed {
		return nil
	}
	name := answerName(cr)
	s := &metav1.PartialObjectMetadata{}
	s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get registration secret %s: %w", name, err)
	}
	if s.Labels[fleetv1alpha1.RegistrationLabel] != cr.Name || s.Labels[fleetv1alpha1.ClusterNamespaceLabel] != cr.Namespace {
		return deniedError{fleetv1alpha1.ReasonSecretNameConflict, fmt.Sprintf(
			"Registration secret %s already answers another registration: register again with a current agent (it uses collision-free names)", name)}
	}
	return nil
}

// answerRefusal writes a refusal into cr's answer Secret, where the identity that registered may
// read it (it may not read its ClusterRegistration: that would show it other registrations'
// clientRandom), so its agent can say why it waits. No answer is written when the identity is not known, or when the
// answer's name belongs to another registration (SecretNameConflict).
func (r *Reconciler) answerRefusal(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration, importSA, reason, msg string) error {
	if reason == fleetv1alpha1.ReasonSecretNameConflict {
		return nil
	}
	if importSA == "" {
		sa, _, err := r.importIdentity(ctx, cr, isRenewalName(cr))
		if err != nil {
			return nil // no usable identity: no one to answer
		}
		importSA = sa
	}
	// The finalizer first: deleting the registration (RefusedTTL, or by hand) deletes its answer.
	orig := cr.DeepCopy()
	if controllerutil.AddFinalizer(cr, finalizer) {
		if err := r.Client.Patch(ctx, cr, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
	}
	labels := map[string]string{fleetv1alpha1.RegistrationLabel: cr.Name, fleetv1alpha1.ClusterNamespaceLabel: cr.Namespace, fleetv1alpha1.TokenLabel: tokenOf(cr)}
	owned, err := r.claimAnswer(ctx, cr, labels, map[string][]byte{
		fleetv1alpha1.KeyRefusedReason:  []byte(reason),
		fleetv1alpha1.KeyRefusedMessage: []byte(msg),
	})
	if err != nil || !owned {
		return err // another registration's answer: nothing to say to this one there
	}
	return r.applyReader(ctx, cr, importSA)
}

// answerOwnerAnnotation on an answer Secret is the UID of the registration it answers.
const answerOwnerAnnotation = fleetv1alpha1.LabelPrefix + "answers"

// claimAnswer writes data into cr's answer Secret: it creates it, or replaces the data of the
// one cr already owns. It writes nothing and returns false when the name answers another
// registration. A name is a function of the clientID and clientRandom, which whoever may list
// registrations can read: a registration repeating another's must get neither its answer nor
// the right to read it.
func (r *Reconciler) claimAnswer(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration, labels map[string]string, data map[string][]byte) (bool, error) {
	key := client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace, Name: answerName(cr)}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: kube.ManagedLabels(labels),
		Annotations: map[string]string{answerOwnerAnnotation: string(cr.UID)}}, Type: fleetv1alpha1.SecretTypeAgentCredential, Data: data}
	err := r.Client.Create(ctx, s, client.FieldOwner(kube.FieldOwner))
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return false, fmt.Errorf("create registration secret %s: %w", key.Name, err)
		}
		return true, nil
	}
	cur := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, cur); err != nil {
		return false, fmt.Errorf("get registration secret %s: %w", key.Name, err)
	}
	if cur.Annotations[answerOwnerAnnotation] != string(cr.UID) {
		return false, nil
	}
	cur.Labels, cur.Data = s.Labels, data
	if err := r.Client.Update(ctx, cur, client.FieldOwner(kube.FieldOwner)); err != nil {
		return false, fmt.Errorf("update registration secret %s: %w", key.Name, err)
	}
	return true, nil
}

// answerConflict refuses a registration whose answer's name another registration holds.
func answerConflict(name string) error {
	return deniedError{fleetv1alpha1.ReasonSecretNameConflict, fmt.Sprintf(
		"Registration secret %s already answers another registration with the same clientID and clientRandom: register again (the agent picks a new clientRandom)", name)}
}

// applyReader lets the import identity get and watch the one registration secret answering cr.
func (r *Reconciler) applyReader(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration, importSA string) error {
	secretName := answerName(cr)
	token := tokenOf(cr)
	window := strconv.FormatInt(r.windowEnd(time.Now()).Unix(), 10)
	h := fnv.New32a()
	_, _ = h.Write([]byte(secretName))
	name := names.ReaderRole(cr.Namespace, importSA, window, int(h.Sum32()%readerShards))
	sys := fleetv1alpha1.SystemRegistrationNamespace
	// The test ops refuse (422) to add the answer to a reader of another namespace or token.
	add := client.RawPatch(types.JSONPatchType, []byte(fmt.Sprintf(`[{"op":"test","path":"/metadata/labels/%s","value":%q},{"op":"test","path":"/metadata/labels/%s","value":%q},{"op":"add","path":"/rules/0/resourceNames/-","value":%q}]`,
		jsonPointerEscape(fleetv1alpha1.TokenLabel), token, jsonPointerEscape(fleetv1alpha1.ClusterNamespaceLabel), cr.Namespace, secretName)))
	err := r.Client.Patch(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: sys, Name: name}}, add)
	if !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("add %s to registration secret reader %s: %w", secretName, name, err)
		}
		return nil
	}
	// The first answer of this shard and window: the binding (it may name a Role that does not
	// exist yet), then the Role, or the patch if another grant created it meanwhile.
	labels := kube.ManagedLabels(map[string]string{fleetv1alpha1.TokenLabel: token, fleetv1alpha1.ClusterNamespaceLabel: cr.Namespace, readerWindowEndLabel: window})
	binding := kube.RoleBinding(sys, name, labels, name, cr.Namespace, importSA)
	// Only an identity with the bind right (an admin) may create a binding naming a Role that
	// does not exist: with drover's own least-privilege rights the API server answers NotFound,
	// and the Role comes first. (Crashing between the two leaves the Role unbound until its
	// window ends; the next window's reader is complete again.)
	err = kube.CreateIfAbsent(ctx, r.Client, binding)
	roleFirst := apierrors.IsNotFound(err)
	if err != nil && !roleFirst {
		return fmt.Errorf("create registration secret reader binding %s: %w", name, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: sys, Name: name, Labels: labels},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secretName}, Verbs: []string{"get", "list", "watch"}}}}
	err = r.Client.Create(ctx, role, client.FieldOwner(kube.FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		err = r.Client.Patch(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: sys, Name: name}}, add)
	}
	if err != nil {
		return fmt.Errorf("create registration secret reader %s: %w", name, err)
	}
	if roleFirst {
		if err := kube.CreateIfAbsent(ctx, r.Client, binding); err != nil {
			return fmt.Errorf("create registration secret reader binding %s: %w", name, err)
		}
	}
	return nil
}

// jsonPointerEscape escapes a map key for a JSON pointer (RFC 6901).
func jsonPointerEscape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// sweepReaders deletes the reader Roles and RoleBindings of cr's token whose window's answers
// have all expired (AnswerTTL after the window's end).
func (r *Reconciler) sweepReaders(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration) error {
	cutoff := time.Now().Add(-r.AnswerTTL).Unix()
	var roles rbacv1.RoleList
	if err := r.APIReader.List(ctx, &roles, client.InNamespace(fleetv1alpha1.SystemRegistrationNamespace), client.HasLabels{readerWindowEndLabel},
		client.MatchingLabels{fleetv1alpha1.TokenLabel: tokenOf(cr), fleetv1alpha1.ClusterNamespaceLabel: cr.Namespace}); err != nil {
		return fmt.Errorf("list registration secret readers: %w", err)
	}
	for i := range roles.Items {
		role := &roles.Items[i]
		if end, err := strconv.ParseInt(role.Labels[readerWindowEndLabel], 10, 64); err != nil || end > cutoff {
			continue
		}
		for _, obj := range []client.Object{role, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: role.Name}}} {
			if err := kube.Delete(ctx, r.Client, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// grant creates the request identity and its rights, and the registration secret last: once the
// answer is readable, its rights are in place.
func (r *Reconciler) grant(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration, c *fleetv1alpha1.Cluster, importSA string, renewal bool) error {
	ns, sa := c.Status.Namespace, cr.Name
	labels := clusterctrl.Labels(c)
	regLabels := clusterctrl.Labels(c)
	regLabels[fleetv1alpha1.RegistrationLabel] = cr.Name
	regLabels[fleetv1alpha1.TokenLabel] = tokenOf(cr)
	secretName := answerName(cr)

	// Independent objects are written concurrently (the token needs only its ServiceAccount),
	// which roughly halves a grant's latency.
	g, gctx := errgroup.WithContext(ctx)
	var token string
	var exp time.Time
	g.Go(func() error {
		if err := kube.Create(gctx, r.Client, kube.ServiceAccount(ns, sa, regLabels)); err != nil {
			return fmt.Errorf("create request identity %s/%s: %w", ns, sa, err)
		}
		var err error
		token, exp, err = kube.RequestToken(gctx, r.Client, ns, sa, r.RequestTokenTTL)
		return err
	})
	// The renewal identity: register this cluster again, nothing else. Shared by the cluster's
	// registrations; every grant hands out a fresh token for it.
	var renewalToken string
	var renewalExp time.Time
	g.Go(func() error {
		if err := applyAll(gctx, r.Client, "renewal identity in "+ns, clusterctrl.RenewalIdentity(c)...); err != nil {
			return err
		}
		var err error
		renewalToken, renewalExp, err = kube.RequestToken(gctx, r.Client, ns, names.RenewalServiceAccount, r.RenewalTokenTTL)
		return err
	})
	g.Go(func() error {
		return applyAll(gctx, r.Client, fmt.Sprintf("rights of request identity %s/%s", ns, sa), clusterctrl.AgentRole(c, sa),
			// The binding names only the current request identity: re-registration revokes the old one.
			kube.RoleBinding(ns, names.AgentRole, labels, names.AgentRole, ns, sa))
	})
	// The answer comes last: once it is readable, the rights it stands for are in place.
	if err := g.Wait(); err != nil {
		return err
	}
	owned, err := r.claimAnswer(ctx, cr, regLabels, map[string][]byte{
		fleetv1alpha1.KeyToken:               []byte(token),
		fleetv1alpha1.KeyTokenExpiry:         []byte(exp.UTC().Format(time.RFC3339)),
		fleetv1alpha1.KeyClusterName:         []byte(c.Name),
		fleetv1alpha1.KeyClusterNamespace:    []byte(c.Namespace),
		fleetv1alpha1.KeyDeploymentNamespace: []byte(ns),
		fleetv1alpha1.KeyServiceAccount:      []byte(sa),
		fleetv1alpha1.KeyRenewalToken:        []byte(renewalToken),
		fleetv1alpha1.KeyRenewalTokenExpiry:  []byte(renewalExp.UTC().Format(time.RFC3339)),
	})
	if err != nil {
		return err
	}
	if !owned {
		return answerConflict(secretName)
	}
	// Only now may the identity read it: the answer is this registration's, and the rights it
	// stands for are in place.
	if err := r.applyReader(ctx, cr, importSA); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Granted registration", "Cluster", c.Name, "serviceAccount", sa, "renewal", renewal)
	return nil
}

// applyAll applies independent objects concurrently.
func applyAll(ctx context.Context, c client.Client, what string, objs ...runtime.ApplyConfiguration) error {
	// RoleBindings after their Roles: without the bind right (drover's least-privilege RBAC)
	// the API server refuses a binding to a Role that does not exist yet.
	var first, bindings []runtime.ApplyConfiguration
	for _, obj := range objs {
		if _, ok := obj.(*rbacv1ac.RoleBindingApplyConfiguration); ok {
			bindings = append(bindings, obj)
		} else {
			first = append(first, obj)
		}
	}
	for _, batch := range [][]runtime.ApplyConfiguration{first, bindings} {
		g, gctx := errgroup.WithContext(ctx)
		for _, obj := range batch {
			g.Go(func() error { return kube.Create(gctx, c, obj) })
		}
		if err := g.Wait(); err != nil {
			return fmt.Errorf("apply %s: %w", what, err)
		}
	}
	return nil
}

// delete removes what was created for one registration: its request ServiceAccount (killing
// its tokens), the registration secret and its reader.
func (r *Reconciler) delete(ctx context.Context, cr *fleetv1alpha1.ClusterRegistration) error {
	if !controllerutil.ContainsFinalizer(cr, finalizer) {
		return nil
	}
	if isRenewalName(cr) && cr.Status.ClusterName != "" {
		// A granted renewal's request identity lives in the namespace of the registration.
		if err := kube.Delete(ctx, r.Client, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: cr.Name}}); err != nil {
			return err
		}
	} else if cr.Status.ClusterName != "" {
		c := &fleetv1alpha1.Cluster{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: cr.Namespace, Name: cr.Status.ClusterName}, c)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("get cluster %s: %w", cr.Status.ClusterName, err)
		}
		if err == nil && c.Status.Namespace != "" {
			if err := kube.Delete(ctx, r.Client, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: c.Status.Namespace, Name: cr.Name}}); err != nil {
				return err
			}
		}
	}
	if err := r.deleteAnswer(ctx, cr); err != nil {
		return err
	}
	before := cr.DeepCopy()
	controllerutil.RemoveFinalizer(cr, finalizer)
	if err := r.Client.Patch(ctx, cr, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}

// bound reports whether tok is drover's import token of one Cluster.
func bound(tok *fleetv1alpha1.ClusterRegistrationToken) bool {
	_, _, ok := tok.BoundCluster()
	return ok
}
