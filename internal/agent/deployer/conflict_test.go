package deployer

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestApplyConflictSaysHowToTakeFieldsBack: after someone changed a field downstream (kubectl
// patch), applying a new version that sets it fails with the API server's field manager
// conflict, and the message says what to do: correctDrift (--correct-drift) or
// forceConflicts (--force-conflicts).
func TestApplyConflictSaysHowToTakeFieldsBack(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	manifest := func(color string) []runtime.RawExtension {
		return []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"` + color + `"}}`)}}
	}
	bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "s-blue:a", Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: ns},
			Manifests: manifest("blue")}}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Upstream: env.Client, Downstream: env.Client, DownstreamConfig: env.Config, RecordNamespace: ns, DriftInterval: defaultDriftPeriod}
	key := types.NamespacedName{Namespace: ns, Name: bd.Name}
	reconcile := func() *metav1.Condition {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, key, bd); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
	}
	if c := reconcile(); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("first version not applied: %+v", c)
	}
	// Drift: kubectl patch takes the field over.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	if err := env.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"color":"red"}}`)), client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(bd.DeepCopy())
	bd.Spec.DeploymentID, bd.Spec.Manifests = "s-green:a", manifest("green")
	if err := env.Client.Patch(ctx, bd, patch); err != nil {
		t.Fatal(err)
	}
	c := reconcile()
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonApplyFailed {
		t.Fatalf("Applied %+v, want False/%s", c, fleetv1alpha1.ReasonApplyFailed)
	}
	hint := "another field manager changed these fields on the cluster: set correctDrift (drover bundle apply --correct-drift) or forceConflicts (--force-conflicts) on the Bundle to take them back, or take them back once (drover bundle redeploy)"
	for _, want := range []string{"ConfigMap " + ns + "/settings: ", `conflict with "kubectl-patch"`, ".data.color; " + hint} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Applied message %q lacks %q", c.Message, want)
		}
	}
	if len(bd.Status.Resources) != 1 || !strings.HasSuffix(bd.Status.Resources[0].Message, hint) {
		t.Errorf("resource states %+v, want the ConfigMap's message to end with the hint", bd.Status.Resources)
	}

	// Not a conflict: no hint.
	patch = client.MergeFrom(bd.DeepCopy())
	bd.Spec.DeploymentID, bd.Spec.Manifests = "s-bad:a", []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Not_A_Name"}}`)}}
	if err := env.Client.Patch(ctx, bd, patch); err != nil {
		t.Fatal(err)
	}
	if c := reconcile(); c == nil || c.Status != metav1.ConditionFalse || strings.Contains(c.Message, "correctDrift") {
		t.Errorf("Applied %+v: want False without the conflict hint", c)
	}
}
