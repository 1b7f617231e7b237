package envtest_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/test/envtest"
)

var mgmt, downstream *envtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	type result struct {
		c   *envtest.Cluster
		err error
	}
	// Start both at once: the second start overlaps the first's.
	ch := make(chan result, 1)
	go func() {
		c, err := envtest.Start("downstream", envtest.Options{})
		ch <- result{c, err}
	}()
	var err error
	mgmt, err = envtest.Start("management", envtest.Options{InstallCRDs: true})
	r := <-ch
	downstream = r.c
	defer func() { _ = mgmt.Stop(); _ = downstream.Stop() }()
	if err != nil || r.err != nil {
		fmt.Fprintln(os.Stderr, err, r.err)
		return 1
	}
	return m.Run()
}

// eventually polls cond until it returns nil or the deadline passes.
var eventually = envtest.Eventually

func TestRBACIsEnforcedForServiceAccountTokens(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	other := mgmt.Namespace(t)

	cfg, err := mgmt.ServiceAccountConfig(ctx, ns, "agent")
	if err != nil {
		t.Fatal(err)
	}
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := review.Status.UserInfo.Username, "system:serviceaccount:"+ns+":agent"; got != want {
		t.Fatalf("token authenticates as %q, want %q", got, want)
	}

	if _, err := sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("before any grant, listing configmaps: got %v, want Forbidden", err)
	}

	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-configmaps"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "agent"}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := mgmt.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, func() error {
		_, err := sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err
	})
	if _, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("secrets in the granted namespace: got %v, want Forbidden", err)
	}
	if _, err := sa.CoreV1().ConfigMaps(other).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("configmaps in another namespace: got %v, want Forbidden", err)
	}
}

func TestTwoClustersAreIndependent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	if mgmt.Config.Host == downstream.Config.Host {
		t.Fatalf("both clusters serve at %s", mgmt.Config.Host)
	}
	ns := mgmt.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "only-in-management"}}
	if err := mgmt.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := downstream.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s in downstream: got %v, want NotFound", ns, err)
	}
	// drover's CRDs were installed into the management cluster only.
	if err := downstream.Client.List(ctx, &managementv1alpha1.ClusterList{}); err == nil {
		t.Fatal("downstream serves management.drover.io Clusters; want no such resource")
	}
	// A management admin credential means nothing downstream: the CAs differ.
	if string(mgmt.Config.CAData) == string(downstream.Config.CAData) {
		t.Fatal("both clusters share a CA")
	}
}

func TestDroverCRDsAreInstalledAndServed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	c := &managementv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod"},
		Spec: managementv1alpha1.ClusterSpec{EKSConfig: &managementv1alpha1.EKSClusterConfig{
			DisplayName: "prod", Region: "us-west-2", CredentialSecret: "aws", KubernetesVersion: ptr.To("1.33"),
		}},
	}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	got := &managementv1alpha1.Cluster{}
	if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.SyncPolicy != managementv1alpha1.SyncPolicyAdopt {
		t.Errorf("syncPolicy defaulted to %q, want adopt", got.Spec.SyncPolicy)
	}
	// Schema validation from the generated CRD is in force.
	bad := c.DeepCopy()
	bad.ResourceVersion, bad.Name = "", "bad"
	bad.Spec.EKSConfig.Region = ""
	if err := mgmt.Client.Create(ctx, bad); !apierrors.IsInvalid(err) {
		t.Fatalf("empty region: got %v, want Invalid", err)
	}
}
