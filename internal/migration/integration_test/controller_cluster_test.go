package integration_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/controller"
)

// TestControllerClusterNotFound: a migration whose clusterRef names no provisioning Cluster gets
// Failed=True with reason ClusterNotFound naming it and one Warning event, and starts once the
// Cluster is created.
func TestControllerClusterNotFound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, envOpts{rke2: true})
	key := e.createMigration(t, migrationv1alpha1.CloudProviderMigrationSpec{
		Distribution: migrationv1alpha1.DistributionRKE2,
		ClusterRef:   &migrationv1alpha1.ClusterReference{Namespace: e.ns, Name: "missing"},
	}, true)
	r := e.reconciler(time.Minute, &counter{})
	r.ClusterRecheckInterval = 200 * time.Millisecond
	startController(t, ctx, e.ns, r)
	m, err := waitMigration(ctx, key, time.Minute, func(m *migrationv1alpha1.CloudProviderMigration) bool {
		return m.Status.Phase == migrationv1alpha1.PhaseFailed
	})
	if err != nil {
		t.Fatalf("no status for a migration of a missing Cluster: %v (%+v)", err, m.Status)
	}
	wantCondition(t, m, migration.ConditionFailed, metav1.ConditionTrue, controller.ReasonClusterNotFound, "provisioning Cluster "+e.ns+"/missing (spec.clusterRef) not found")
	wantEvents(t, key, map[string]int{controller.ReasonClusterNotFound: 1}, corev1.EventTypeWarning+":"+controller.ReasonClusterNotFound+":"+e.ns+"/missing")

	// The Cluster appears: the migration starts (re-checked, no new Event).
	doc, err := os.ReadFile("../rke2/testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal(doc, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(e.ns)
	u.SetName("missing")
	if err := full.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	m, err = waitMigration(ctx, key, time.Minute, func(m *migrationv1alpha1.CloudProviderMigration) bool {
		return m.Status.Phase != migrationv1alpha1.PhaseFailed && len(m.Status.Steps) > 0 && m.Status.Steps[0].Phase != migrationv1alpha1.StepPending
	})
	if err != nil {
		t.Fatalf("migration did not start once the Cluster exists: %v (%+v)", err, m.Status)
	}
	if c := m.Status.Conditions; strings.Contains(condReason(c, migration.ConditionFailed), controller.ReasonClusterNotFound) {
		t.Errorf("ClusterNotFound not cleared: %+v", c)
	}
}

func condReason(cs []metav1.Condition, typ string) string {
	for _, c := range cs {
		if c.Type == typ && c.Status == metav1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

// TestControllerClusterInOtherNamespace: a migration may act only on a provisioning Cluster of
// its own namespace. drover's rights reach every namespace's Clusters, so one naming another
// namespace's Cluster would let whoever may create a migration rewrite another team's cluster
// (and copy its spec, secrets included, into a Secret of their own namespace). It fails with
// ClusterInOtherNamespace and reads nothing there.
func TestControllerClusterInOtherNamespace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	victim := newEnv(t, envOpts{rke2: true})
	before := &unstructured.Unstructured{}
	before.SetAPIVersion("provisioning.cattle.io/v1")
	before.SetKind("Cluster")
	if err := full.Client.Get(ctx, victim.key, before); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{rke2: true})
	key := e.createMigration(t, migrationv1alpha1.CloudProviderMigrationSpec{
		Distribution: migrationv1alpha1.DistributionRKE2,
		ClusterRef:   &migrationv1alpha1.ClusterReference{Namespace: victim.key.Namespace, Name: victim.key.Name},
	}, true)
	startController(t, ctx, e.ns, e.reconciler(time.Minute, &counter{}))
	m, err := waitMigration(ctx, key, time.Minute, func(m *migrationv1alpha1.CloudProviderMigration) bool {
		return m.Status.Phase == migrationv1alpha1.PhaseFailed
	})
	if err != nil {
		t.Fatalf("a migration of another namespace's Cluster did not fail: %v (%+v)", err, m.Status)
	}
	wantCondition(t, m, migration.ConditionFailed, metav1.ConditionTrue, controller.ReasonClusterInOtherNamespace, "a migration acts only on provisioning Clusters of its own namespace ("+e.ns+")")
	if len(m.Status.Steps) > 0 && m.Status.Steps[0].Phase != migrationv1alpha1.StepPending || m.Status.Facts.KubernetesVersion != "" {
		t.Errorf("the other namespace's Cluster was read: %+v", m.Status)
	}
	after := before.DeepCopy()
	if err := full.Client.Get(ctx, victim.key, after); err != nil {
		t.Fatal(err)
	}
	// Its spec (the simulated rke2 keeps writing its status).
	if !reflect.DeepEqual(before.Object["spec"], after.Object["spec"]) {
		t.Errorf("the other namespace's Cluster's spec was changed:\nbefore %v\nafter  %v", before.Object["spec"], after.Object["spec"])
	}
	secrets := &corev1.SecretList{}
	if err := full.Client.List(ctx, secrets, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Name != "downstream" {
			t.Errorf("Secret %s written in the migration's namespace", s.Name)
		}
	}
}
