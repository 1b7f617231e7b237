package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/deployer"
)

// notReadyBecause waits until the cluster's BundleDeployment name applied its deployment ID and
// is not ready (ResourcesNotReady) with a Ready message and a NotReady resource naming want.
func notReadyBecause(t *testing.T, cluster, name, want string) {
	t.Helper()
	waitBundleDeployment(t, cluster, name, 60*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionReady)
		if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || bd.Status.Ready || c == nil ||
			c.Reason != fleetv1alpha1.ReasonResourcesNotReady || !strings.Contains(c.Message, want) {
			return fmt.Errorf("want not ready because %q, have %+v", want, bd.Status)
		}
		for _, r := range bd.Status.Resources {
			if r.State == deployer.StateNotReady && r.Message != "" && strings.Contains(c.Message, r.Kind+" "+r.Namespace+"/"+r.Name+": "+r.Message) {
				return nil
			}
		}
		return fmt.Errorf("no resource NotReady as the Ready condition says (%q): %+v", c.Message, bd.Status.Resources)
	})
}

// TestCustomResourceReadiness: a custom resource (of a CRD in the same Bundle) whose operator
// reports Ready=False keeps its BundleDeployment and Bundle not ready, naming the resource, the
// reason and the message; Ready=True makes them ready (kstatus' rule for custom resources).
func TestCustomResourceReadiness(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := unique("cr-ready")
	group := name + ".test.drover.io"
	crd := testCRD(group, "Database", "Namespaced", true)
	db := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Database",
		"metadata": map[string]any{"name": "orders"}, "spec": map[string]any{"size": "1Gi"},
	}}
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: name, Resources: raw(t, crd, ns, db),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	createBundle(t, b)
	waitBundleDeployment(t, plainName, name, 60*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
			return fmt.Errorf("not applied: %+v", bd.Status)
		}
		return nil
	})
	// The operator reports on the database, as its controller would.
	setReady := func(status, reason, message string) {
		t.Helper()
		eventually(t, 10*time.Second, func() error {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(db.GroupVersionKind())
			if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "orders"}, live); err != nil {
				return err
			}
			cond := map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message,
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
			if err := unstructured.SetNestedSlice(live.Object, []any{cond}, "status", "conditions"); err != nil {
				return err
			}
			return plain.Client.Status().Update(ctx, live)
		})
	}

	t.Run("Ready=False: not ready, named", func(t *testing.T) {
		setReady("False", "VolumeNotBound", "waiting for a 1Gi volume")
		notReadyBecause(t, plainName, name, "Database "+name+"/orders: Ready=False (VolumeNotBound): waiting for a 1Gi volume")
		waitBundle(t, b, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
			if s := got.Status.Summary; s.NotReady != 1 || s.Ready != 0 || len(s.NonReadyClusters) != 1 || !strings.Contains(s.NonReadyClusters[0].Message, "VolumeNotBound") {
				return fmt.Errorf("bundle summary %+v", s)
			}
			return nil
		})
	})
	t.Run("Ready=True: ready", func(t *testing.T) {
		setReady("True", "Provisioned", "")
		waitBundleDeployment(t, plainName, name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
			if !bd.Status.Ready || !meta.IsStatusConditionTrue(bd.Status.Conditions, fleetv1alpha1.ConditionReady) {
				return fmt.Errorf("not ready: %+v", bd.Status)
			}
			return nil
		})
		waitBundle(t, b, 30*time.Second, bundleReadyOn1)
	})
}

// TestProgressDeadlineExceeded: a Deployment whose rollout the deployment controller gave up on
// (Progressing=False, ProgressDeadlineExceeded: its pod cannot be scheduled) is reported as
// failed with the controller's message, not as merely waiting for replicas.
func TestProgressDeadlineExceeded(t *testing.T) {
	t.Parallel()
	name := unique("stuck")
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), ProgressDeadlineSeconds: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web:1"}},
					NodeSelector: map[string]string{"drover.io/test-pool": "none"}}}}}
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: name, Resources: raw(t, ns, d),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: fullName}}}}
	createBundle(t, b)
	notReadyBecause(t, fullName, name, "Deployment "+name+"/web: progress deadline exceeded: ReplicaSet")
	bd, err := bundleDeployment(t, fullName, name)
	if err != nil {
		t.Fatal(err)
	}
	if msg := bd.Status.Resources[1].Message; !strings.Contains(msg, "has timed out progressing") {
		t.Errorf("resource message %q does not carry the controller's", msg)
	}
}
