package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/metrics"
)

// stepMetrics keeps drover_migrations and drover_migration_steps from the migrations' recorded
// status (whoever runs them: this controller or `drover migrate cloud-provider apply`), so the
// metrics never disagree with status.steps.
type stepMetrics struct {
	client client.Reader
}

// Reconcile counts one migration's phase and steps by phase.
func (s *stepMetrics) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	m := &migrationv1alpha1.CloudProviderMigration{}
	if err := s.client.Get(ctx, req.NamespacedName, m); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.Migrations.Delete(req.String())
			metrics.MigrationSteps.Delete(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	phase := string(m.Status.Phase)
	if phase == "" {
		phase = string(migrationv1alpha1.PhasePending)
	}
	metrics.Migrations.Set(req.String(), phase)
	steps := map[string]int{}
	for _, st := range m.Status.Steps {
		steps[string(st.Phase)]++
	}
	metrics.MigrationSteps.SetCounts(req.String(), steps)
	return ctrl.Result{}, nil
}

func (s *stepMetrics) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&migrationv1alpha1.CloudProviderMigration{}).
		Named("cloudprovidermigration-metrics").Complete(s)
}
