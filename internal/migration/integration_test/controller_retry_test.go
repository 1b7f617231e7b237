package integration_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/controller"
)

// TestControllerRetryAfterFix: a migration failed at a step stays failed (re-reconciling does
// not retry it) until someone fixes the cause and annotates migration.drover.io/retry; the
// controller then retries that step, records a StepRetried Event, removes the annotation, and
// the migration runs to success ("fix forward", as the failed step's message advises).
func TestControllerRetryAfterFix(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// The kube-controller-manager's identity may not use the migration Lease: preflight fails.
	e := newEnv(t, envOpts{rke2: true, noLeasePerm: true})
	key := e.createMigration(t, migrationv1alpha1.CloudProviderMigrationSpec{
		Distribution: migrationv1alpha1.DistributionRKE2,
		ClusterRef:   &migrationv1alpha1.ClusterReference{Namespace: e.key.Namespace, Name: e.key.Name},
	}, true)
	actions := &counter{}
	startController(t, ctx, e.ns, e.reconciler(time.Minute, actions))
	m, err := waitMigration(ctx, key, time.Minute, finished)
	if err != nil {
		t.Fatalf("%v (phase %s)", err, m.Status.Phase)
	}
	if m.Status.Phase != migrationv1alpha1.PhaseFailed {
		t.Fatalf("phase %s, want Failed: %+v", m.Status.Phase, m.Status.Conditions)
	}
	failed := int(m.Status.CurrentStep)
	wantCondition(t, m, migration.ConditionFailed, metav1.ConditionTrue, migration.StepNames[failed], "leases/cloud-provider-extraction-migration")
	// The failed step's Event says how to retry.
	wantEvents(t, key, map[string]int{"StepFailed": 1}, corev1.EventTypeWarning+":StepFailed:annotate "+controller.RetryAnnotation)

	// An unrelated change re-reconciles the migration: it stays failed.
	annotate(t, key, "note", "looked at it")
	if m, err = waitMigration(ctx, key, 10*time.Second, func(m *migrationv1alpha1.CloudProviderMigration) bool {
		return m.Annotations["note"] != ""
	}); err != nil {
		t.Fatal(err)
	}
	if m.Status.Phase != migrationv1alpha1.PhaseFailed {
		t.Fatalf("after an unrelated change: phase %s, want still Failed", m.Status.Phase)
	}

	grantLease(t, e.ns, "kcm-"+e.ns) // the fix
	annotate(t, key, controller.RetryAnnotation, "1")
	m, err = waitMigration(ctx, key, 2*time.Minute, func(m *migrationv1alpha1.CloudProviderMigration) bool {
		return m.Status.Phase == migrationv1alpha1.PhaseSucceeded
	})
	if err != nil {
		t.Fatalf("after the fix and the retry annotation: %v (phase %s, %+v)", err, m.Status.Phase, m.Status.Conditions)
	}
	wantEvents(t, key, map[string]int{"StepRetried": 1, "Succeeded": 1}, corev1.EventTypeNormal+":StepRetried:"+migration.StepNames[failed])
	if _, ok := m.Annotations[controller.RetryAnnotation]; ok {
		t.Errorf("annotation %s still set after the retry", controller.RetryAnnotation)
	}
}

// annotate sets annotation k=v on the migration key.
func annotate(t *testing.T, key types.NamespacedName, k, v string) {
	t.Helper()
	m := &migrationv1alpha1.CloudProviderMigration{}
	if err := full.Client.Get(t.Context(), key, m); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(m.DeepCopy())
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
	if err := full.Client.Patch(t.Context(), m, patch); err != nil {
		t.Fatal(err)
	}
}
