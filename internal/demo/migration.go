package demo

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	fleetv1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/checks"
	"github.com/droverhq/drover/internal/migration/rke2"
	"github.com/droverhq/drover/pkg/distsim"
)

// The demo's cloud-provider migrations. Each downstream cluster plays an RKE2 cluster on AWS
// with the in-tree cloud provider: pkg/distsim simulates what rke2 and Rancher would do there
// (EC2-named nodes with ProviderIDs, kube-controller-manager mirror pods and their flags, the
// leader-migration and CCM Leases, the CCM DaemonSet rendered from the chart values, the
// provisioning Cluster's status), and drover's migration controller migrates it to the AWS
// cloud controller manager through the provisioning Cluster in the management cluster.
const (
	// MigrationSucceeds migrates edge-2 and upgrades it to MigrationVersion: it runs through
	// its seven steps to Succeeded.
	MigrationSucceeds = "edge-2-aws-ccm"
	// MigrationFails migrates edge-1, whose simulated CCM lacks an IAM permission: the
	// SwitchProvider step's verification finds its SyncLoadBalancerFailed event and fails with
	// what to do (below 1.27 it can be rolled back).
	MigrationFails = "edge-1-aws-ccm"
	// MigrationVersion is the version MigrationSucceeds upgrades its cluster to.
	MigrationVersion = "v1.27.16+rke2r1"

	rke2Version = "v1.26.15+rke2r1"
)

// migrations are the downstream clusters' migrations, by cluster.
var migrations = map[string]struct {
	name      string
	misbehave distsim.Misbehaviour
	version   string
}{
	"edge-1": {name: MigrationFails, misbehave: distsim.LoadBalancerSyncFails},
	"edge-2": {name: MigrationSucceeds, version: MigrationVersion},
}

// MigrationNames are the demo's migrations.
func MigrationNames() []string { return []string{MigrationSucceeds, MigrationFails} }

// installProvisioningCRD installs the stand-in for Rancher's provisioning.cattle.io Cluster CRD
// in the management cluster, where the RKE2 clusters' configuration lives.
func installProvisioningCRD(ctx context.Context, c client.Client) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := sigsyaml.Unmarshal(distsim.ProvisioningCRD, crd); err != nil {
		return fmt.Errorf("parse the provisioning CRD: %w", err)
	}
	if err := create(ctx, c, crd); err != nil {
		return err
	}
	return waitFor(ctx, time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("CRD %s not established yet", crd.Name)
	})
}

// simulateRKE2 makes the downstream cluster ds an RKE2 cluster on AWS with the in-tree cloud
// provider: its provisioning Cluster in the management cluster (c), the permission the
// leader migration needs, and distsim's nodes, load balancer and control-plane pods. The
// simulator runs until ctx ends.
func (d *Demo) simulateRKE2(ctx context.Context, c, down client.Client, ds *downstream, octet int) error {
	key := types.NamespacedName{Namespace: Namespace, Name: ds.name}
	if err := create(ctx, c, provisioningCluster(key)); err != nil {
		return err
	}
	if err := grantLeaderMigration(ctx, down); err != nil {
		return fmt.Errorf("%s: %w", ds.name, err)
	}
	sim := distsim.New(distsim.Options{
		Client: down, Management: c, Name: ds.name, Octet: octet, Namespace: metav1.NamespaceSystem,
		RKE2: true, Provisioning: key, ControlPlanes: 1, Workers: 2, Misbehave: migrations[ds.name].misbehave,
		Interval: 500 * time.Millisecond, Log: ctrl.LoggerFrom(ctx).WithName("distsim"),
	})
	if err := sim.Setup(ctx, "aws", false); err != nil {
		return fmt.Errorf("simulate RKE2 on %s: %w", ds.name, err)
	}
	d.agents.Add(1)
	go func() {
		defer d.agents.Done()
		sim.Run(ctx)
	}()
	return nil
}

// provisioningCluster is an RKE2 cluster's configuration as Rancher holds it: Kubernetes 1.26
// with the in-tree AWS cloud provider.
func provisioningCluster(key types.NamespacedName) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"kubernetesVersion": rke2Version,
			"rkeConfig": map[string]any{
				"machineGlobalConfig": map[string]any{"cloud-provider-name": "aws"},
				"upgradeStrategy":     map[string]any{"controlPlaneConcurrency": "1"},
			},
		},
	}}
	u.SetGroupVersionKind(rke2.ClusterGVK)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return u
}

// grantLeaderMigration lets kube-controller-manager hold the leader-migration Lease, which the
// migration's preflight checks (RKE2's own Role grants only its leader-election Lease).
func grantLeaderMigration(ctx context.Context, down client.Client) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: checks.MigrationLease},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			ResourceNames: []string{checks.MigrationLease}, Verbs: []string{"get", "create", "update"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: checks.MigrationLease},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: checks.DefaultKCMIdentity}}}
	if err := create(ctx, down, role); err != nil {
		return err
	}
	return create(ctx, down, rb)
}

// startMigration creates the CloudProviderMigration of ds once its nodes are Ready (the
// preflight refuses a cluster with a node that is not). It reaches the cluster through the
// kubeconfig Secret the fleet import uses.
func startMigration(ctx context.Context, c, down client.Client, ds *downstream, kubeconfigSecret string) error {
	if err := waitFor(ctx, 2*time.Minute, func() error {
		var nodes corev1.NodeList
		if err := down.List(ctx, &nodes); err != nil {
			return err
		}
		if problems := checks.Eligibility(nodes.Items, nil); len(problems) > 0 {
			return fmt.Errorf("%s: %s", ds.name, problems[0])
		}
		return nil
	}); err != nil {
		return err
	}
	mig := migrations[ds.name]
	m := &migrationv1alpha1.CloudProviderMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: mig.name, Labels: map[string]string{"site": ds.name}},
		Spec: migrationv1alpha1.CloudProviderMigrationSpec{
			Distribution:        migrationv1alpha1.DistributionRKE2,
			ClusterRef:          &migrationv1alpha1.ClusterReference{Namespace: Namespace, Name: ds.name},
			KubeconfigSecretRef: migrationv1alpha1.SecretKeyReference{Name: kubeconfigSecret, Key: fleetv1.KeyKubeconfig},
			KubernetesVersion:   mig.version,
		},
	}
	return create(ctx, c, m)
}

// migrationsUnderWay returns nil once drover's migration controller has started both
// migrations (they then take their steps while the demo is looked at).
func migrationsUnderWay(ctx context.Context, c client.Reader) error {
	for _, name := range MigrationNames() {
		m := &migrationv1alpha1.CloudProviderMigration{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, m); err != nil {
			return err
		}
		if m.Status.Phase == "" || m.Status.Phase == migrationv1alpha1.PhasePending {
			return fmt.Errorf("migration %s has not started yet", name)
		}
	}
	return nil
}

// reportMigrations prints each migration's outcome once it has one.
func (d *Demo) reportMigrations(ctx context.Context, c client.Reader) {
	for _, name := range MigrationNames() {
		m := &migrationv1alpha1.CloudProviderMigration{}
		err := waitFor(ctx, 10*time.Minute, func() error {
			if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, m); err != nil {
				return err
			}
			switch m.Status.Phase {
			case migrationv1alpha1.PhaseSucceeded, migrationv1alpha1.PhaseFailed, migrationv1alpha1.PhaseRolledBack:
				return nil
			}
			return fmt.Errorf("migration %s is %s", name, m.Status.Phase)
		})
		if err != nil {
			return // the demo is stopping, or the migration is stuck: its status says where
		}
		msg := ""
		if c := meta.FindStatusCondition(m.Status.Conditions, migration.ConditionFailed); m.Status.Phase == migrationv1alpha1.PhaseFailed && c != nil {
			msg = fmt.Sprintf(" at step %d %s: %s", m.Status.CurrentStep, c.Reason, c.Message)
		}
		fmt.Fprintf(d.o.Out, "Demo: migration %s %s after %s%s\n", name, m.Status.Phase, time.Since(m.CreationTimestamp.Time).Round(time.Second), msg)
	}
}
