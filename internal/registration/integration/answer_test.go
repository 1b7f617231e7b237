package integration

import (
	"errors"
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

// registrar creates registrations as one token's real import identity.
type registrar struct {
	ws, token string
	c         client.Client
}

func newRegistrar(t *testing.T, name string) registrar {
	ws := mgmt.Namespace(t)
	return registrar{ws: ws, token: name, c: tokenClient(t, newToken(t, ws, name, time.Hour)[fleetv1alpha1.KeyToken])}
}

func (r registrar) register(t *testing.T, clientID, random string, labels map[string]string) *fleetv1alpha1.ClusterRegistration {
	t.Helper()
	cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: r.ws, GenerateName: "request-",
		Labels:      map[string]string{fleetv1alpha1.TokenLabel: r.token},
		Annotations: map[string]string{names.SecretNameAnnotation: names.SecretNameLengthPrefixed}},
		Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: clientID, ClientRandom: random, ClusterLabels: labels}}
	if err := r.c.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	return cr
}

// decision waits until cr is granted or refused, and returns its Granted condition.
func decision(t *testing.T, cr *fleetv1alpha1.ClusterRegistration) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	eventually(t, 30*time.Second, func() error {
		got := &fleetv1alpha1.ClusterRegistration{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(cr), got); err != nil {
			return err
		}
		if c = meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionGranted); c == nil {
			return fmt.Errorf("registration %s undecided", cr.Name)
		}
		return nil
	})
	return c
}

func answerOf(cr *fleetv1alpha1.ClusterRegistration) client.ObjectKey {
	return client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace, Name: names.AnswerSecretName(cr.Annotations, cr.Spec.ClientID, cr.Spec.ClientRandom)}
}

func randomHex() string { return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64()) }

// TestAnswerNotSharedByRepeatedNames: a registration's answer Secret is named after its clientID
// and clientRandom, which whoever may list registrations can read. Another registration
// repeating them — refused, grantable in another workspace, or made first — must neither read
// that answer nor change it: it gets SecretNameConflict.
func TestAnswerNotSharedByRepeatedNames(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	victim, attacker := newRegistrar(t, "victim"), newRegistrar(t, "attacker")
	reserved := map[string]string{fleetv1alpha1.LabelPrefix + "x": "y"}
	cannotRead := func(t *testing.T, key client.ObjectKey) {
		t.Helper()
		s := &corev1.Secret{}
		if err := attacker.c.Get(ctx, key, s); !apierrors.IsForbidden(err) {
			t.Errorf("the attacker's import identity reading answer %s: %v (keys %v), want Forbidden", key.Name, err, keys(s.Data))
		}
	}
	granted := victim.register(t, "edge-"+victim.ws, randomHex(), nil)
	if c := decision(t, granted); c.Status != metav1.ConditionTrue {
		t.Fatalf("victim's registration: %+v", c)
	}
	answer := &corev1.Secret{}
	if err := mgmt.Client.Get(ctx, answerOf(granted), answer); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{name: "refused for another reason", labels: reserved, want: fleetv1alpha1.ReasonReservedLabel},
		{name: "grantable in its own workspace", want: fleetv1alpha1.ReasonSecretNameConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := attacker.register(t, granted.Spec.ClientID, granted.Spec.ClientRandom, tc.labels)
			if c := decision(t, cr); c.Status != metav1.ConditionFalse || c.Reason != tc.want {
				t.Fatalf("repeated registration: %+v, want refused with %s", c, tc.want)
			}
			cannotRead(t, answerOf(granted))
			got := &corev1.Secret{}
			if err := mgmt.Client.Get(ctx, answerOf(granted), got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != answer.ResourceVersion {
				t.Errorf("the victim's answer was written (labels %v, keys %v)", got.Labels, keys(got.Data))
			}
		})
	}

	t.Run("made first", func(t *testing.T) {
		clientID, random := "edge-2-"+victim.ws, randomHex()
		squat := attacker.register(t, clientID, random, reserved)
		if c := decision(t, squat); c.Reason != fleetv1alpha1.ReasonReservedLabel {
			t.Fatalf("squatting registration: %+v", c)
		}
		// Its own refusal it may read.
		eventually(t, 10*time.Second, func() error {
			s := &corev1.Secret{}
			if err := attacker.c.Get(ctx, answerOf(squat), s); err != nil {
				return err
			}
			if string(s.Data[fleetv1alpha1.KeyRefusedReason]) != fleetv1alpha1.ReasonReservedLabel {
				return fmt.Errorf("refusal answer keys %v", keys(s.Data))
			}
			return nil
		})
		late := victim.register(t, clientID, random, nil)
		if c := decision(t, late); c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonSecretNameConflict {
			t.Fatalf("registration after the squat: %+v, want refused with %s", c, fleetv1alpha1.ReasonSecretNameConflict)
		}
		s := &corev1.Secret{}
		if err := attacker.c.Get(ctx, answerOf(squat), s); err != nil {
			t.Fatal(err)
		}
		if len(s.Data[fleetv1alpha1.KeyToken]) > 0 || len(s.Data[fleetv1alpha1.KeyRenewalToken]) > 0 {
			t.Errorf("the squatted answer holds the victim's credential (keys %v)", keys(s.Data))
		}
	})
}

// TestRefusedRegistrationExpires: a refused registration is deleted RefusedTTL after its
// refusal, and its answer Secret with it, so refusals cannot pile up objects.
func TestRefusedRegistrationExpires(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRegistrar(t, "token")
	cr := r.register(t, "refused-"+r.ws, randomHex(), map[string]string{fleetv1alpha1.LabelPrefix + "x": "y"})
	if c := decision(t, cr); c.Reason != fleetv1alpha1.ReasonReservedLabel {
		t.Fatalf("registration: %+v", c)
	}
	eventually(t, 10*time.Second, func() error { return mgmt.Client.Get(ctx, answerOf(cr), &corev1.Secret{}) })
	// As if the refusal were older than the TTL (1 h by default): set again whenever a pass of
	// the controller that read the registration before this patch wrote its status after it.
	eventually(t, 60*time.Second, func() error {
		got := &fleetv1alpha1.ClusterRegistration{}
		err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cr), got)
		if err == nil && got.DeletionTimestamp.IsZero() {
			c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionGranted)
			if c == nil {
				return errors.New("no Granted condition")
			}
			if time.Since(c.LastTransitionTime.Time) < time.Hour {
				before := got.DeepCopy()
				c.LastTransitionTime = metav1.NewTime(time.Now().Add(-2 * time.Hour))
				if err := mgmt.Client.Status().Patch(ctx, got, client.MergeFrom(before)); err != nil {
					return fmt.Errorf("backdate the refusal: %w", err)
				}
				return errors.New("refusal backdated")
			}
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("refused registration still there (%w)", err)
		}
		if err := mgmt.Client.Get(ctx, answerOf(cr), &corev1.Secret{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("its answer Secret still there (%w)", err)
		}
		return nil
	})
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
