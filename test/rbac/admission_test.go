package rbac

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/test/envtest"
)

// TestServerInstallsAdmissionPolicy: drover server creates the policy that keeps agents to their
// own status report (the suite removed the one its test cluster came with), with its own rights,
// and the cluster's type checker (kube-controller-manager) finds every expression fits drover's
// CRDs.
func TestServerInstallsAdmissionPolicy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	policies, err := crds.LoadPolicies()
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 60*time.Second, func() error {
		for _, o := range policies.Objects() {
			got := o.DeepCopyObject().(client.Object)
			if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
				return fmt.Errorf("%s: %w", o.GetName(), err)
			}
			if !slices.ContainsFunc(got.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool { return f.Manager == "drover" }) {
				return fmt.Errorf("%s not applied by drover server: %v", o.GetName(), got.GetManagedFields())
			}
		}
		for _, p := range policies.Policies {
			got := &admissionv1.ValidatingAdmissionPolicy{}
			if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			if got.Status.TypeChecking == nil || got.Status.ObservedGeneration != got.Generation {
				return errors.New("not type-checked yet")
			}
		}
		return nil
	})
	warnings, err := crds.TypeCheckWarnings(ctx, cluster.Client)
	if err != nil || len(warnings) > 0 {
		t.Errorf("type-check warnings on drover's admission policies: %v %v", warnings, err)
	}
}

// TestServerTokensOnlyForItsIdentities: the server's identity holds serviceaccounts/token create
// in every namespace (its identities live in namespaces made at run time), and
// config/rbac/server_limits.yaml keeps that right to drover's own identities. Without it the
// server's identity could take a token of any ServiceAccount (kube-system's controllers, able
// to grant themselves anything). The suite's flows (registration, renewal, import tokens) run
// with the policy in place, so it refuses nothing drover does.
func TestServerTokensOnlyForItsIdentities(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	server, err := kubernetes.NewForConfig(serverConfig)
	if err != nil {
		t.Fatal(err)
	}
	other := cluster.Namespace(t)
	clusterNS := "cluster-" + other
	for _, ns := range []string{clusterNS, "drover-local"} {
		if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// An admission policy takes effect once the API server has loaded it.
	secs := int64(600)
	envtest.Eventually(t, 30*time.Second, func() error {
		_, err := server.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "clusterrole-aggregation-controller",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("token for kube-system/clusterrole-aggregation-controller: %w, want Forbidden", err)
		}
		return nil
	})
	sa := func(ns, name string) {
		t.Helper()
		if err := cluster.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		ns, name string
		allowed  bool
	}{
		{"kube-system", "clusterrole-aggregation-controller", false},
		{other, "default", false},
		{other, "admin-bot", false},
		{clusterNS, "admin-bot", false},
		{"drover-local", "default", false},
		{other, "import-edge-0123abcd", true},
		{clusterNS, "request-x7k2p", true},
		{clusterNS, "renew-x7k2p", true},
		{clusterNS, "drover-renewal", true},
		{"drover-local", "drover-local-agent", true},
	} {
		t.Run(tc.ns+"/"+tc.name, func(t *testing.T) {
			sa(tc.ns, tc.name)
			_, err := server.CoreV1().ServiceAccounts(tc.ns).CreateToken(ctx, tc.name,
				&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
			switch {
			case tc.allowed && err != nil:
				t.Errorf("token for drover's identity %s/%s refused: %v", tc.ns, tc.name, err)
			case !tc.allowed && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only for its own identities")):
				t.Errorf("token for %s/%s: %v, want Forbidden by drover-server-credentials", tc.ns, tc.name, err)
			}
		})
	}
	// A ServiceAccount token Secret is a token of the account it names, filled in by Kubernetes.
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "drover-test-sa-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "clusterrole-aggregation-controller"}}, Type: corev1.SecretTypeServiceAccountToken}
	if _, err := server.CoreV1().Secrets("kube-system").Create(ctx, s, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "token Secrets") {
		t.Errorf("service-account-token Secret by the server: %v, want Forbidden by drover-server-credentials", err)
	}
}

// TestAgentTokenLifetime: an agent's request identity may mint tokens for itself and its
// cluster's renewal identity (RBAC), but the admission policy drover installs bounds their
// lifetime (7 days, 90 days): a compromised downstream cluster cannot mint tokens that outlive
// the incident by years.
func TestAgentTokenLifetime(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := "cluster-" + cluster.Namespace(t)
	if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"request-x7k2p", "drover-renewal"} {
		if err := cluster.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	// The token right of the agent's Role (internal/registration/cluster AgentRole).
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""},
		Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{"request-x7k2p", "drover-renewal"}, Verbs: []string{"create"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "agent"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "request-x7k2p"}}}
	for _, o := range []client.Object{role, binding} {
		if err := cluster.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(3600)
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "request-x7k2p", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(cluster.Config)
	cfg.BearerToken = tr.Status.Token
	agent, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mint := func(sa string, d time.Duration) error {
		secs := int64(d / time.Second)
		_, err := agent.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		return err
	}
	day := 24 * time.Hour
	for _, tc := range []struct {
		sa      string
		ttl     time.Duration
		allowed bool
	}{
		{"request-x7k2p", day, true},
		{"request-x7k2p", 7 * day, true},
		{"request-x7k2p", 8 * day, false},
		{"request-x7k2p", 3650 * day, false},
		{"drover-renewal", 30 * day, true},
		{"drover-renewal", 90 * day, true},
		{"drover-renewal", 91 * day, false},
		{"drover-renewal", 3650 * day, false},
	} {
		t.Run(fmt.Sprintf("%s for %s", tc.sa, tc.ttl), func(t *testing.T) {
			if tc.allowed {
				if err := mint(tc.sa, tc.ttl); err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			// An admission policy takes effect once the API server has loaded it.
			envtest.Eventually(t, 30*time.Second, func() error {
				if err := mint(tc.sa, tc.ttl); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "an agent may request tokens of ServiceAccount "+tc.sa+" for at most") {
					return fmt.Errorf("minted: %w, want refused by drover-agent-token-lifetime", err)
				}
				return nil
			})
		})
	}
}
