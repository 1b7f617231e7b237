// Package access keeps each registered cluster's workspace access Role, names.ClusterAccessRole:
// its agent's right to patch its Cluster's status and to get exactly the BundleContents its
// BundleDeployments reference (for a content slot, the slots its next version may use:
// content.Grants). Registration owns every Role of a cluster's identities; this is
// the one that follows the cluster's work (the clusterregistration controller creates it, with
// the status rule, before binding it at the grant).
package access

import (
	"context"
	"fmt"
	"slices"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle/content"
	clusterctrl "github.com/droverhq/drover/internal/registration/cluster"
	"github.com/droverhq/drover/internal/registration/internal/kube"
	"github.com/droverhq/drover/internal/registration/names"
)

// Reconciler keeps, per Cluster, the rules of the Role names.ClusterAccessRole in the workspace
// namespace: the agent's status rule plus get on exactly the BundleContents the cluster's
// BundleDeployments reference.
type Reconciler struct {
	Client client.Client

	mu      sync.Mutex
	applied map[client.ObjectKey]written // cluster → what was last written, to skip no-op writes
}

// written is what the last write of a cluster's Role wrote and the resourceVersion it produced.
// A Role whose resourceVersion has moved on since (edited by hand, deleted, recreated) is
// written again.
type written struct{ key, resourceVersion string }

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.applied = map[client.ObjectKey]written{}
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusteraccess").
		WithOptions(controller.Options{MaxConcurrentReconciles: 8}).
		Watches(&fleetv1alpha1.BundleDeployment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			l := o.GetLabels()
			if l[fleetv1alpha1.ClusterLabel] == "" || l[fleetv1alpha1.ClusterNamespaceLabel] == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: l[fleetv1alpha1.ClusterNamespaceLabel], Name: l[fleetv1alpha1.ClusterLabel]}}}
		})).
		// The Roles themselves, metadata only: a change by anyone else (resourceVersion) or a
		// deletion makes the Role written again.
		Watches(&rbacv1.Role{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			cluster := o.GetLabels()[fleetv1alpha1.ClusterLabel]
			if cluster == "" || o.GetName() != names.ClusterAccessRole(cluster) || o.GetLabels()[fleetv1alpha1.ClusterNamespaceLabel] != o.GetNamespace() {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: cluster}}}
		}), builder.OnlyMetadata).
		Complete(r)
}

// The per-Cluster Role letting its agent read its BundleContents and patch its status (rights
// the server holds itself).
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundledeployments;bundlecontents,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=get;list;watch;create;update;patch

// Reconcile writes the cluster's access Role.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &fleetv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			delete(r.applied, req.NamespacedName)
			r.mu.Unlock()
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.Status.Namespace == "" || !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var bds fleetv1alpha1.BundleDeploymentList
	// Read only: the cache's own objects, not copies of every BundleDeployment of the cluster on
	// each of their updates.
	if err := r.Client.List(ctx, &bds, client.InNamespace(c.Status.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	var contents []string
	for _, bd := range bds.Items {
		if ref := bd.Spec.Content; ref != nil && ref.Namespace == c.Namespace {
			// A content slot's sibling too: the next commit moves the cluster to it without a
			// write here.
			for _, n := range content.Grants(*ref) {
				if !slices.Contains(contents, n) {
					contents = append(contents, n)
				}
			}
		}
	}
	slices.Sort(contents)
	key := fmt.Sprint(c.UID, contents)
	current := &metav1.PartialObjectMetadata{}
	current.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("Role"))
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: names.ClusterAccessRole(c.Name)}, current); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("read cluster access role: %w", err)
	}
	r.mu.Lock()
	last := r.applied[req.NamespacedName]
	r.mu.Unlock()
	if current.ResourceVersion != "" && last == (written{key, current.ResourceVersion}) {
		return ctrl.Result{}, nil
	}
	labels := clusterctrl.Labels(c)
	labels[fleetv1alpha1.ManagedLabel] = "true"
	role := rbacv1ac.Role(names.ClusterAccessRole(c.Name), c.Namespace).WithLabels(labels)
	role.Rules = []rbacv1ac.PolicyRuleApplyConfiguration{}
	for _, rule := range clusterctrl.AccessRules(c, contents...) {
		role.WithRules(rbacv1ac.PolicyRule().WithAPIGroups(rule.APIGroups...).WithResources(rule.Resources...).
			WithResourceNames(rule.ResourceNames...).WithVerbs(rule.Verbs...))
	}
	if err := r.Client.Apply(ctx, role, client.FieldOwner(kube.FieldOwner), client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("apply cluster access role: %w", err)
	}
	r.mu.Lock()
	r.applied[req.NamespacedName] = written{key, ptr.Deref(role.ResourceVersion, "")}
	r.mu.Unlock()
	return ctrl.Result{}, nil
}
