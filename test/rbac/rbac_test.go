package rbac

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/checks"
	"github.com/droverhq/drover/internal/migration/rke2"
	sim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/distsim"
	"github.com/droverhq/drover/test/envtest"
)

// TestServerRightsSuffice drives every controller of drover server, running as its
// ServiceAccount, through its work; the server must never be refused.
func TestServerRightsSuffice(t *testing.T) {
	t.Run("group", func(t *testing.T) {
		t.Run("hosted EKS create, active, delete", testHostedEKS)
		t.Run("agent registration, a Bundle deployed and pruned, deregistration", testRegistrationAndBundle)
		t.Run("RKE2 migration", testMigration)
	})
	if reqs := denied.list(); len(reqs) > 0 {
		t.Errorf("drover server was refused %d requests (add +kubebuilder:rbac markers and run make generate):\n  %s",
			len(reqs), strings.Join(reqs, "\n  "))
	}
}

func testHostedEKS(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := cluster.Namespace(t)
	_, ts := sim.NewTestServer(t, sim.Options{Delay: -1})
	if err := cluster.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, StringData: map[string]string{
		eks.KeyAccessKeyID: sim.DefaultAccessKeyID, eks.KeySecretAccessKey: sim.DefaultSecretAccessKey, eks.KeyEndpoint: ts.URL}}); err != nil {
		t.Fatal(err)
	}
	c := &managementv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod"},
		Spec: managementv1alpha1.ClusterSpec{EKSConfig: &managementv1alpha1.EKSClusterConfig{
			DisplayName: "prod", Region: "us-west-2", CredentialSecret: "aws",
			KubernetesVersion: ptr.To("1.32"), ServiceRole: ptr.To("arn:aws:iam::123456789012:role/eks"),
			Subnets: []string{"subnet-a", "subnet-b"},
			NodeGroups: []managementv1alpha1.EKSNodeGroup{{Name: "ng-1", NodeRole: ptr.To("arn:aws:iam::123456789012:role/node"),
				DesiredSize: ptr.To[int32](1), MinSize: ptr.To[int32](1), MaxSize: ptr.To[int32](2)}},
		}},
	}
	if err := cluster.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, func() error {
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		if c.Status.Phase != managementv1alpha1.PhaseActive {
			return fmt.Errorf("phase %q, conditions %+v", c.Status.Phase, c.Status.Conditions)
		}
		return nil
	})
	if err := cluster.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, func() error {
		err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(c), c)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cluster still there (phase %q): %w", c.Status.Phase, err)
	})
}

func testRegistrationAndBundle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := cluster.Namespace(t)

	// A token, its values in a bootstrap Secret, and an agent running in-process (its
	// "downstream" cluster is the same API server, as for the local cluster).
	tok := &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "token"},
		Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}}}
	if err := cluster.Client.Create(ctx, tok); err != nil {
		t.Fatal(err)
	}
	values := &corev1.Secret{}
	eventually(t, 30*time.Second, func() error {
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(tok), tok); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(tok.Status.Conditions, fleetv1alpha1.ConditionReady) {
			return fmt.Errorf("token not ready: %+v", tok.Status.Conditions)
		}
		return cluster.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: tok.Status.SecretName}, values)
	})
	agentNS := cluster.Namespace(t)
	if err := cluster.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: manifests.BootstrapSecret}, Data: values.Data}); err != nil {
		t.Fatal(err)
	}
	agentCtx, stopAgent := context.WithCancel(context.Background())
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		_ = agent.Run(agentCtx, agent.Options{Config: cluster.Config, Namespace: agentNS, ClientID: "rbac-" + ws, Identity: "test",
			HeartbeatInterval: time.Second, RetryMin: time.Second, RetryMax: 4 * time.Second})
	}()
	t.Cleanup(func() { stopAgent(); <-agentDone })

	// Granted, and the Cluster checked in.
	var c *fleetv1alpha1.Cluster
	eventually(t, 60*time.Second, func() error {
		var regs fleetv1alpha1.ClusterRegistrationList
		if err := cluster.Client.List(ctx, &regs, client.InNamespace(ws)); err != nil {
			return err
		}
		if len(regs.Items) == 0 || !meta.IsStatusConditionTrue(regs.Items[0].Status.Conditions, fleetv1alpha1.ConditionGranted) {
			return fmt.Errorf("registration not granted: %+v", regs.Items)
		}
		var list fleetv1alpha1.ClusterList
		if err := cluster.Client.List(ctx, &list, client.InNamespace(ws)); err != nil {
			return err
		}
		if len(list.Items) != 1 || !meta.IsStatusConditionTrue(list.Items[0].Status.Conditions, fleetv1alpha1.ConditionReady) {
			return fmt.Errorf("cluster not ready: %+v", list.Items)
		}
		c = &list.Items[0]
		return nil
	})

	// A Bundle for it is deployed (the agent applies its ConfigMap), then pruned.
	target := cluster.Namespace(t)
	cm, err := json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "from-bundle"}, Data: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "app"}, Spec: fleetv1alpha1.BundleSpec{
		Resources: []runtime.RawExtension{{Raw: cm}}, DefaultNamespace: target,
		Targets: []fleetv1alpha1.BundleTarget{{ClusterName: c.Name}}}}
	if err := cluster.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		return cluster.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "from-bundle"}, &corev1.ConfigMap{})
	})
	if err := cluster.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		var bds fleetv1alpha1.BundleDeploymentList
		if err := cluster.Client.List(ctx, &bds, client.InNamespace(c.Status.Namespace)); err != nil {
			return err
		}
		for _, bd := range bds.Items {
			if strings.HasPrefix(bd.Name, "app") {
				return fmt.Errorf("BundleDeployment %s not pruned", bd.Name)
			}
		}
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(b), b); !apierrors.IsNotFound(err) {
			return fmt.Errorf("bundle still there: %w", err)
		}
		return nil
	})

	// Deregistration: with the agent stopped, the Cluster is deleted and the server's finalizer
	// removes what registration made (its namespace, Secrets, Roles, import tokens) first.
	stopAgent()
	<-agentDone
	if err := cluster.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(c), &fleetv1alpha1.Cluster{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster still there: %w", err)
		}
		cns := &corev1.Namespace{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: c.Status.Namespace}, cns); err == nil && cns.DeletionTimestamp == nil {
			return fmt.Errorf("cluster namespace %s not deleted", cns.Name)
		}
		return nil
	})
}

// The simulated downstream cluster of testMigration (pkg/distsim): its nodes, the namespace
// standing in for its kube-system, and its kube-controller-manager's user. The server's
// migration controller is configured with them (controllers).
const (
	downstreamName      = "rbac"
	downstreamNamespace = "rbac-downstream"
	downstreamKCM       = "kcm-rbac"
)

// testMigration runs an RKE2 cloud-provider migration plan to success through the server: the
// controller reads and updates the provisioning Cluster, the migration and its status, reads the
// kubeconfig Secret and records Events, all as the server's ServiceAccount. The downstream
// cluster (distsim on this API server, nodes made Ready by kwok) is reached as admin through the
// kubeconfig Secret: only the server's rights on the management side are under test.
func testMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := cluster.Namespace(t)
	doc, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "internal", "migration", "rke2", "testdata", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal(doc, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	if err := cluster.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: u.GetName()}

	// The downstream cluster: nodes, mirror pods and Leases that follow the provisioning
	// Cluster, and its kube-controller-manager allowed to take the migration Lease.
	if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: downstreamNamespace}}); err != nil {
		t.Fatal(err)
	}
	grantLease(t)
	ds := distsim.New(distsim.Options{Client: cluster.Client, Name: downstreamName, Octet: 200, Namespace: downstreamNamespace,
		RKE2: true, Provisioning: key, ControlPlanes: 2, Workers: 1})
	info, err := (rke2.Editor{}).Inspect(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Setup(ctx, info.Provider, false); err != nil {
		t.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(context.Background())
	simDone := make(chan struct{})
	go func() { defer close(simDone); ds.Run(simCtx) }()
	t.Cleanup(func() { stopSim(); <-simDone })
	checker := &checks.Checker{Client: cluster.Clientset, Namespace: downstreamNamespace, Selector: ds.Selector(), KCMIdentity: downstreamKCM}
	eventually(t, 30*time.Second, func() error {
		nodes, err := checker.Nodes(ctx)
		if err != nil {
			return err
		}
		if len(nodes) != 3 {
			return fmt.Errorf("%d nodes, want 3", len(nodes))
		}
		if problems := checks.Eligibility(nodes, nil); len(problems) > 0 {
			return fmt.Errorf("nodes not eligible: %v", problems)
		}
		return nil
	})

	if err := cluster.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "downstream"},
		Data: map[string][]byte{"value": adminKubeconfig(t)}}); err != nil {
		t.Fatal(err)
	}
	m := &migrationv1alpha1.CloudProviderMigration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws-ccm"},
		Spec: migrationv1alpha1.CloudProviderMigrationSpec{
			Distribution:        migrationv1alpha1.DistributionRKE2,
			ClusterRef:          &migrationv1alpha1.ClusterReference{Namespace: ns, Name: u.GetName()},
			KubeconfigSecretRef: migrationv1alpha1.SecretKeyReference{Name: "downstream"},
		}}
	if err := cluster.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, func() error {
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return err
		}
		if m.Status.Phase == migrationv1alpha1.PhaseFailed {
			t.Fatalf("migration failed at step %d: %+v", m.Status.CurrentStep, m.Status.Conditions)
		}
		if m.Status.Phase != migrationv1alpha1.PhaseSucceeded {
			return fmt.Errorf("phase %q at step %d", m.Status.Phase, m.Status.CurrentStep)
		}
		return nil
	})
	if len(m.Status.Steps) != migration.NumSteps {
		t.Errorf("%d steps in status, want %d", len(m.Status.Steps), migration.NumSteps)
	}
	for _, s := range m.Status.Steps {
		if s.Phase != migrationv1alpha1.StepSucceeded && s.Phase != migrationv1alpha1.StepSkipped {
			t.Errorf("step %d %s: %s %q", s.Index, s.Name, s.Phase, s.Message)
		}
	}
	// The plan was applied through the server's update of the provisioning Cluster.
	got, err := (&rke2.Object{Client: cluster.Client, Key: key}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "cloud-provider-name: external") {
		t.Errorf("provisioning Cluster not switched to the external cloud provider:\n%s", got)
	}
	// Its step Events were recorded by the server.
	eventually(t, 30*time.Second, func() error {
		evs := &eventsv1.EventList{}
		if err := cluster.Client.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Regarding.Name == m.Name && ev.Reason == "Succeeded" {
				return nil
			}
		}
		return fmt.Errorf("no Succeeded Event for the migration among %d", len(evs.Items))
	})
}

// grantLease lets the downstream kube-controller-manager take the migration Lease, as rke2
// does; the preflight checks it.
func grantLease(t *testing.T) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: downstreamNamespace, Name: "leader-migration"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			ResourceNames: []string{checks.MigrationLease}, Verbs: []string{"get", "create", "update"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: downstreamNamespace, Name: "leader-migration"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: downstreamKCM}}}
	for _, o := range []client.Object{role, rb} {
		if err := cluster.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func adminKubeconfig(t *testing.T) []byte {
	t.Helper()
	cfg := cluster.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eventually polls cond until it returns nil or the deadline passes.
var eventually = envtest.Eventually
