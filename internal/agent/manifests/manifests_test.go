package manifests

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func rbacOf(t *testing.T, o Options) (roles []rbacv1.ClusterRole, clusterBindings, bindings int) {
	t.Helper()
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
				t.Fatal(err)
			}
			roles = append(roles, r)
		case "ClusterRoleBinding":
			clusterBindings++
		case "RoleBinding":
			bindings++
		}
	}
	return roles, clusterBindings, bindings
}

func TestDefaultRBACHasNoNonResourceURLs(t *testing.T) {
	roles, crbs, rbs := rbacOf(t, Options{})
	if len(roles) != 1 || crbs != 1 || rbs != 0 {
		t.Fatalf("%d ClusterRoles, %d ClusterRoleBindings, %d RoleBindings; want 1, 1, 0", len(roles), crbs, rbs)
	}
	for _, rule := range roles[0].Rules {
		if len(rule.NonResourceURLs) > 0 {
			t.Errorf("default ClusterRole grants nonResourceURLs %v", rule.NonResourceURLs)
		}
	}
	if len(roles[0].Rules) != 1 || roles[0].Rules[0].Resources[0] != "*" {
		t.Errorf("default rules %+v, want every resource", roles[0].Rules)
	}
}

func TestNamespacedRBAC(t *testing.T) {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}}
	roles, crbs, rbs := rbacOf(t, Options{Namespace: "agent", RBAC: RBAC{Rules: rules, Namespaces: []string{"apps", "web"}}})
	// The rules' ClusterRole is bound per namespace; cluster-wide only the kube-system reader.
	if crbs != 1 || rbs != 3 {
		t.Fatalf("%d ClusterRoleBindings, %d RoleBindings; want 1 (identity), 3 (2 namespaces + own)", crbs, rbs)
	}
	for _, r := range roles {
		if r.Name == "drover-agent-agent" && (len(r.Rules) != 1 || r.Rules[0].Resources[0] != "configmaps") {
			t.Errorf("rules ClusterRole %+v, want the given rules", r.Rules)
		}
		if r.Name == "drover-agent-agent-identity" && (len(r.Rules) != 1 || r.Rules[0].ResourceNames[0] != "kube-system") {
			t.Errorf("identity ClusterRole %+v, want get kube-system only", r.Rules)
		}
	}
}

// TestConfigMapLabels: the agent ConfigMap's cluster labels are a JSON object, {} without labels
// (not null, which reads as a mistake to whoever inspects it).
func TestConfigMapLabels(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{{nil, "{}"}, {map[string]string{"env": "prod"}, `{"env":"prod"}`}} {
		objs, err := Objects(Options{Labels: tc.labels})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, u := range objs {
			if u.GetKind() == "ConfigMap" && u.GetName() == ConfigMap {
				found = true
				if got, _, _ := unstructured.NestedString(u.Object, "data", KeyLabels); got != tc.want {
					t.Errorf("labels %v: ConfigMap %s = %q, want %q", tc.labels, KeyLabels, got, tc.want)
				}
			}
		}
		if !found {
			t.Fatal("no agent ConfigMap")
		}
	}
}
