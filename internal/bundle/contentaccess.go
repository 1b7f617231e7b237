package bundle

import (
	"context"
	"fmt"
	"slices"
	"sync"

	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	clusterctrl "github.com/droverhq/drover/internal/registration/cluster"
	"github.com/droverhq/drover/internal/registration/names"
)

// ContentAccessReconciler keeps, per Cluster, the rules of the Role names.ClusterAccessRole in
// the workspace namespace: the agent's status rule plus get on exactly the BundleContents the
// cluster's BundleDeployments reference. Registration creates and binds it.
type ContentAccessReconciler struct {
	Client client.Client

	mu      sync.Mutex
	applied map[client.ObjectKey]string // cluster → names last written, to skip no-op writes
}

// SetupWithManager registers the controller.
func (r *ContentAccessReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.applied = map[client.ObjectKey]string{}
	return ctrl.NewControllerManagedBy(mgr).
		Named("bundlecontentaccess").
		WithOptions(controller.Options{MaxConcurrentReconciles: 8}).
		Watches(&fleetv1alpha1.BundleDeployment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			l := o.GetLabels()
			if l[fleetv1alpha1.ClusterLabel] == "" || l[fleetv1alpha1.ClusterNamespaceLabel] == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: l[fleetv1alpha1.ClusterNamespaceLabel], Name: l[fleetv1alpha1.ClusterLabel]}}}
		})).
		Complete(r)
}

// Reconcile writes the cluster's access Role.
func (r *ContentAccessReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &fleetv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.Status.Namespace == "" || !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var bds fleetv1alpha1.BundleDeploymentList
	if err := r.Client.List(ctx, &bds, client.InNamespace(c.Status.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	var contents []string
	for _, bd := range bds.Items {
		if ref := bd.Spec.Content; ref != nil && ref.Namespace == c.Namespace && !slices.Contains(contents, ref.Name) {
			contents = append(contents, ref.Name)
		}
	}
	slices.Sort(contents)
	key := fmt.Sprint(c.UID, contents)
	r.mu.Lock()
	done := r.applied[req.NamespacedName] == key
	r.mu.Unlock()
	if done {
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
	if err := r.Client.Apply(ctx, role, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("apply cluster access role: %w", err)
	}
	r.mu.Lock()
	r.applied[req.NamespacedName] = key
	r.mu.Unlock()
	return ctrl.Result{}, nil
}
