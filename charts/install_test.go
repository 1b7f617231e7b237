package charts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"

	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/test/envtest"
)

// The full cluster (API server, controller-manager, scheduler, kwok) is started by the first test
// that needs it and stopped in TestMain: the lint/template tests do not pay for it.
var full struct {
	once sync.Once
	c    *envtest.Cluster
	err  error
}

func fullCluster(t *testing.T) *envtest.Cluster {
	t.Helper()
	full.once.Do(func() { full.c, full.err = envtest.StartFull("charts", envtest.Options{}) })
	if full.err != nil {
		t.Fatal(full.err)
	}
	return full.c
}

func TestMain(m *testing.M) {
	code := m.Run()
	if full.c != nil {
		if err := full.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop full cluster:", err)
		}
	}
	os.Exit(code)
}

// helmConfig is helm's action configuration for the cluster, as `helm -n namespace` with its
// admin kubeconfig.
func helmConfig(t *testing.T, c *envtest.Cluster, namespace string) *action.Configuration {
	t.Helper()
	settings := cli.New() // what the helm CLI uses, with --kubeconfig and -n
	settings.KubeConfig = c.ControlPlane().KubeconfigPath()
	settings.SetNamespace(namespace)
	cfg := action.NewConfiguration()
	if err := cfg.Init(settings.RESTClientGetter(), namespace, "secret"); err != nil {
		t.Fatalf("helm configuration: %v", err)
	}
	return cfg
}

// chartLabels select what the release "drover" of the chart made.
var chartLabels = client.MatchingLabels{"app.kubernetes.io/name": "drover", "app.kubernetes.io/instance": "drover"}

// TestDroverChartInstallUninstall installs charts/drover with Helm's Go SDK into a full cluster
// with two kwok nodes, waits for the server's pods to be Ready, checks what the release made, then
// uninstalls it and checks that only drover's CRDs remain.
//
// kwok runs no container: its pod-ready stage (bin/k8s/kwok-stages.yaml) marks a scheduled pod
// Ready without running the image or the probes. Ready here proves that the API server admitted
// the chart's pod spec (security contexts, probes, volumes, the ServiceAccount) and that the
// scheduler placed both replicas; the probes themselves are checked on the object, and the server
// behind them is tested under the chart's RBAC by test/rbac.
func TestDroverChartInstallUninstall(t *testing.T) {
	cl := fullCluster(t)
	ctx := t.Context()
	c := cl.Client

	nodes := []string{"drover-node-1", "drover-node-2"}
	for _, n := range nodes {
		if err := c.Create(ctx, envtest.FakeNode(n, map[string]string{"kubernetes.io/hostname": n})); err != nil {
			t.Fatal(err)
		}
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		for _, name := range nodes {
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return err
			}
			if !slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
				return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
			}) {
				return fmt.Errorf("node %s not Ready: %v", name, n.Status.Conditions)
			}
		}
		return nil
	})

	// drover server ran against this cluster before (drover server --kubeconfig, the README's
	// quickstart): it wrote the registration ConfigMap the chart also makes, so helm install
	// refuses it until it is handed to the release as docs/install.md says.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := server.PublishRegistrationEndpoint(ctx, c, server.RegistrationEndpoint{URL: "https://old.example.com:6443"}); err != nil {
		t.Fatal(err)
	}

	// helm install drover charts/drover -n drover-system --create-namespace --set apiServerURL=...
	const url = "https://mgmt.example.com:6443"
	vals := map[string]any{"apiServerURL": url, "dashboard": map[string]any{"enabled": true}}
	helmInstall := func(forceConflicts bool) error {
		install := action.NewInstall(helmConfig(t, cl, ns))
		install.ReleaseName, install.Namespace, install.CreateNamespace = "drover", ns, true
		install.ForceConflicts = forceConflicts
		install.WaitStrategy, install.Timeout = kube.HookOnlyStrategy, time.Minute
		_, err := install.RunWithContext(ctx, load(t, "drover"), vals)
		return err
	}
	if err := helmInstall(false); err == nil || !strings.Contains(err.Error(), "invalid ownership metadata") {
		t.Fatalf("helm install over drover server's ConfigMap: %v, want invalid ownership metadata", err)
	}
	adopt := &corev1.ConfigMap{ObjectMeta: objMeta(config.DefaultNamespace, config.DefaultName)}
	if err := c.Patch(ctx, adopt, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{
		"labels":{"app.kubernetes.io/managed-by":"Helm"},
		"annotations":{"meta.helm.sh/release-name":"drover","meta.helm.sh/release-namespace":"drover-system"}}}`))); err != nil {
		t.Fatal(err)
	}
	// Helm 4 applies server-side: the apiServerURL drover server wrote stays its field unless
	// forced (a conflict, and a failed release to uninstall).
	if err := helmInstall(true); err != nil {
		t.Fatalf("helm install: %v", err)
	}

	// Both replicas Ready, one per node (soft anti-affinity spreads them over the two nodes).
	envtest.Eventually(t, 60*time.Second, func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drover"}, d); err != nil {
			return err
		}
		if d.Status.ReadyReplicas != 2 || d.Status.UpdatedReplicas != 2 {
			return fmt.Errorf("deployment ready %d updated %d, want 2", d.Status.ReadyReplicas, d.Status.UpdatedReplicas)
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), chartLabels); err != nil {
			return err
		}
		on := map[string]bool{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				on[p.Spec.NodeName] = true
			}
		}
		if len(pods.Items) != 2 || !on[nodes[0]] || !on[nodes[1]] {
			return fmt.Errorf("%d pods on nodes %v, want one on each of %v", len(pods.Items), on, nodes)
		}
		return nil
	})

	// What the release made, read back from the cluster.
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drover"}, d); err != nil {
		t.Fatal(err)
	}
	pod, ctr := d.Spec.Template.Spec, d.Spec.Template.Spec.Containers[0]
	if *d.Spec.Replicas != 2 || pod.ServiceAccountName != "drover" {
		t.Errorf("deployment replicas %d serviceAccount %q", *d.Spec.Replicas, pod.ServiceAccountName)
	}
	if psc := pod.SecurityContext; psc == nil || !*psc.RunAsNonRoot || *psc.RunAsUser != 65532 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", psc)
	}
	if sc := ctr.SecurityContext; sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v", sc)
	}
	for probe, path := range map[*corev1.Probe]string{ctr.LivenessProbe: "/healthz", ctr.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("probe %+v, want GET %s on port health", probe, path)
		}
	}
	if !slices.Contains(ctr.Args, "--install-crds=true") || !slices.Contains(ctr.Args, "--leader-elect=true") {
		t.Errorf("args %v", ctr.Args)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drover"}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("ServiceAccount: %v", err)
	}
	generated := generatedRoles(t, "../config/rbac/role.yaml")
	cr := &rbacv1.ClusterRole{}
	if err := c.Get(ctx, client.ObjectKey{Name: "drover-manager"}, cr); err != nil || !reflect.DeepEqual(cr.Rules, generated["ClusterRole"]) {
		t.Errorf("ClusterRole drover-manager: %v, rules equal to the generated ones: %t", err, err == nil && reflect.DeepEqual(cr.Rules, generated["ClusterRole"]))
	}
	crb := &rbacv1.ClusterRoleBinding{}
	if err := c.Get(ctx, client.ObjectKey{Name: "drover-manager"}, crb); err != nil || crb.RoleRef.Name != "drover-manager" ||
		crb.Subjects[0] != (rbacv1.Subject{Kind: "ServiceAccount", Name: "drover", Namespace: ns}) {
		t.Errorf("ClusterRoleBinding drover-manager %+v: %v", crb, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "drover-local-agent"}, &rbacv1.ClusterRoleBinding{}); err != nil {
		t.Errorf("ClusterRoleBinding drover-local-agent: %v", err)
	}
	if rules, ok := generated["Role"]; ok {
		r := &rbacv1.Role{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drover-manager"}, r); err != nil || !reflect.DeepEqual(r.Rules, rules) {
			t.Errorf("Role drover-manager: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drover-manager"}, &rbacv1.RoleBinding{}); err != nil {
			t.Errorf("RoleBinding drover-manager: %v", err)
		}
	}
	pdb := &policyv1.PodDisruptionBudget{}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drover"}, pdb); err != nil {
			return err
		}
		// The disruption controller counts the Ready pods the PDB selects.
		if pdb.Status.CurrentHealthy != 2 || pdb.Status.DisruptionsAllowed != 1 {
			return fmt.Errorf("PDB healthy %d disruptions allowed %d, want 2 and 1", pdb.Status.CurrentHealthy, pdb.Status.DisruptionsAllowed)
		}
		return nil
	})
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drover-metrics"}, svc); err != nil || svc.Spec.Ports[0].Name != "metrics" {
		t.Errorf("metrics Service %+v: %v", svc.Spec, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drover-dashboard"}, svc); err != nil || svc.Spec.Ports[0].Name != "http" {
		t.Errorf("dashboard Service %+v: %v", svc.Spec, err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: config.DefaultNamespace, Name: config.DefaultName}, cm); err != nil || cm.Data[config.KeyAPIServerURL] != url {
		t.Errorf("registration ConfigMap %v: %v", cm.Data, err)
	}

	// installCRDs=true: the chart ships no CRDs, the server applies them at start. kwok runs no
	// server, so apply them as it does, with a token of the ServiceAccount the chart made: the
	// release's RBAC must allow it.
	sa, err := envtest.TokenConfig(ctx, cl.Clientset, cl.Config, ns, "drover", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sac, err := client.New(sa, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := crds.Install(ctx, sac); err != nil {
		t.Fatalf("install CRDs as drover-system/drover: %v", err)
	}
	if err := crds.InstallPolicies(ctx, sac); err != nil {
		t.Fatalf("install the admission policy as drover-system/drover: %v", err)
	}
	// The chart's admission policy keeps the ServiceAccount's cluster-wide token right to drover's
	// own identities: no token of kube-system's controllers for it.
	sacs, err := kubernetes.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		_, err := sacs.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "clusterrole-aggregation-controller", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only for its own identities") {
			return fmt.Errorf("token of kube-system/clusterrole-aggregation-controller as drover-system/drover: %w, want refused by drover-server-credentials", err)
		}
		return nil
	})
	crdNames := droverCRDs(ctx, t, c)
	if len(crdNames) == 0 {
		t.Fatal("no drover CRDs after the server's install")
	}
	t.Run("teams get drover rights through view and edit", func(t *testing.T) { testUserRoles(t, cl) })

	// helm uninstall drover -n drover-system
	uninstall := action.NewUninstall(helmConfig(t, cl, ns))
	uninstall.WaitStrategy, uninstall.Timeout = kube.HookOnlyStrategy, time.Minute
	if _, err := uninstall.Run("drover"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	envtest.Eventually(t, 60*time.Second, func() error {
		return leftovers(ctx, c)
	})
	if got := droverCRDs(ctx, t, c); !reflect.DeepEqual(got, crdNames) {
		t.Errorf("CRDs after uninstall %v, want %v kept", got, crdNames)
	}
}

// leftovers lists what the release made that still exists: objects with the chart's labels, the
// names the chart uses, and Helm's release records.
func leftovers(ctx context.Context, c client.Client) error {
	var errs []error
	for _, gvk := range []schema.GroupVersionKind{
		rbacv1.SchemeGroupVersion.WithKind("ClusterRoleList"), rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBindingList"),
		rbacv1.SchemeGroupVersion.WithKind("RoleList"), rbacv1.SchemeGroupVersion.WithKind("RoleBindingList"),
		corev1.SchemeGroupVersion.WithKind("ServiceAccountList"), corev1.SchemeGroupVersion.WithKind("ServiceList"),
		corev1.SchemeGroupVersion.WithKind("ConfigMapList"), corev1.SchemeGroupVersion.WithKind("PodList"),
		appsv1.SchemeGroupVersion.WithKind("DeploymentList"), appsv1.SchemeGroupVersion.WithKind("ReplicaSetList"),
		policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudgetList"),
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		if err := c.List(ctx, l, client.MatchingLabels{"app.kubernetes.io/name": "drover"}); err != nil {
			return err
		}
		for _, o := range l.Items {
			errs = append(errs, fmt.Errorf("%s %s/%s remains", o.GetKind(), o.GetNamespace(), o.GetName()))
		}
	}
	// By name too, in case a template lost its labels.
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: objMeta("", "drover-manager")}, &rbacv1.ClusterRoleBinding{ObjectMeta: objMeta("", "drover-manager")},
		&rbacv1.ClusterRoleBinding{ObjectMeta: objMeta("", "drover-local-agent")}, &rbacv1.Role{ObjectMeta: objMeta(ns, "drover-manager")},
		&rbacv1.RoleBinding{ObjectMeta: objMeta(ns, "drover-manager")}, &corev1.ServiceAccount{ObjectMeta: objMeta(ns, "drover")},
		&appsv1.Deployment{ObjectMeta: objMeta(ns, "drover")}, &policyv1.PodDisruptionBudget{ObjectMeta: objMeta(ns, "drover")},
		&corev1.Service{ObjectMeta: objMeta(ns, "drover-metrics")}, &corev1.Service{ObjectMeta: objMeta(ns, "drover-dashboard")},
		&corev1.ConfigMap{ObjectMeta: objMeta(ns, config.DefaultName)},
	} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err == nil {
			errs = append(errs, fmt.Errorf("%T %s/%s remains", o, o.GetNamespace(), o.GetName()))
		} else if !isNotFound(err) {
			return err
		}
	}
	releases := &corev1.SecretList{}
	if err := c.List(ctx, releases, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": "drover"}); err != nil {
		return err
	}
	for _, s := range releases.Items {
		errs = append(errs, fmt.Errorf("helm release record %s remains", s.Name))
	}
	return errors.Join(errs...)
}

func droverCRDs(ctx context.Context, t *testing.T, c client.Client) []string {
	t.Helper()
	l := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, l); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range l.Items {
		if g := crd.Spec.Group; g == "fleet.drover.io" || g == "management.drover.io" || g == "migration.drover.io" {
			names = append(names, crd.Name)
		}
	}
	slices.Sort(names)
	return names
}

func objMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

func isNotFound(err error) bool {
	return client.IgnoreNotFound(err) == nil || meta.IsNoMatchError(err)
}

// testUserRoles acts as two people of team-a, bound to Kubernetes' own edit and view roles in
// their namespace: the chart's drover-edit and drover-view are aggregated into those by
// kube-controller-manager, so the bindings alone give them drover's objects there, and no more.
func testUserRoles(t *testing.T, cl *envtest.Cluster) {
	ctx := t.Context()
	c := cl.Client
	team, other := cl.Namespace(t), cl.Namespace(t)
	for user, role := range map[string]string{"alice": "edit", "bob": "view"} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
		if err := c.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(cl.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		uc, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return uc
	}
	alice, bob := as("alice"), as("bob")
	bundle := func(name string) *fleetv1alpha1.Bundle {
		return &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name},
			Spec: fleetv1alpha1.BundleSpec{Resources: []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}}}}
	}
	// Aggregation is kube-controller-manager's, moments after the chart's ClusterRoles exist.
	envtest.Eventually(t, 30*time.Second, func() error { return alice.Create(ctx, bundle("web")) })

	allowed := func(name string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want allowed", name, err)
		}
	}
	forbidden := func(name string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", name, err)
		}
	}
	gitrepo := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "apps"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps.git"}}
	allowed("edit: create a GitRepo", alice.Create(ctx, gitrepo))
	allowed("edit: create a registration token", alice.Create(ctx, &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "t"}}))
	allowed("edit: patch a Bundle", alice.Patch(ctx, bundle("web"), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"rollout":{"paused":true}}}`))))
	allowed("edit: list BundleContents", alice.List(ctx, &fleetv1alpha1.BundleContentList{}, client.InNamespace(team)))
	forbidden("edit: write a Bundle's status", alice.Status().Patch(ctx, bundle("web"), client.RawPatch(types.MergePatchType, []byte(`{"status":{"observedGeneration":7}}`))))
	forbidden("edit: create a BundleDeployment", alice.Create(ctx, &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "bd"},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "x"}}))
	forbidden("edit: create a Bundle in another namespace", alice.Create(ctx, &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "web"}}))

	allowed("view: list Bundles", bob.List(ctx, &fleetv1alpha1.BundleList{}, client.InNamespace(team)))
	allowed("view: get a GitRepo", bob.Get(ctx, client.ObjectKeyFromObject(gitrepo), &fleetv1alpha1.GitRepo{}))
	allowed("view: list hosted clusters", bob.List(ctx, &managementv1alpha1.ClusterList{}, client.InNamespace(team)))
	allowed("view: list migrations", bob.List(ctx, &migrationv1alpha1.CloudProviderMigrationList{}, client.InNamespace(team)))
	forbidden("view: list BundleContents", bob.List(ctx, &fleetv1alpha1.BundleContentList{}, client.InNamespace(team)))
	forbidden("view: create a Bundle", bob.Create(ctx, bundle("db")))
	forbidden("view: delete a GitRepo", bob.Delete(ctx, gitrepo))
	forbidden("view: list Bundles in another namespace", bob.List(ctx, &fleetv1alpha1.BundleList{}, client.InNamespace(other)))
}
