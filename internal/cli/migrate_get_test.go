package cli

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

// TestMigrateGetSaysHowToRetry: a migration failed at a step says how to retry it or roll back
// (the annotations), not only that it failed.
func TestMigrateGetSaysHowToRetry(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	m := &migrationv1alpha1.CloudProviderMigration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: migrationv1alpha1.CloudProviderMigrationSpec{Distribution: migrationv1alpha1.DistributionRKE2,
			ClusterRef:          &migrationv1alpha1.ClusterReference{Namespace: ns, Name: "edge"},
			KubeconfigSecretRef: migrationv1alpha1.SecretKeyReference{Name: "edge-kubeconfig"}}}
	if err := mgmt.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	m.Status.Phase = migrationv1alpha1.PhaseFailed
	m.Status.Steps = []migrationv1alpha1.StepStatus{{Index: 0, Name: "Preflight", Phase: migrationv1alpha1.StepFailed, Message: "not eligible"}}
	if err := mgmt.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := drover(ctx, "migrate", "get", "edge", "-n", ns, "--kubeconfig", mgmtKubeconfig(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"kubectl -n " + ns + " annotate cloudprovidermigration edge migration.drover.io/retry=",
		"kubectl -n " + ns + " annotate cloudprovidermigration edge migration.drover.io/rollback=true"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate get lacks %q:\n%s", want, out)
		}
	}
}
