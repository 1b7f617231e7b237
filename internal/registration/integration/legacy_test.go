package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/names"
)

// TestLegacyNamedRegistration registers the way agents from before the length-prefixed secret
// names do (no names.SecretNameAnnotation; they wait for the legacy name): drover answers under
// that name and the credential works. A second legacy registration, through another token, whose
// clientID and random split the same bytes differently is refused, and its import identity never
// gets to read the first one's answer.
func TestLegacyNamedRegistration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	imp := tokenClient(t, newToken(t, ws, "old-agent", time.Hour)[fleetv1alpha1.KeyToken])
	random := "0123456789abcdef0123456789abcdef"
	cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
		Labels: map[string]string{fleetv1alpha1.TokenLabel: "old-agent"}},
		Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: "legacy-" + ws, ClientRandom: random}}
	if err := imp.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	legacy := names.LegacyRegistrationSecretName(cr.Spec.ClientID, cr.Spec.ClientRandom)
	answer := &corev1.Secret{}
	eventually(t, 30*time.Second, func() error {
		return imp.Get(ctx, client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace, Name: legacy}, answer)
	})
	req := tokenClient(t, answer.Data[fleetv1alpha1.KeyToken])
	if err := req.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(string(answer.Data[fleetv1alpha1.KeyDeploymentNamespace]))); err != nil {
		t.Fatalf("request identity from a legacy-named answer: %v", err)
	}

	// Same bytes, split one character later: the same legacy name.
	other := tokenClient(t, newToken(t, ws, "other", time.Hour)[fleetv1alpha1.KeyToken])
	collide := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
		Labels: map[string]string{fleetv1alpha1.TokenLabel: "other"}},
		Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: cr.Spec.ClientID + random[:1], ClientRandom: random[1:]}}
	if got := names.LegacyRegistrationSecretName(collide.Spec.ClientID, collide.Spec.ClientRandom); got != legacy {
		t.Fatalf("test setup: %q does not collide with %q", got, legacy)
	}
	if err := other.Create(ctx, collide); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		got := &fleetv1alpha1.ClusterRegistration{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(collide), got); err != nil {
			return err
		}
		if c := conditionOf(got.Status.Conditions, fleetv1alpha1.ConditionGranted); c == nil || c.Reason != fleetv1alpha1.ReasonSecretNameConflict {
			return fmt.Errorf("Granted condition %+v, want reason %s", c, fleetv1alpha1.ReasonSecretNameConflict)
		}
		return nil
	})
	check(t, "colliding import identity: get the first answer", false,
		other.Get(ctx, client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace, Name: legacy}, &corev1.Secret{}))
	kept := &corev1.Secret{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace, Name: legacy}, kept); err != nil {
		t.Fatal(err)
	}
	if kept.Labels[fleetv1alpha1.RegistrationLabel] != cr.Name || string(kept.Data[fleetv1alpha1.KeyToken]) != string(answer.Data[fleetv1alpha1.KeyToken]) {
		t.Errorf("the first registration's answer was replaced (registration label %q)", kept.Labels[fleetv1alpha1.RegistrationLabel])
	}
}
