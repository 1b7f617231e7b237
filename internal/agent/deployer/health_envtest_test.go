package deployer

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLiveHealthListsPodsOnTheAPIServer: the pods of a not-ready Deployment are found on a real
// API server (by the Deployment's selector, in its namespace, the pods of another workload with
// the same labels left out) and the reason of the one that cannot be scheduled is in the
// message. The API server runs no controllers and no scheduler: the test writes the statuses
// the deployment controller and the scheduler would (a nodeSelector no node matches).
func TestLiveHealthListsPodsOnTheAPIServer(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	labels := map[string]string{"app": "unsched"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unsched"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"disk": "none"}, Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}}}
	if err := env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, UnavailableReplicas: 1}
	if err := env.Client.Status().Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	const why = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
	pod := func(name, ownerKind, owner string, cond corev1.PodCondition) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: owner, UID: "0b7e4a1c-1111-4d2e-9c3b-000000000001", Controller: ptr.To(true)}}},
			Spec: dep.Spec.Template.Spec}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{cond}}
		if err := env.Client.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	pod("unsched-6d4f9-abcde", "ReplicaSet", "unsched-6d4f9", corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: why, LastTransitionTime: metav1.Now()})
	// Same labels, another controller: not the Deployment's, although it says more.
	pod("unsched-0", "StatefulSet", "unsched", corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "SchedulerError", Message: "not this one", LastTransitionTime: metav1.Now()})

	tests := []struct {
		name string
		r    *Reconciler
		want string
	}{
		{"pods listed", &Reconciler{Downstream: env.Client}, "0/1 replicas available; pod unsched-6d4f9-abcde: Unschedulable: " + why},
		{"no downstream client", &Reconciler{}, "0/1 replicas available"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), live); err != nil {
				t.Fatal(err)
			}
			if ok, msg := tc.r.liveHealth(ctx, live); ok || msg != tc.want {
				t.Errorf("liveHealth = %v %q,\nwant false %q", ok, msg, tc.want)
			}
		})
	}
}
