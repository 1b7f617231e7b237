package deployer

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The secret a pod's spec and its program's last words hold: no message may show it.
const podSecret = "hunter2-s3cr3t"

// workloadObj is a live workload as the API server returns it: selector app=name, not
// available (0 of 1) unless available.
func workloadObj(kind, name string, available bool) *unstructured.Unstructured {
	n := int64(0)
	if available {
		n = 1
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": kind,
		"metadata": map[string]any{"namespace": "default", "name": name, "uid": "uid-" + name, "generation": int64(1)},
		"spec": map[string]any{"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}}},
	}}
	switch kind {
	case "DaemonSet":
		u.Object["status"] = map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(1),
			"updatedNumberScheduled": int64(1), "numberAvailable": n, "numberReady": n}
	default:
		u.Object["status"] = map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1),
			"readyReplicas": n, "availableReplicas": n}
		if available {
			u.Object["status"].(map[string]any)["conditions"] = []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}}
		}
	}
	return u
}

// podOf is a pod the workload's controller made (through a ReplicaSet for a Deployment), with
// an env value and an env from a Secret, in the state set gives it.
func podOf(kind, workload, name string, set func(*corev1.Pod)) *corev1.Pod {
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: workload, UID: types.UID("uid-" + workload), Controller: ptr.To(true)}
	if kind == "Deployment" {
		owner = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: workload + "-6d4f9", UID: "uid-rs", Controller: ptr.To(true)}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": workload}, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:nope",
			Env: []corev1.EnvVar{{Name: "DB_PASSWORD", Value: podSecret},
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-credentials"}, Key: "token"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	set(p)
	return p
}

func scheduled(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
}

func waiting(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		scheduled(p)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "nginx:nope",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	}
}

func unschedulable(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."}}
}

func crashLooping(restarts int32, last corev1.ContainerStateTerminated) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		scheduled(p)
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"})
		last.Message = "panic: cannot log in with DB_PASSWORD=" + podSecret
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: restarts,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 2m40s restarting failed container=app pod=x_default(0b7e)"}},
			LastTerminationState: corev1.ContainerState{Terminated: &last}}}
	}
}

func ready(p *corev1.Pod) {
	scheduled(p)
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

// TestLiveHealthSaysWhyPodsAreNotReady: a Deployment, StatefulSet or DaemonSet not available
// says why in the words kubectl shows for one of its pods (the most telling), read with at most
// one List and no Get; one line, bounded, never a Secret or env value.
func TestLiveHealthSaysWhyPodsAreNotReady(t *testing.T) {
	long := strings.Repeat("no space left on device ", 40)
	tests := []struct {
		name string
		u    *unstructured.Unstructured
		pods []*corev1.Pod
		// forbid refuses the List, as an agent without the right to list pods sees.
		forbid bool
		// want is the whole message; lists, how many Lists it may take.
		want  string
		lists int
	}{
		{"deployment unschedulable", workloadObj("Deployment", "unsched", false),
			[]*corev1.Pod{podOf("Deployment", "unsched", "unsched-6d4f9-abcde", unschedulable)},
			false, "0/1 replicas available; pod unsched-6d4f9-abcde: Unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. " +
				"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.", 1},
		{"deployment image pull back-off", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", waiting("ImagePullBackOff", `Back-off pulling image "nginx:nope"`))},
			false, `0/1 replicas available; pod web-6d4f9-abcde: ImagePullBackOff: Back-off pulling image "nginx:nope"`, 1},
		{"deployment image pull error", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", waiting("ErrImagePull", `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:nope": not found`))},
			false, `0/1 replicas available; pod web-6d4f9-abcde: ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:nope": not found`, 1},
		{"deployment missing secret", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", waiting("CreateContainerConfigError", `secret "db-credentials" not found`))},
			false, `0/1 replicas available; pod web-6d4f9-abcde: CreateContainerConfigError: secret "db-credentials" not found`, 1},
		{"deployment crash loop", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", crashLooping(5, corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}))},
			false, "0/1 replicas available; pod web-6d4f9-abcde: CrashLoopBackOff (restarted 5 times; last exit code 1)", 1},
		{"deployment out of memory", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", crashLooping(3, corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}))},
			false, "0/1 replicas available; pod web-6d4f9-abcde: CrashLoopBackOff (restarted 3 times; last exit: OOMKilled, code 137)", 1},
		{"the most telling of several pods", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{
				podOf("Deployment", "web", "web-6d4f9-aaaaa", ready),
				podOf("Deployment", "web", "web-6d4f9-bbbbb", waiting("ContainerCreating", "")),
				podOf("Deployment", "web", "web-6d4f9-ccccc", unschedulable),
				podOf("Deployment", "web", "web-6d4f9-ddddd", waiting("ImagePullBackOff", `Back-off pulling image "nginx:nope"`)),
			},
			false, `0/1 replicas available; pod web-6d4f9-ddddd: ImagePullBackOff: Back-off pulling image "nginx:nope"`, 1},
		{"a pod on its way", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", waiting("ContainerCreating", ""))},
			false, "0/1 replicas available; pod web-6d4f9-abcde: ContainerCreating", 1},
		{"pods another controller made are not the workload's", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{
				podOf("StatefulSet", "web", "web-0", waiting("ImagePullBackOff", `Back-off pulling image "nginx:nope"`)),
				podOf("Deployment", "web-canary", "web-canary-6d4f9-abcde", unschedulable),
			},
			false, "0/1 replicas available", 1},
		{"statefulset init container failing", workloadObj("StatefulSet", "db", false),
			[]*corev1.Pod{podOf("StatefulSet", "db", "db-0", func(p *corev1.Pod) {
				scheduled(p)
				p.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "db:1"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "migrate", RestartCount: 4,
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: podSecret}}}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
			})},
			false, "0/1 replicas ready; pod db-0: init container migrate: CrashLoopBackOff (restarted 4 times; last exit code 2)", 1},
		{"daemonset container of several not ready", workloadObj("DaemonSet", "agent", false),
			[]*corev1.Pod{podOf("DaemonSet", "agent", "agent-x7k2p", func(p *corev1.Pod) {
				scheduled(p)
				p.Status.Phase = corev1.PodRunning
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "proxy:1"})
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
					{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			})},
			false, "0/1 pods available; pod agent-x7k2p: container sidecar: not ready", 1},
		{"a message of several lines is one", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", waiting("RunContainerError", "failed to start:\n\texec: \"web\": not found\r\n"))},
			false, `0/1 replicas available; pod web-6d4f9-abcde: RunContainerError: failed to start: exec: "web": not found`, 1},
		{"a long message is cut", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", waiting("CreateContainerError", long))},
			false, "0/1 replicas available; " + ("pod web-6d4f9-abcde: CreateContainerError: " + long)[:maxPodReason-3] + "...", 1},
		{"no right to list pods", workloadObj("Deployment", "web", false),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", unschedulable)},
			true, "0/1 replicas available", 1},
		{"no pods", workloadObj("Deployment", "web", false), nil, false, "0/1 replicas available", 1},
		{"available: no List", workloadObj("Deployment", "web", true),
			[]*corev1.Pod{podOf("Deployment", "web", "web-6d4f9-abcde", ready)}, false, "", 0},
		{"not a workload: no List", obj("batch/v1", "Job", 1, nil, map[string]any{"active": int64(1)}), nil, false, "not complete", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var lists, gets atomic.Int32
			b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					lists.Add(1)
					if tc.forbid {
						return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
					}
					return c.List(ctx, list, opts...)
				},
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
					gets.Add(1)
					return c.Get(ctx, key, o, opts...)
				},
			})
			for _, p := range tc.pods {
				b = b.WithObjects(p)
			}
			r := &Reconciler{Downstream: b.Build()}
			ok, msg := r.liveHealth(t.Context(), tc.u)
			if ok != (tc.want == "") || msg != tc.want {
				t.Errorf("liveHealth = %v %q,\nwant %v %q", ok, msg, tc.want == "", tc.want)
			}
			if n := lists.Load(); int(n) != tc.lists || gets.Load() != 0 {
				t.Errorf("%d Lists and %d Gets, want %d and none", n, gets.Load(), tc.lists)
			}
			if strings.Contains(msg, podSecret) || strings.Contains(msg, "\n") || strings.Contains(msg, "back-off 2m40s") {
				t.Errorf("message %q shows a secret, a termination or back-off message, or more than a line", msg)
			}
		})
	}
}

// TestPodReasonReadsOnlyTheWorkloadsNamespaceBySelector: the one List is of the workload's
// namespace, by its selector (matchExpressions included), bounded.
func TestPodReasonReadsOnlyTheWorkloadsNamespaceBySelector(t *testing.T) {
	tests := []struct {
		name     string
		selector map[string]any
		want     string
	}{
		{"matchLabels", map[string]any{"matchLabels": map[string]any{"app": "web"}}, "app=web"},
		{"matchExpressions", map[string]any{"matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"api"}}}}, "tier in (api)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := workloadObj("Deployment", "web", false)
			u.Object["spec"].(map[string]any)["selector"] = tc.selector
			var got client.ListOptions
			c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithInterceptorFuncs(interceptor.Funcs{
				List: func(_ context.Context, _ client.WithWatch, _ client.ObjectList, opts ...client.ListOption) error {
					got.ApplyOptions(opts)
					return nil
				},
			}).Build()
			podReason(t.Context(), c, u)
			if got.Namespace != "default" || got.LabelSelector == nil || got.LabelSelector.String() != tc.want || got.Limit != podListLimit {
				t.Errorf("List in %q by %v, limit %d; want default by %s, limit %d", got.Namespace, got.LabelSelector, got.Limit, tc.want, podListLimit)
			}
		})
	}
}
