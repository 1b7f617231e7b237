package agentmgmt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/metrics"
)

// TestResources checks the agent Bundle's contract, property by property, rather than
// rebuilding it: it never carries the bootstrap credential or the agent's ConfigMap (the
// importer owns them), its pod template is the importer's own (so adopting an unchanged agent
// restarts nothing: TestAgentManagement in internal/bundle/integration shows it on a real
// cluster), the Cluster's settings reach the pod, and it never widens the RBAC an
// agent-initiated cluster was installed with.
func TestResources(t *testing.T) {
	narrow := &fleetv1alpha1.AgentRBAC{
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
		Namespaces: []string{"team-a", "team-b"},
	}
	tests := []struct {
		name string
		spec fleetv1alpha1.ClusterSpec
		// wantRBAC: the kinds of RBAC objects the Bundle carries (nil: none).
		wantRBAC []string
		// wide: the agent's ClusterRole allows every verb on every resource (in namespaced
		// mode a second ClusterRole only reads kube-system's Namespace).
		wide bool
	}{
		{name: "manager-initiated, defaults", spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc"},
			wantRBAC: []string{"ClusterRole", "ClusterRoleBinding"}, wide: true},
		{name: "manager-initiated, settings", spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc", AgentNamespace: "agents",
			AgentImage: "example.com/drover:1", AgentEnv: []corev1.EnvVar{{Name: "A", Value: "1"}},
			AgentTolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			AgentResources:   &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
			wantRBAC: []string{"ClusterRole", "ClusterRoleBinding"}, wide: true},
		{name: "manager-initiated, namespaced agentRBAC", spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc", AgentRBAC: narrow},
			wantRBAC: []string{"ClusterRole", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "RoleBinding", "RoleBinding"}},
		{name: "agent-initiated keeps its installed RBAC", spec: fleetv1alpha1.ClusterSpec{}},
		{name: "agent-initiated with agentRBAC", spec: fleetv1alpha1.ClusterSpec{AgentRBAC: narrow},
			wantRBAC: []string{"ClusterRole", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "RoleBinding", "RoleBinding"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fleetv1alpha1.Cluster{Spec: tt.spec}
			raws, err := Resources(c, "registry.example/drover:v9")
			if err != nil {
				t.Fatal(err)
			}
			objs := decode(t, raws)
			var rbacKinds []string
			var dep *appsv1.Deployment
			for _, u := range objs {
				switch k := u.GetKind(); k {
				case "Secret", "ConfigMap":
					t.Errorf("the Bundle carries %s %s: the importer owns it", k, u.GetName())
				case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
					rbacKinds = append(rbacKinds, k)
					if k == "ClusterRole" && u.GetName() == "drover-agent-"+AgentNamespace(c) {
						rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
						b, _ := json.Marshal(rules)
						isWide := string(b) == `[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]`
						if isWide != tt.wide {
							t.Errorf("ClusterRole rules %s, want every resource: %v", b, tt.wide)
						}
					}
				case "Deployment":
					dep = &appsv1.Deployment{}
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
						t.Fatal(err)
					}
				}
			}
			slices.Sort(rbacKinds)
			if !slices.Equal(rbacKinds, tt.wantRBAC) {
				t.Errorf("RBAC objects %v, want %v", rbacKinds, tt.wantRBAC)
			}
			if dep == nil {
				t.Fatal("no Deployment")
			}
			if len(dep.Spec.Template.Annotations) != 0 {
				t.Errorf("pod template annotations %v: the config hash belongs to the importer (it would restart the agent)", dep.Spec.Template.Annotations)
			}
			// The importer's pod spec for the same Cluster, bootstrap secret and all.
			o := manifests.ForCluster(c)
			o.Namespace, o.Bootstrap, o.ConfigHash = AgentNamespace(c), map[string][]byte{"token": []byte("x")}, "h"
			if o.Image == "" {
				o.Image = "registry.example/drover:v9"
			}
			imported, err := manifests.Objects(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range imported {
				if u.GetKind() != "Deployment" {
					continue
				}
				want := &appsv1.Deployment{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, want); err != nil {
					t.Fatal(err)
				}
				if !equality.Semantic.DeepEqual(dep.Spec.Template.Spec, want.Spec.Template.Spec) {
					t.Errorf("pod spec differs from the importer's:\n%+v\n%+v", dep.Spec.Template.Spec, want.Spec.Template.Spec)
				}
			}
			ctr := dep.Spec.Template.Spec.Containers[0]
			wantImage := tt.spec.AgentImage
			if wantImage == "" {
				wantImage = "registry.example/drover:v9"
			}
			if ctr.Image != wantImage {
				t.Errorf("image %s, want %s", ctr.Image, wantImage)
			}
			if dep.Namespace != AgentNamespace(c) {
				t.Errorf("namespace %s, want %s", dep.Namespace, AgentNamespace(c))
			}
			if len(tt.spec.AgentTolerations) > 0 && !equality.Semantic.DeepEqual(dep.Spec.Template.Spec.Tolerations, tt.spec.AgentTolerations) {
				t.Errorf("tolerations %v", dep.Spec.Template.Spec.Tolerations)
			}
			for _, e := range tt.spec.AgentEnv {
				if !slices.Contains(ctr.Env, e) {
					t.Errorf("env %v lacks %v", ctr.Env, e)
				}
			}
			if r := tt.spec.AgentResources; r != nil && !equality.Semantic.DeepEqual(ctr.Resources.Requests, r.Requests) {
				t.Errorf("resources %v", ctr.Resources)
			}
		})
	}
}

func decode(t *testing.T, raws []runtime.RawExtension) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, r := range raws {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(r.Raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// TestRolloutBudget: with MaxUnavailable 1, an agent upgrade waits while another agent Bundle
// is not ready (or was just upgraded and the bundle controller has not reported on it yet), and
// goes ahead once it is; a paused agent Bundle neither counts nor holds the rollout.
func TestRolloutBudget(t *testing.T) {
	ctx := t.Context()
	scheme := runtime.NewScheme()
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, name := range []string{"a", "b", "c"} {
		c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: name, UID: types.UID("uid-" + name)},
			Spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc"}}
		c.Status.Namespace = "cluster-" + name
		objs = append(objs, c)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&fleetv1alpha1.Bundle{}, &fleetv1alpha1.Cluster{}).Build()
	reconcile := func(r *Reconciler, name string) ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ws", Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	bundleOf := func(name string) *fleetv1alpha1.Bundle {
		t.Helper()
		b := &fleetv1alpha1.Bundle{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "ws", Name: BundleName(name)}, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	setReady := func(name string, ready bool) {
		t.Helper()
		b := bundleOf(name)
		status := metav1.ConditionTrue
		if !ready {
			status = metav1.ConditionFalse
		}
		b.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ConditionReady, Status: status, Reason: "Test", ObservedGeneration: b.Generation,
			LastTransitionTime: metav1.Now()}}
		if err := cl.Status().Update(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	image := func(name string) string {
		t.Helper()
		for _, o := range decode(t, bundleOf(name).Spec.Resources) {
			if o.GetKind() == "Deployment" {
				d := &appsv1.Deployment{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
					t.Fatal(err)
				}
				return d.Spec.Template.Spec.Containers[0].Image
			}
		}
		t.Fatalf("no Deployment in %s's agent Bundle", name)
		return ""
	}

	v1 := &Reconciler{Client: cl, AgentImage: "registry.example/drover:v1", MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	for _, name := range []string{"a", "b", "c"} {
		reconcile(v1, name) // creates are not upgrades: never held
		setReady(name, true)
	}
	rec := events.NewFakeRecorder(10)
	v2 := &Reconciler{Client: cl, AgentImage: "registry.example/drover:v2", MaxUnavailable: ptr.To(intstr.FromInt32(1)), Recorder: rec}

	setReady("a", false)
	for range 2 {
		if res := reconcile(v2, "b"); res.RequeueAfter != budgetRetry || image("b") != v1.AgentImage {
			t.Fatalf("with a not ready: result %+v, b runs %s; want b held at v1", res, image("b"))
		}
	}
	// The cluster is told why, once for this upgrade however often it is retried, and counted.
	if got := testutil.ToFloat64(metrics.AgentUpgradesWaiting); got != 1 {
		t.Errorf("drover_agent_upgrades_waiting %v with b held, want 1", got)
	}
	if n := len(rec.Events); n != 1 {
		t.Fatalf("%d Events for b's held upgrade, want 1", n)
	}
	if ev := <-rec.Events; !strings.Contains(ev, fleetv1alpha1.EventAgentUpgradeWaiting) || !strings.Contains(ev, "--agent-rollout-max-unavailable allows 1") {
		t.Errorf("Event %q, want AgentUpgradeWaiting naming the budget", ev)
	}
	// A count serves the held upgrades for budgetMemo: a changes nothing until it is up.
	setReady("a", true)
	if res := reconcile(v2, "b"); res.RequeueAfter != budgetRetry || image("b") != v1.AgentImage {
		t.Fatalf("within budgetMemo of the count: result %+v, b runs %s; want b still held", res, image("b"))
	}
	later := func() { v2.counted.at = time.Now().Add(-budgetMemo) }
	later()
	if reconcile(v2, "b"); image("b") != v2.AgentImage {
		t.Fatalf("with every agent ready b runs %s, want v2", image("b"))
	}
	if got := testutil.ToFloat64(metrics.AgentUpgradesWaiting); got != 0 {
		t.Errorf("drover_agent_upgrades_waiting %v once b is upgraded, want 0", got)
	}
	// b's upgrade is in flight, in the reused count and, once counted again, as written but
	// without a status for it yet: c waits either way.
	for _, recount := range []bool{false, true} {
		if recount {
			later()
		}
		if res := reconcile(v2, "c"); res.RequeueAfter != budgetRetry || image("c") != v1.AgentImage {
			t.Fatalf("during b's upgrade (recounted %v): result %+v, c runs %s; want c held", recount, res, image("c"))
		}
	}
	setReady("b", true)
	later()
	// A paused agent Bundle (an operator's canary hold) neither counts nor holds.
	a := bundleOf("a")
	a.Spec.Rollout.Paused = true
	if err := cl.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	setReady("a", false)
	if reconcile(v2, "c"); image("c") != v2.AgentImage {
		t.Fatalf("after b is ready c runs %s, want v2", image("c"))
	}
}

// BenchmarkRolloutBudget measures what a held agent upgrade costs at 1,000 clusters: one count
// of the fleet's agent Bundles (count), and a held Reconcile that reuses a recent count (held),
// which is what all but one of the fleet's waiting clusters do every budgetRetry.
func BenchmarkRolloutBudget(b *testing.B) {
	const n = 1000
	scheme := runtime.NewScheme()
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	var objs []client.Object
	for i := range n {
		name := fmt.Sprintf("c%04d", i)
		c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: name}, Spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc"}}
		c.Status.Namespace = "cluster-" + name
		objs = append(objs, c)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&fleetv1alpha1.Bundle{}).Build()
	ctx := b.Context()
	v1 := &Reconciler{Client: cl, AgentImage: "registry.example/drover:v1"}
	for i := range n {
		if _, err := v1.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ws", Name: fmt.Sprintf("c%04d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	// Every agent Bundle is not ready (no status): every upgrade is held.
	v2 := &Reconciler{Client: cl, AgentImage: "registry.example/drover:v2", MaxUnavailable: ptr.To(intstr.FromString("10%"))}
	b.Run("count", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := v2.count(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("held", func(b *testing.B) {
		req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ws", Name: "c0001"}}
		for b.Loop() {
			if res, err := v2.Reconcile(ctx, req); err != nil || res.RequeueAfter != budgetRetry {
				b.Fatalf("%+v %v: want held", res, err)
			}
		}
	})
}
