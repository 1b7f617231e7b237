package rbac

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
