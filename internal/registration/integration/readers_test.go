package integration

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/names"
)

// TestReadersNotSharedAcrossNamespaces: the Roles letting an import identity read its answers
// live in one namespace for every team, and were named by joining namespace and token with
// "-": namespace "team" with token "pay-edge" and namespace "team-pay" with token "edge"
// shared them, so the first team's import identity, having registered first in every shard,
// read the second team's answer (its agent's request and renewal tokens). Each import identity
// now reads only its own answers.
func TestReadersNotSharedAcrossNamespaces(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	nsA := fmt.Sprintf("rd%d", rand.IntN(1_000_000))
	nsB := nsA + "-pay"
	for _, ns := range []string{nsA, nsB} {
		if err := mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = mgmt.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	}
	attacker := tokenClient(t, newToken(t, nsA, "pay-edge", time.Hour)[fleetv1alpha1.KeyToken])
	victim := tokenClient(t, newToken(t, nsB, "edge", time.Hour)[fleetv1alpha1.KeyToken])

	register := func(c client.Client, ns, token, clientID string, labels map[string]string) *fleetv1alpha1.ClusterRegistration {
		t.Helper()
		cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "request-",
			Labels:      map[string]string{fleetv1alpha1.TokenLabel: token},
			Annotations: map[string]string{names.SecretNameAnnotation: names.SecretNameLengthPrefixed}},
			Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: clientID, ClientRandom: randomHex(), ClusterLabels: labels}}
		if err := c.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		return cr
	}
	decided := func(cr *fleetv1alpha1.ClusterRegistration) *metav1.Condition {
		t.Helper()
		var c *metav1.Condition
		eventually(t, 30*time.Second, func() error {
			got := &fleetv1alpha1.ClusterRegistration{}
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
				return err
			}
			if c = meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionGranted); c == nil {
				return fmt.Errorf("undecided")
			}
			return nil
		})
		return c
	}
	// The attacker registers first, refused (a reserved label) but answered, in every shard
	// (a few dozen random secret names cover the 16 shards with near certainty).
	var mine []*fleetv1alpha1.ClusterRegistration
	for range 48 {
		mine = append(mine, register(attacker, nsA, "pay-edge", "attacker", map[string]string{fleetv1alpha1.LabelPrefix + "x": "y"}))
	}
	for _, cr := range mine {
		decided(cr)
	}
	vcr := register(victim, nsB, "edge", "team-b-cluster", nil)
	if c := decided(vcr); c.Status != metav1.ConditionTrue {
		t.Fatalf("the victim's registration was not granted: %+v", c)
	}
	answer := client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace, Name: names.RegistrationSecretName(vcr.Spec.ClientID, vcr.Spec.ClientRandom)}
	eventually(t, 10*time.Second, func() error { return victim.Get(ctx, answer, &corev1.Secret{}) })
	if err := attacker.Get(ctx, answer, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Fatalf("another namespace's import identity reading the answer: %v; want Forbidden", err)
	}
}
