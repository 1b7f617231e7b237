// Package controller runs CloudProviderMigration objects: the step engine with the object's
// status as its persisted state.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/checks"
	"github.com/droverhq/drover/internal/migration/rke2"
)

// Condition reasons of configuration problems (stable: tools match on them). Step failures use
// the step's name as the reason (migration.StepNames).
const (
	ReasonUnsupported           = "Unsupported"
	ReasonKubeconfigUnavailable = "KubeconfigUnavailable"
)

// RollbackAnnotation set to "true" asks the controller to roll the migration back (only below 1.27).
const RollbackAnnotation = "migration.drover.io/rollback"

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
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
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
	return ctrl.NewControllerManagedBy(mgr).For(&migrationv1alpha1.CloudProviderMigration{}).Named("cloudprovidermigration").Complete(r)
}

func downstreamFromKubeconfig(kubeconfig []byte) (kubernetes.Interface, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("parse downstream kubeconfig: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}

// maxTransitions bounds one reconcile, so a long migration still yields to other objects.
const maxTransitions = 32

// Reconcile advances one migration by as many transitions as are ready.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	m := &migrationv1alpha1.CloudProviderMigration{}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	if err := reader.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if m.Spec.Distribution != migrationv1alpha1.DistributionRKE2 || m.Spec.ClusterRef == nil {
		return ctrl.Result{}, r.terminal(ctx, m, ReasonUnsupported, "The controller migrates rke2 clusters with spec.clusterRef; run RKE1 migrations with `drover migrate cloud-provider apply --distribution rke1 --config cluster.yml`, which runs rke up and Helm where cluster.yml lives")
	}
	kc, err := r.kubeconfig(ctx, m)
	if err != nil {
		return ctrl.Result{}, r.terminal(ctx, m, ReasonKubeconfigUnavailable, err.Error())
	}
	down, err := r.Downstream(kc)
	if err != nil {
		return ctrl.Result{}, r.terminal(ctx, m, ReasonKubeconfigUnavailable, err.Error())
	}
	ns := r.Namespace
	if ns == "" {
		ns = metav1.NamespaceSystem
	}
	eng := &migration.Engine{
		Dist:   &rke2.Object{Client: r.Client, Key: types.NamespacedName{Namespace: m.Spec.ClusterRef.Namespace, Name: m.Spec.ClusterRef.Name}},
		Checks: &checks.Checker{Client: down, Namespace: ns, Selector: r.Selector, KCMIdentity: r.KCMIdentity},
		Store:  &statusStore{client: r.Client, obj: m}, PollInterval: r.PollInterval, StepTimeout: r.StepTimeout,
		OnAction: r.OnAction, Report: func(step migrationv1alpha1.StepStatus) {
			r.recordStep(m, step)
			if r.OnTransition != nil {
				r.OnTransition(step)
			}
		},
	}
	if m.Annotations[RollbackAnnotation] == "true" && m.Status.Phase != migrationv1alpha1.PhaseRolledBack {
		log.Info("Rolling back migration")
		if err := eng.Rollback(ctx); err != nil {
			return ctrl.Result{}, fmt.Errorf("roll back: %w", err)
		}
		r.event(m, corev1.EventTypeNormal, "RolledBack", "Rolled back to the in-tree AWS cloud provider")
		return ctrl.Result{}, nil
	}
	finishedBefore := m.Status.Phase == migrationv1alpha1.PhaseSucceeded
	for range maxTransitions {
		if err := ctx.Err(); err != nil {
			return ctrl.Result{}, err // stopping: leave the next transition to the next controller
		}
		pr, err := eng.Advance(ctx)
		var fe *migration.FailedError
		switch {
		case errors.As(err, &fe):
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

func (r *Reconciler) kubeconfig(ctx context.Context, m *migrationv1alpha1.CloudProviderMigration) ([]byte, error) {
	ref := m.Spec.KubeconfigSecretRef
	key := ref.Key
	if key == "" {
		key = "value"
	}
	s := &corev1.Secret{}
	// Uncached: a cached Get would make the manager list and watch every Secret in the cluster.
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: ref.Name}, s); err != nil {
		return nil, fmt.Errorf("get kubeconfig Secret %s/%s: %w", m.Namespace, ref.Name, err)
	}
	if len(s.Data[key]) == 0 {
		return nil, fmt.Errorf("kubeconfig Secret %s/%s has no key %q", m.Namespace, ref.Name, key)
	}
	return s.Data[key], nil
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
	r.event(m, typ, "Step"+string(s.Phase), note)
}

func (r *Reconciler) event(m *migrationv1alpha1.CloudProviderMigration, typ, reason, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(m, nil, typ, reason, "Migrate", "%s", note)
	}
}

// terminal records a configuration problem the user must fix; retrying cannot help.
func (r *Reconciler) terminal(ctx context.Context, m *migrationv1alpha1.CloudProviderMigration, reason, msg string) error {
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: migration.ConditionFailed, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: m.Generation})
	m.Status.Phase = migrationv1alpha1.PhaseFailed
	if err := r.Client.Status().Update(ctx, m); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("update status: %w", err)
	}
	return reconcile.TerminalError(errors.New(msg))
}

// statusStore persists the engine state in the object's status; each Save is a status update,
// so a restarted controller resumes from it.
type statusStore struct {
	client client.Client
	obj    *migrationv1alpha1.CloudProviderMigration
}

func (s *statusStore) Load(context.Context) (*migration.State, error) {
	return &migration.State{Spec: *s.obj.Spec.DeepCopy(), Status: *s.obj.Status.DeepCopy()}, nil
}

func (s *statusStore) Save(ctx context.Context, st *migration.State) error {
	s.obj.Status = *st.Status.DeepCopy()
	s.obj.Status.ObservedGeneration = s.obj.Generation
	if err := s.client.Status().Update(ctx, s.obj); err != nil {
		return fmt.Errorf("update CloudProviderMigration %s status: %w", client.ObjectKeyFromObject(s.obj), err)
	}
	return nil
}
