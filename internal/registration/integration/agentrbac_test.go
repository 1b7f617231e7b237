package integration

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
)

// TestNamespacedAgentRights applies the agent installation in namespaced mode downstream and
// acts as the agent's ServiceAccount: it may apply namespaced resources in the listed namespace
// and keep its own objects in its namespace, and nothing else.
func TestNamespacedAgentRights(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	agentNS, apps, other := downstream.Namespace(t), downstream.Namespace(t), downstream.Namespace(t)
	objs, err := manifests.Objects(manifests.Options{Namespace: agentNS, ClientID: "x", RBAC: manifests.RBAC{Namespaces: []string{apps}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" || u.GetKind() == "Deployment" {
			continue
		}
		if err := downstream.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test")); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for _, u := range objs {
			if u.GetNamespace() == "" && u.GetKind() != "Namespace" {
				_ = downstream.Client.Delete(t.Context(), u)
			}
		}
	})
	cfg, err := downstream.ServiceAccountConfig(ctx, agentNS, manifests.Name)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := client.New(cfg, client.Options{Scheme: register.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cm := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"}}
	}
	checks := []struct {
		name    string
		allowed bool
		err     error
	}{
		{"create a ConfigMap in a listed namespace", true, ag.Create(ctx, cm(apps))},
		{"create a ConfigMap in its own namespace", true, ag.Create(ctx, cm(agentNS))},
		{"create a Lease in its own namespace", true, ag.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: "probe"}})},
		{"get the kube-system namespace", true, ag.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, &corev1.Namespace{})},
		{"create a ConfigMap in another namespace", false, ag.Create(ctx, cm(other))},
		{"list Secrets in another namespace", false, ag.List(ctx, &corev1.SecretList{}, client.InNamespace(other))},
		{"create a ClusterRole", false, ag.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}})},
		{"get another namespace", false, ag.Get(ctx, client.ObjectKey{Name: other}, &corev1.Namespace{})},
	}
	for _, c := range checks {
		check(t, "namespaced agent: "+c.name, c.allowed, c.err)
	}
}
