package e2e

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/test/envtest"
)

// TestFullClusterRunsWorkloadsAndDeletesNamespaces proves the "full" harness cluster: kwok makes a
// fake node Ready, the Deployment controller and scheduler put pods on it, and namespace deletion
// (which needs kube-controller-manager) completes.
func TestFullClusterRunsWorkloadsAndDeletesNamespaces(t *testing.T) {
	t.Parallel()
	full, err := envtest.StartFull("full", envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = full.Stop() })
	ctx := t.Context()
	c := full.Client

	if err := c.Create(ctx, envtest.FakeNode("node-1", map[string]string{"node-role.kubernetes.io/control-plane": "true"})); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "node-1"}, n); err != nil {
			return err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node-1 not Ready: %v; kwok's log ends:\n%s", n.Status.Conditions, full.ControlPlane().LogTail("kwok", 10))
	})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "workload"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:  []corev1.Container{{Name: "web", Image: "example.invalid/web:1"}},
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				},
			},
		},
	}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		got := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), got); err != nil {
			return err
		}
		if got.Status.ReadyReplicas != 2 {
			return fmt.Errorf("ready replicas %d, want 2", got.Status.ReadyReplicas)
		}
		return nil
	})

	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace still there: %w", err)
	})
}
