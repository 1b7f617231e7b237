// Package cluster reconciles fleet Clusters: it gives each its cluster namespace and, through a
// finalizer, deletes everything created for the cluster when it goes — the request identities
// first, so their tokens stop working at once.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/internal/kube"
	"github.com/droverhq/drover/internal/registration/names"
)

// Finalizer removes every object created for a Cluster.
const Finalizer = "fleet.drover.io/cluster-cleanup"

// Reconciler reconciles fleet Clusters.
type Reconciler struct {
	Client client.Client
	// MaxConcurrentReconciles defaults to 16.
	MaxConcurrentReconciles int
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		return errors.New("cluster reconciler: Client is required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("fleetcluster").
		For(&fleetv1alpha1.Cluster{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: orDefault(r.MaxConcurrentReconciles, 16)}).
		Complete(r)
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Reconcile ensures the cluster namespace, or cleans up a deleted Cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &fleetv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.delete(ctx, c)
	}
	before := c.DeepCopy()
	if controllerutil.AddFinalizer(c, Finalizer) {
		if err := r.Client.Patch(ctx, c, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		before = c.DeepCopy()
	}
	if c.Status.Namespace == "" && c.Annotations[RegisteringAnnotation] != "" {
		// The registration that created c creates its namespace and first status (one write
		// fewer per registration); this controller takes over if that has not happened in time.
		if age := time.Since(c.CreationTimestamp.Time); age < RegistrationGrace {
			return ctrl.Result{RequeueAfter: RegistrationGrace - age}, nil
		}
	}
	if ns := names.ClusterNamespace(c.Namespace, c.Name, string(c.UID)); c.Status.Namespace != ns || c.Generation != c.Status.ObservedGeneration {
		if err := kube.EnsureNamespace(ctx, r.Client, ns, Labels(c)); err != nil {
			return ctrl.Result{}, err
		}
	}
	SetStatus(c)
	return ctrl.Result{}, kube.PatchStatus(ctx, r.Client, c, before)
}

// RegisteringAnnotation marks a Cluster created by a ClusterRegistration's grant, which creates
// the cluster namespace and writes the first status itself. RegistrationGrace is how long the
// cluster controller leaves such a Cluster to it.
const (
	RegisteringAnnotation = "fleet.drover.io/registering"
	RegistrationGrace     = 30 * time.Second
)

// SetStatus sets c's namespace, observed generation and Ready condition (the namespace must
// exist).
func SetStatus(c *fleetv1alpha1.Cluster) {
	c.Status.Namespace = names.ClusterNamespace(c.Namespace, c.Name, string(c.UID))
	c.Status.ObservedGeneration = c.Generation
	if c.Status.Agent.LastSeen == nil {
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonWaitCheckIn, "Waiting for the agent to check in")
	} else {
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionReady, true, fleetv1alpha1.ReasonSucceeded, "Agent checked in")
	}
}

// AccessRules are the rules of c's names.ClusterAccessRole: patch c's status and get the named
// BundleContents. Without names there is no content rule: one without resourceNames would
// grant every BundleContent.
func AccessRules(c *fleetv1alpha1.Cluster, contents ...string) []rbacv1.PolicyRule {
	fleet := fleetv1alpha1.GroupVersion.Group
	rules := []rbacv1.PolicyRule{{APIGroups: []string{fleet}, Resources: []string{"clusters/status"}, ResourceNames: []string{c.Name}, Verbs: []string{"patch"}}}
	if len(contents) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{fleet}, Resources: []string{"bundlecontents"}, ResourceNames: contents, Verbs: []string{"get"}})
	}
	return rules
}

// Labels are the labels of every object created for c.
func Labels(c *fleetv1alpha1.Cluster) map[string]string {
	return map[string]string{
		fleetv1alpha1.ClusterLabel:          c.Name,
		fleetv1alpha1.ClusterUIDLabel:       string(c.UID),
		fleetv1alpha1.ClusterNamespaceLabel: c.Namespace,
	}
}

// delete removes every object created for c, request identities first.
func (r *Reconciler) delete(ctx context.Context, c *fleetv1alpha1.Cluster) error {
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	log.Info("Deleting everything created for the Cluster")
	ns := names.ClusterNamespace(c.Namespace, c.Name, string(c.UID))
	byUID := client.MatchingLabels{fleetv1alpha1.ClusterUIDLabel: string(c.UID)}

	// Deleting the ServiceAccounts invalidates their tokens immediately (tokens are bound to
	// the ServiceAccount's UID), whatever happens to the rest.
	if err := r.Client.DeleteAllOf(ctx, &corev1.ServiceAccount{}, client.InNamespace(ns), byUID); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete request service accounts: %w", err)
	}
	// Registrations for this cluster (their own finalizer removes their secret readers).
	var regs fleetv1alpha1.ClusterRegistrationList
	if err := r.Client.List(ctx, &regs, client.InNamespace(c.Namespace)); err != nil {
		return fmt.Errorf("list registrations: %w", err)
	}
	for i := range regs.Items {
		cr := &regs.Items[i]
		if cr.Status.ClusterName == c.Name || c.Spec.ClientID != "" && cr.Spec.ClientID == c.Spec.ClientID {
			if err := kube.Delete(ctx, r.Client, cr); err != nil {
				return err
			}
		}
	}
	for _, del := range []struct {
		obj client.Object
		ns  string
	}{
		{&corev1.Secret{}, fleetv1alpha1.SystemRegistrationNamespace},
		{&rbacv1.Role{}, fleetv1alpha1.SystemRegistrationNamespace},
		{&rbacv1.RoleBinding{}, fleetv1alpha1.SystemRegistrationNamespace},
		{&rbacv1.Role{}, c.Namespace},
		{&rbacv1.RoleBinding{}, c.Namespace},
		{&fleetv1alpha1.ClusterRegistrationToken{}, c.Namespace},
		{&rbacv1.Role{}, ns},
		{&rbacv1.RoleBinding{}, ns},
	} {
		if err := r.Client.DeleteAllOf(ctx, del.obj, client.InNamespace(del.ns), byUID); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete %T in %s: %w", del.obj, del.ns, err)
		}
	}
	if err := kube.Delete(ctx, r.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	before := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, Finalizer)
	if err := r.Client.Patch(ctx, c, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}
