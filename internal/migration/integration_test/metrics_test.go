package integration_test

import (
	"fmt"
	"github.com/droverhq/drover/internal/metrics/metricstest"
	"testing"
	"time"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/test/envtest"
)

// gauge reads a metric as drover server serves it.
var gauge = metricstest.Value

// TestMigrationMetrics runs an RKE2 migration through the controller: afterwards the migration
// counts as Succeeded and each of its steps as a Succeeded step.
func TestMigrationMetrics(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, envOpts{rke2: true})
	key := e.createMigration(t, migrationv1alpha1.CloudProviderMigrationSpec{
		Distribution: migrationv1alpha1.DistributionRKE2,
		ClusterRef:   &migrationv1alpha1.ClusterReference{Namespace: e.key.Namespace, Name: e.key.Name},
	}, true)
	startController(t, ctx, e.ns, e.reconciler(time.Minute, &counter{}))
	m, err := waitMigration(ctx, key, 3*time.Minute, finished)
	if err != nil || m.Status.Phase != migrationv1alpha1.PhaseSucceeded {
		t.Fatalf("migration %v: %+v", err, m.Status)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		if got := gauge(t, "drover_migrations", map[string]string{"phase": string(migrationv1alpha1.PhaseSucceeded)}); got < 1 {
			return fmt.Errorf("drover_migrations{phase=Succeeded} = %v", got)
		}
		if got := gauge(t, "drover_migration_steps", map[string]string{"outcome": string(migrationv1alpha1.StepSucceeded)}); got < float64(migration.NumSteps) {
			return fmt.Errorf("drover_migration_steps{outcome=Succeeded} = %v, want at least %d", got, migration.NumSteps)
		}
		return nil
	})
}
