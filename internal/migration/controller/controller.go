// Package controller runs CloudProviderMigration objects: the step engine with the object's
// status as its persisted state.
package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/kubeconfig"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/checks"
	"github.com/droverhq/drover/internal/migration/rke2"
)

// Condition reasons of configuration problems (stable: tools match on them). Step failures use
// the step's name as the reason (migration.StepNames).
const (
	ReasonUnsupported           = "Unsupported"
	ReasonKubeconfigUnavailable = "KubeconfigUnavailable"
	// ReasonClusterNotFound: spec.clusterRef names no provisioning Cluster (yet); the
	// controller re-checks every ClusterRecheckInterval and starts once it exists.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonClusterInOtherNamespace: spec.clusterRef names a provisioning Cluster of another
	// namespace. drover's own rights would act on it for whoever may create a migration here,
	// so a migration acts only on its own namespace's Clusters; nothing of the other namespace is
	// read.
	ReasonClusterInOtherNamespace = "ClusterInOtherNamespace"
)

// migrationLabel names the migration a Secret of drover's belongs to.
const migrationLabel = "migration.drover.io/migration"

// RollbackAnnotation set to "true" asks the controller to roll the migration back (only below 1.27).
const RollbackAnnotation = "migration.drover.io/rollback"

// RetryAnnotation (any value) asks the controller to retry the step a migration failed at,
// once its cause is fixed; the controller removes it when it has acted on it.
const RetryAnnotation = "migration.drover.io/retry"

// Reconciler reconciles CloudProviderMigration.
type Reconciler struct {
	// Client reads and writes migrations, Secrets and provisioning Clusters.
	Client client.Client
	// Downstream makes a client for the downstream cluster from a kubeconfig (default: clientcmd).
	Downstream func(kubeconfig []byte) (kubernetes.Interface, error)
	// Namespace of the downstream control plane (default kube-system); Selector limits nodes.
	Namespace, Selector string
	// KCMIdentity is the downstream kube-controller-manager user (default system:kube-controller-manager).
	KCMIdentity string
	// PollInterval and StepTimeout tune the engine (defaults 2 s and 10 min).
	PollInterval, StepTimeout time.Duration
	// ClusterRecheckInterval is how often a migration whose provisioning Cluster does not
	// exist looks for it again (default 30 s).
	ClusterRecheckInterval time.Duration
	// APIReader reads migrations uncached (default: the manager's API reader). The engine's
	// state is the object's status: acting on a stale cached copy could repeat an action
	// whose completion the cache has not seen yet.
	APIReader client.Reader
	// OnAction, if set, is called after a step's action ran; OnTransition after each persisted
	// step transition (tests, progress events).
	OnAction     func(step int)
	OnTransition func(migrationv1alpha1.StepStatus)
	// Recorder emits an Event on the migration per step transition (default: the manager's).
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=migration.drover.io,resources=cloudprovidermigrations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=migration.drover.io,resources=cloudprovidermigrations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=provisioning.cattle.io,resources=clusters,verbs=get;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		return errors.New("migration controller: Client is required")
	}
	if r.Downstream == nil {
		r.Downstream = downstreamFromKubeconfig
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("drover-migration")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &migrationv1alpha1.CloudProviderMigration{}, secretIndex, func(o client.Object) []string {
		return []string{o.(*migrationv1alpha1.CloudProviderMigration).Spec.KubeconfigSecretRef.Name}
	}); err != nil {
		return fmt.Errorf("index CloudProviderMigrations by kubeconfig Secret: %w", err)
	}
	if err := (&stepMetrics{client: mgr.GetClient()}).setup(mgr); err != nil {
		return fmt.Errorf("set up migration metrics: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).For(&migrationv1alpha1.CloudProviderMigration{}).
		// A migration waiting for its kubeconfig starts when the Secret is created or fixed.
		// Metadata only: the kubeconfig itself is read uncached, when needed.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.migrationsOfSecret), builder.OnlyMetadata).
		Named("cloudprovidermigration").Complete(r)
}

// secretIndex indexes migrations by the name of their kubeconfig Secret (same namespace).
const secretIndex = "spec.kubeconfigSecretRef.name"

func (r *Reconciler) migrationsOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list migrationv1alpha1.CloudProviderMigrationList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{secretIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing migrations of a Secret", "secret", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

func downstreamFromKubeconfig(kc []byte) (kubernetes.Interface, error) {
	cfg, err := kubeconfig.FromSecret(kc)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// maxTransitions bounds one reconcile, so a long migration still yields to other objects.
const maxTransitions = 32

// Reconcile advances one migration by as many transitions as are ready.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	m := &migrationv1alpha1.CloudProviderMigration{}
	if err := r.reader().Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if m.Spec.Distribution != migrationv1alpha1.DistributionRKE2 || m.Spec.ClusterRef == nil {
		return ctrl.Result{}, r.terminal(ctx, m, ReasonUnsupported, "The controller migrates rke2 clusters with spec.clusterRef; run RKE1 migrations with `drover migrate cloud-provider apply --distribution rke1 --config cluster.yml`, which runs rke up and Helm where cluster.yml lives")
	}
	if ns := m.Spec.ClusterRef.Namespace; ns != m.Namespace {
		return ctrl.Result{}, r.terminal(ctx, m, ReasonClusterInOtherNamespace, fmt.Sprintf(
			"spec.clusterRef names a Cluster of namespace %s: a migration acts only on provisioning Clusters of its own namespace (%s), as drover's rights would otherwise act on other teams' Clusters for whoever may create a migration; create the migration in %s (spec is immutable: delete this one)", ns, m.Namespace, ns))
	}
	rollback := m.Annotations[RollbackAnnotation] == "true" && m.Status.Phase != migrationv1alpha1.PhaseRolledBack
	reason := failedReason(m)
	// Configuration problems clear themselves once fixed: the migration resumes.
	waitingForKubeconfig := reason == ReasonKubeconfigUnavailable || reason == ReasonClusterNotFound
	_, retry := m.Annotations[RetryAnnotation]
	stepFailed := reason != "" && slices.Contains(migration.StepNames[:], reason)
	if !rollback {
		// The rollback request was withdrawn: its refusal no longer applies.
		if err := r.clearRollbackRefused(ctx, m); err != nil {
			return ctrl.Result{}, err
		}
	}
	if m.Status.Facts.OriginalConfig != "" {
		// Recorded in the status by an older drover: moved to its Secret, finished or not.
		store := &statusStore{client: r.Client, reader: r.reader(), obj: m}
		st, err := store.Load(ctx)
		if err == nil {
			err = store.Save(ctx, st)
		}
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	switch m.Status.Phase {
	case migrationv1alpha1.PhaseSucceeded, migrationv1alpha1.PhaseRolledBack, migrationv1alpha1.PhaseFailed:
		if !rollback && !waitingForKubeconfig && (!retry || !stepFailed) {
			if retry {
				return ctrl.Result{}, r.removeRetry(ctx, m) // nothing to retry
			}
			return ctrl.Result{}, nil // finished; a Secret event must not overwrite how
		}
	}
	kc, err := r.kubeconfig(ctx, m)
	var unavailable *kubeconfigError
	switch {
	case errors.As(err, &unavailable):
		// The user fixes the Secret; its watch resumes the migration.
		return ctrl.Result{}, r.terminal(ctx, m, ReasonKubeconfigUnavailable, unavailable.msg)
	case err != nil:
		// Anything else (the API server unavailable, throttling, a timeout) is transient:
		// the returned error requeues with exponential backoff.
		return ctrl.Result{}, err
	}
	down, err := r.Downstream(kc)
	if err != nil {
		return ctrl.Result{}, r.terminal(ctx, m, ReasonKubeconfigUnavailable, fmt.Sprintf("kubeconfig Secret %s/%s: %v; fix the Secret and the migration resumes", m.Namespace, m.Spec.KubeconfigSecretRef.Name, err))
	}
	clusterKey := types.NamespacedName{Namespace: m.Spec.ClusterRef.Namespace, Name: m.Spec.ClusterRef.Name}
	if missing, err := r.clusterMissing(ctx, clusterKey); err != nil {
		return ctrl.Result{}, err
	} else if missing != "" {
		return r.waitForCluster(ctx, m, missing)
	}
	if waitingForKubeconfig && !stepFailed {
		if err := r.updateStatus(ctx, m, func(s *migrationv1alpha1.CloudProviderMigrationStatus) {
			meta.RemoveStatusCondition(&s.Conditions, migration.ConditionFailed)
			s.Phase = migrationv1alpha1.PhasePending
			for _, st := range s.Steps {
				if st.StartedAt != nil {
					s.Phase = migrationv1alpha1.PhaseRunning
				}
			}
		}); err != nil {
			return ctrl.Result{}, err
		}
		log.Info("Configuration available: resuming migration", "was", reason)
	}
	ns := r.Namespace
	if ns == "" {
		ns = metav1.NamespaceSystem
	}
	eng := &migration.Engine{
		Dist:   &rke2.Object{Client: r.Client, Key: clusterKey},
		Checks: &checks.Checker{Client: down, Namespace: ns, Selector: r.Selector, KCMIdentity: r.KCMIdentity},
		Store:  &statusStore{client: r.Client, reader: r.reader(), obj: m}, PollInterval: r.PollInterval, StepTimeout: r.StepTimeout,
		OnAction: r.OnAction, Report: func(step migrationv1alpha1.StepStatus) {
			r.recordStep(m, step)
			if r.OnTransition != nil {
				r.OnTransition(step)
			}
		},
	}
	if rollback {
		log.Info("Rolling back migration")
		err := eng.Rollback(ctx)
		var refused *migration.RollbackRefusedError
		switch {
		case errors.As(err, &refused):
			// Retrying cannot help (the version does not go back below 1.27 by itself): record
			// why and stop; removing the annotation (an update event) clears it.
			return ctrl.Result{}, r.refuseRollback(ctx, m, refused)
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("roll back: %w", err)
		}
		if err := r.clearRollbackRefused(ctx, m); err != nil {
			return ctrl.Result{}, err
		}
		r.event(m, corev1.EventTypeNormal, "RolledBack", "Rolled back to the in-tree AWS cloud provider")
		return ctrl.Result{}, nil
	}
	if retry {
		if stepFailed {
			i, ok, err := eng.RetryFailed(ctx)
			if err != nil {
				return ctrl.Result{}, fmt.Errorf("retry the failed step: %w", err)
			}
			if ok {
				r.event(m, corev1.EventTypeNormal, "StepRetried", fmt.Sprintf("Retrying step %d %s after a failure (annotation %s)", i, migration.StepNames[i], RetryAnnotation))
			}
		}
		if err := r.removeRetry(ctx, m); err != nil {
			return ctrl.Result{}, err
		}
	}
	finishedBefore := m.Status.Phase == migrationv1alpha1.PhaseSucceeded
	for range maxTransitions {
		if err := ctx.Err(); err != nil {
			return ctrl.Result{}, err // stopping: leave the next transition to the next controller
		}
		pr, err := eng.Advance(ctx)
		var fe *migration.FailedError
		switch {
		case errors.As(err, &fe), errors.Is(err, migration.ErrRollbackInProgress):
			return ctrl.Result{}, reconcile.TerminalError(err)
		case err != nil:
			return ctrl.Result{}, err
		case pr.Done:
			if m.Status.Phase == migrationv1alpha1.PhaseSucceeded && !finishedBefore {
				r.event(m, corev1.EventTypeNormal, "Succeeded", "Migrated to the out-of-tree AWS cloud controller manager")
			}
			return ctrl.Result{}, nil
		case pr.Wait > 0:
			return ctrl.Result{RequeueAfter: pr.Wait}, nil
		}
	}
	return ctrl.Result{RequeueAfter: time.Millisecond}, nil
}

// clusterMissing says why the provisioning Cluster cannot be found ("" if it exists).
func (r *Reconciler) clusterMissing(ctx context.Context, key types.NamespacedName) (string, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rke2.ClusterGVK)
	err := r.Client.Get(ctx, key, u)
	switch {
	case err == nil:
		return "", nil
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("provisioning Cluster %s (spec.clusterRef) not found: create it, or recreate this migration naming an existing Cluster (kubectl get clusters.provisioning.cattle.io -A); the migration starts once it exists", key), nil
	case meta.IsNoMatchError(err):
		return fmt.Sprintf("provisioning Cluster %s (spec.clusterRef): the provisioning.cattle.io/v1 Cluster API is not installed in this cluster; run drover server in Rancher's management cluster", key), nil
	}
	return "", fmt.Errorf("get provisioning Cluster %s: %w", key, err)
}

// waitForCluster records a missing provisioning Cluster (condition Failed, reason
// ClusterNotFound, and a Warning event the first time) and looks for it again later.
func (r *Reconciler) waitForCluster(ctx context.Context, m *migrationv1alpha1.CloudProviderMigration, msg string) (ctrl.Result, error) {
	after := r.ClusterRecheckInterval
	if after <= 0 {
		after = 30 * time.Second
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, migration.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue &&
		c.Reason == ReasonClusterNotFound && c.Message == msg && m.Status.Phase == migrationv1alpha1.PhaseFailed {
		return ctrl.Result{RequeueAfter: after}, nil // recorded already
	}
	if err := r.updateStatus(ctx, m, func(s *migrationv1alpha1.CloudProviderMigrationStatus) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: migration.ConditionFailed, Status: metav1.ConditionTrue, Reason: ReasonClusterNotFound, Message: msg, ObservedGeneration: m.Generation})
		s.Phase = migrationv1alpha1.PhaseFailed
	}); err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Provisioning Cluster not found: waiting for it", "cluster", m.Spec.ClusterRef.Namespace+"/"+m.Spec.ClusterRef.Name, "recheckAfter", after.String())
	r.event(m, corev1.EventTypeWarning, ReasonClusterNotFound, msg)
	return ctrl.Result{RequeueAfter: after}, nil
}

// removeRetry removes the retry annotation once acted on.
func (r *Reconciler) removeRetry(ctx context.Context, m *migrationv1alpha1.CloudProviderMigration) error {
	if _, ok := m.Annotations[RetryAnnotation]; !ok {
		return nil
	}
	patch := client.MergeFrom(m.DeepCopy())
	delete(m.Annotations, RetryAnnotation)
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return fmt.Errorf("remove annotation %s from CloudProviderMigration %s: %w", RetryAnnotation, client.ObjectKeyFromObject(m), err)
	}
	return nil
}

func (r *Reconciler) kubeconfig(ctx context.Context, m *migrationv1alpha1.CloudProviderMigration) ([]byte, error) {
	ref := m.Spec.KubeconfigSecretRef
	key := ref.Key
	if key == "" {
		key = "value"
	}
	s := &corev1.Secret{}
	// Uncached: a cached Get would make the manager cache every Secret's data.
	if err := r.reader().Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: ref.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &kubeconfigError{fmt.Sprintf("kubeconfig Secret %s/%s not found: create it with the downstream kubeconfig under key %q, and the migration starts", m.Namespace, ref.Name, key)}
		}
		return nil, fmt.Errorf("get kubeconfig Secret %s/%s: %w", m.Namespace, ref.Name, err)
	}
	if len(s.Data[key]) == 0 {
		return nil, &kubeconfigError{fmt.Sprintf("kubeconfig Secret %s/%s has no key %q: add the downstream kubeconfig there, and the migration starts", m.Namespace, ref.Name, key)}
	}
	return s.Data[key], nil
}

// kubeconfigError is a kubeconfig Secret the user must create or fix (not a transient error).
type kubeconfigError struct{ msg string }

func (e *kubeconfigError) Error() string { return e.msg }

func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// failedReason is the reason of the Failed condition of a failed migration ("" otherwise).
func failedReason(m *migrationv1alpha1.CloudProviderMigration) string {
	if c := meta.FindStatusCondition(m.Status.Conditions, migration.ConditionFailed); m.Status.Phase == migrationv1alpha1.PhaseFailed && c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

// recordStep emits an Event for a persisted step transition: `kubectl describe` and event
// streams show a migration's progress without reading its status.
func (r *Reconciler) recordStep(m *migrationv1alpha1.CloudProviderMigration, s migrationv1alpha1.StepStatus) {
	typ, note := corev1.EventTypeNormal, fmt.Sprintf("Step %d %s: %s", s.Index, s.Name, s.Phase)
	if s.Phase == migrationv1alpha1.StepFailed {
		typ = corev1.EventTypeWarning
	}
	if s.Message != "" {
		note += ": " + s.Message
	}
	if s.Phase == migrationv1alpha1.StepFailed {
		note += fmt.Sprintf(". Fix the cause and annotate %s=<any new value> to retry the step, or %s=true to roll back (below 1.27)", RetryAnnotation, RollbackAnnotation)
	}
	r.event(m, typ, "Step"+string(s.Phase), note)
}

func (r *Reconciler) event(m *migrationv1alpha1.CloudProviderMigration, typ, reason, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(m, nil, typ, reason, "Migrate", "%s", note)
	}
}

// terminal records a configuration problem the user must fix; retrying cannot help (a watch
// brings the object back when the fix lands).
func (r *Reconciler) terminal(ctx context.Context, m *migrationv1alpha1.CloudProviderMigration, reason, msg string) error {
	if err := r.updateStatus(ctx, m, func(s *migrationv1alpha1.CloudProviderMigrationStatus) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: migration.ConditionFailed, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: m.Generation})
		s.Phase = migrationv1alpha1.PhaseFailed
	}); err != nil {
		return err // retried: the condition must land
	}
	return reconcile.TerminalError(errors.New(msg))
}

// refuseRollback records a rollback the engine refused (Kubernetes >= 1.27 configured, or
// nothing recorded to return to) as the RollbackRefused condition and a Warning event, and
// returns a terminal error: the request is not retried until the object changes.
func (r *Reconciler) refuseRollback(ctx context.Context, m *migrationv1alpha1.CloudProviderMigration, refused *migration.RollbackRefusedError) error {
	msg := fmt.Sprintf("%s%s. Remove the %s annotation to clear this condition; the migration does not advance while it is set.", strings.ToUpper(refused.Msg[:1]), refused.Msg[1:], RollbackAnnotation)
	if c := meta.FindStatusCondition(m.Status.Conditions, migration.ConditionRollbackRefused); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == refused.Reason && c.Message == msg {
		return reconcile.TerminalError(refused) // recorded already (this is the echo of that write)
	}
	if err := r.updateStatus(ctx, m, func(s *migrationv1alpha1.CloudProviderMigrationStatus) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: migration.ConditionRollbackRefused, Status: metav1.ConditionTrue,
			Reason: refused.Reason, Message: msg, ObservedGeneration: m.Generation})
	}); err != nil {
		return err // retried: the condition must land
	}
	r.event(m, corev1.EventTypeWarning, "RollbackRefused", msg)
	return reconcile.TerminalError(refused)
}

// clearRollbackRefused removes the RollbackRefused condition, if set.
func (r *Reconciler) clearRollbackRefused(ctx context.Context, m *migrationv1alpha1.CloudProviderMigration) error {
	if meta.FindStatusCondition(m.Status.Conditions, migration.ConditionRollbackRefused) == nil {
		return nil
	}
	return r.updateStatus(ctx, m, func(s *migrationv1alpha1.CloudProviderMigrationStatus) {
		meta.RemoveStatusCondition(&s.Conditions, migration.ConditionRollbackRefused)
	})
}

// updateStatus applies mutate to m's status and writes it. On a conflict it re-reads m and
// applies mutate again, so the change is never dropped by a concurrent write.
func (r *Reconciler) updateStatus(ctx context.Context, m *migrationv1alpha1.CloudProviderMigration, mutate func(*migrationv1alpha1.CloudProviderMigrationStatus)) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		mutate(&m.Status)
		err := r.Client.Status().Update(ctx, m)
		if apierrors.IsConflict(err) {
			if gerr := r.reader().Get(ctx, client.ObjectKeyFromObject(m), m); gerr != nil {
				return gerr
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("update CloudProviderMigration %s status: %w", client.ObjectKeyFromObject(m), err)
	}
	return nil
}

// statusStore persists the engine state in the object's status; each Save is a status update,
// so a restarted controller resumes from it.
type statusStore struct {
	client client.Client
	reader client.Reader
	obj    *migrationv1alpha1.CloudProviderMigration
}

// Load is the object's state, with the original configuration read from its Secret. A Secret
// that is gone leaves it empty: the migration goes on, and a rollback is refused as having
// nothing to restore.
func (s *statusStore) Load(ctx context.Context) (*migration.State, error) {
	st := &migration.State{Spec: *s.obj.Spec.DeepCopy(), Status: *s.obj.Status.DeepCopy()}
	f := &st.Status.Facts
	if f.OriginalConfig != "" || f.OriginalConfigSecret == "" {
		return st, nil
	}
	sec := &corev1.Secret{}
	switch err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.obj.Namespace, Name: f.OriginalConfigSecret}, sec); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("read the original configuration from Secret %s/%s: %w", s.obj.Namespace, f.OriginalConfigSecret, err)
	default:
		f.OriginalConfig = string(sec.Data[originalConfigKey])
	}
	return st, nil
}

// originalConfigKey is the key of the original configuration in its Secret.
const originalConfigKey = "config"

// originalConfigSecret is the name of the Secret holding m's original configuration.
func originalConfigSecret(m *migrationv1alpha1.CloudProviderMigration) string {
	const suffix = "-original-config"
	if len(m.Name)+len(suffix) <= validation.DNS1123SubdomainMaxLength {
		return m.Name + suffix
	}
	sum := sha256.Sum256([]byte(m.Name))
	return m.Name[:validation.DNS1123SubdomainMaxLength-len(suffix)-9] + "-" + hex.EncodeToString(sum[:4]) + suffix
}

// saveOriginal writes the original configuration to its Secret (owned by the migration, so it
// goes with it) and returns the status to store, which names the Secret instead.
func (s *statusStore) saveOriginal(ctx context.Context, status *migrationv1alpha1.CloudProviderMigrationStatus) error {
	f := &status.Facts
	if f.OriginalConfig == "" {
		return nil
	}
	name := originalConfigSecret(s.obj)
	sec := &corev1.Secret{}
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.obj.Namespace, Name: name}, sec)
	switch {
	case apierrors.IsNotFound(err):
		sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.obj.Namespace, Name: name,
			Labels: map[string]string{migrationLabel: s.obj.Name}}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{originalConfigKey: []byte(f.OriginalConfig)}}
		if err := controllerutil.SetControllerReference(s.obj, sec, s.client.Scheme()); err != nil {
			return fmt.Errorf("own Secret %s: %w", name, err)
		}
		if err := s.client.Create(ctx, sec); err != nil {
			return fmt.Errorf("keep the original configuration in Secret %s/%s: %w", s.obj.Namespace, name, err)
		}
	case err != nil:
		return fmt.Errorf("read Secret %s/%s: %w", s.obj.Namespace, name, err)
	case !metav1.IsControlledBy(sec, s.obj):
		return fmt.Errorf("secret %s/%s exists and is not this migration's: delete or rename it, drover keeps the original configuration there", s.obj.Namespace, name)
	case string(sec.Data[originalConfigKey]) != f.OriginalConfig:
		sec.Data = map[string][]byte{originalConfigKey: []byte(f.OriginalConfig)}
		if err := s.client.Update(ctx, sec); err != nil {
			return fmt.Errorf("keep the original configuration in Secret %s/%s: %w", s.obj.Namespace, name, err)
		}
	}
	f.OriginalConfig, f.OriginalConfigSecret = "", name
	return nil
}

// Save writes st as the status. A conflict caused by a write that left the status alone (an
// annotation, a label) is retried on the newer object, so a transition (a failure above all)
// is not lost; if the status itself changed, the state st came from is stale and the error
// is returned (the reconcile is retried from the stored status).
func (s *statusStore) Save(ctx context.Context, st *migration.State) error {
	base := s.obj.Status.DeepCopy() // the status st was derived from
	status := st.Status.DeepCopy()
	if err := s.saveOriginal(ctx, status); err != nil {
		return err
	}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		s.obj.Status = *status.DeepCopy()
		s.obj.Status.ObservedGeneration = s.obj.Generation
		err := s.client.Status().Update(ctx, s.obj)
		if !apierrors.IsConflict(err) {
			return err
		}
		fresh := &migrationv1alpha1.CloudProviderMigration{}
		if gerr := s.reader.Get(ctx, client.ObjectKeyFromObject(s.obj), fresh); gerr != nil {
			return gerr
		}
		if !equality.Semantic.DeepEqual(fresh.Status, *base) {
			return fmt.Errorf("status changed by another writer: %s", err.Error()) // not retried as a conflict
		}
		*s.obj = *fresh
		return err
	})
	if err != nil {
		return fmt.Errorf("update CloudProviderMigration %s status: %w", client.ObjectKeyFromObject(s.obj), err)
	}
	return nil
}
