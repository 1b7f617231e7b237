// Package deployer applies the BundleDeployments of the agent's cluster namespace to its own
// cluster with server-side apply, prunes what a new deployment ID dropped, and reports status.
package deployer

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// FieldManager is the agent's server-side apply field manager downstream.
const FieldManager = "drover-agent"

// Reconciler applies BundleDeployments.
type Reconciler struct {
	// Upstream reads BundleDeployments and writes their status (request identity).
	Upstream client.Client
	// Downstream applies the manifests to the agent's cluster.
	Downstream client.Client
}

// SetupWithManager registers the controller on the agent's upstream manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Upstream == nil || r.Downstream == nil {
		return errors.New("deployer: Upstream and Downstream are required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("bundledeployment").
		For(&fleetv1alpha1.BundleDeployment{}).
		// Several agents may run in one process (tests, benchmarks).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

type key struct{ apiVersion, kind, namespace, name string }

// Reconcile applies one BundleDeployment if its deployment ID is not applied yet.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bd := &fleetv1alpha1.BundleDeployment{}
	if err := r.Upstream.Get(ctx, req.NamespacedName, bd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if bd.Status.AppliedDeploymentID == bd.Spec.DeploymentID && meta.IsStatusConditionTrue(bd.Status.Conditions, fleetv1alpha1.ConditionApplied) {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("deploymentID", bd.Spec.DeploymentID)
	log.Info("Applying BundleDeployment")
	before := bd.DeepCopy()

	var states []fleetv1alpha1.ResourceState
	want := map[key]bool{}
	var failed error
	for i, raw := range bd.Spec.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			failed = errors.Join(failed, fmt.Errorf("manifest %d: %w", i, err))
			continue
		}
		st, err := r.apply(ctx, bd, u)
		if err != nil {
			failed = errors.Join(failed, err)
		}
		states = append(states, st)
		want[key{st.APIVersion, st.Kind, st.Namespace, st.Name}] = true
	}
	// Prune what the previously applied deployment had and this one dropped. The inventory is
	// the status the agent wrote, so only objects the agent applied are ever deleted.
	if failed == nil && bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
		for _, old := range bd.Status.Resources {
			if want[key{old.APIVersion, old.Kind, old.Namespace, old.Name}] || old.State != "Applied" {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(old.APIVersion)
			u.SetKind(old.Kind)
			u.SetNamespace(old.Namespace)
			u.SetName(old.Name)
			log.Info("Pruning resource dropped by the new deployment", "kind", old.Kind, "namespace", old.Namespace, "name", old.Name)
			if err := r.Downstream.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
				failed = errors.Join(failed, fmt.Errorf("prune %s %s/%s: %w", old.Kind, old.Namespace, old.Name, err))
			}
		}
	}

	bd.Status.Resources = states
	if failed != nil {
		bd.Status.Ready = false
		setCond(bd, fleetv1alpha1.ConditionApplied, false, fleetv1alpha1.ReasonApplyFailed, failed.Error())
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonApplyFailed, "Not every resource was applied")
		if err := r.Upstream.Status().Patch(ctx, bd, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("patch status: %w", err)
		}
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	bd.Status.AppliedDeploymentID, bd.Status.Ready, bd.Status.NonModified = bd.Spec.DeploymentID, true, true
	setCond(bd, fleetv1alpha1.ConditionApplied, true, fleetv1alpha1.ReasonSucceeded, fmt.Sprintf("Applied %d resources", len(states)))
	setCond(bd, fleetv1alpha1.ConditionReady, true, fleetv1alpha1.ReasonSucceeded, "All resources exist")
	if err := r.Upstream.Status().Patch(ctx, bd, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch status: %w", err)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) apply(ctx context.Context, bd *fleetv1alpha1.BundleDeployment, u *unstructured.Unstructured) (fleetv1alpha1.ResourceState, error) {
	st := fleetv1alpha1.ResourceState{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), State: "Applied"}
	fail := func(err error) (fleetv1alpha1.ResourceState, error) {
		st.State, st.Message = "Failed", err.Error()
		return st, fmt.Errorf("%s %s/%s: %w", st.Kind, st.Namespace, st.Name, err)
	}
	namespaced, err := r.Downstream.IsObjectNamespaced(u)
	if err != nil {
		return fail(err)
	}
	if namespaced && u.GetNamespace() == "" {
		ns := bd.Spec.Options.DefaultNamespace
		if ns == "" {
			ns = "default"
		}
		u.SetNamespace(ns)
	}
	st.Namespace = u.GetNamespace()
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["fleet.drover.io/bundle-deployment"] = bd.Namespace + "/" + bd.Name
	ann["fleet.drover.io/deployment-id"] = bd.Spec.DeploymentID
	u.SetAnnotations(ann)
	opts := []client.ApplyOption{client.FieldOwner(FieldManager)}
	if bd.Spec.Options.ForceConflicts {
		opts = append(opts, client.ForceOwnership)
	}
	if err := r.Downstream.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...); err != nil {
		return fail(err)
	}
	return st, nil
}

func setCond(bd *fleetv1alpha1.BundleDeployment, typ string, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: bd.Generation})
}
