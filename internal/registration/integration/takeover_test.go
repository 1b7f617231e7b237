package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// allowToken annotates the Cluster as an admin does to let a registration with token take it
// over (an agent re-installed with a new token).
func allowToken(t *testing.T, ws, cluster, token string) {
	t.Helper()
	c := getCluster(t, ws, cluster)
	patch := client.MergeFrom(c.DeepCopy())
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, fleetv1alpha1.AllowRegistrationTokenAnnotation, token)
	if err := mgmt.Client.Patch(t.Context(), c, patch); err != nil {
		t.Fatal(err)
	}
}

// TestRegistrationTakeoverRefused: a registered cluster's clientID is no secret, so a
// registration of it with another token of the workspace is refused (ClusterAlreadyRegistered)
// and leaves the cluster's registration and agent alone; with the same token it is granted; an
// admin's allowance grants the refused registration (through the Cluster watch) and is used once.
func TestRegistrationTakeoverRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	clientID := "takeover-" + ws
	values := newToken(t, ws, "owner", time.Hour)
	agentNS := downstreamNamespace(t, values)
	startAgent(t, downstream.Config, agentNS, clientID)
	name := string(credential(t, downstream.Client, agentNS)[fleetv1alpha1.KeyClusterName])
	eventually(t, 30*time.Second, func() error {
		if getCluster(t, ws, name).Status.Agent.LastSeen == nil {
			return fmt.Errorf("agent of %s has not checked in", name)
		}
		return nil
	})
	if got := getCluster(t, ws, name).Annotations[fleetv1alpha1.RegistrationTokenAnnotation]; got == "" {
		t.Fatalf("Cluster %s does not record the token it was registered with", name)
	}

	register := func(token string, tokenValues map[string][]byte) *fleetv1alpha1.ClusterRegistration {
		t.Helper()
		cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
			Labels: map[string]string{fleetv1alpha1.TokenLabel: token}},
			Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: clientID, ClientRandom: "0123456789abcdef0123" + token}}
		if err := tokenClient(t, tokenValues[fleetv1alpha1.KeyToken]).Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		return cr
	}
	granted := func(cr *fleetv1alpha1.ClusterRegistration) (*metav1.Condition, error) {
		got := &fleetv1alpha1.ClusterRegistration{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
			return nil, err
		}
		return conditionOf(got.Status.Conditions, fleetv1alpha1.ConditionGranted), nil
	}

	// The token the cluster was registered with may register it again (an agent that lost its
	// credential before storing it).
	again := register("owner", values)
	eventually(t, 30*time.Second, func() error {
		if c, err := granted(again); err != nil || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("re-registration with the owner token: Granted %+v (%w)", c, err)
		}
		return nil
	})

	// Another token of the workspace (leaked, say) claims the registered clientID.
	other := newToken(t, ws, "other", time.Hour)
	theft := register("other", other)
	eventually(t, 30*time.Second, func() error {
		c, err := granted(theft)
		if err != nil || c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonClusterRegistered {
			return fmt.Errorf("Granted condition %+v (%w), want False/%s", c, err, fleetv1alpha1.ReasonClusterRegistered)
		}
		if !strings.Contains(c.Message, fleetv1alpha1.AllowRegistrationTokenAnnotation+"=other") {
			t.Errorf("refusal %q does not say how to allow the token", c.Message)
		}
		return nil
	})
	// The owner's registration and request identity are untouched.
	if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(again), &fleetv1alpha1.ClusterRegistration{}); err != nil {
		t.Errorf("the cluster's own registration %s: %v", again.Name, err)
	}
	if evs := events(t, ws, again.Name); len(evs) > 0 {
		for _, e := range evs {
			if e.Reason == fleetv1alpha1.EventRegistrationSuperseded {
				t.Errorf("the refused registration superseded the cluster's own: %s", e.Note)
			}
		}
	}

	// An admin allows "other" (the same cluster reinstalled, say): the registration refused
	// with it is granted while its agent still waits, and the Cluster is registered with it.
	allowToken(t, ws, name, "other")
	eventually(t, 30*time.Second, func() error {
		if c, err := granted(theft); err != nil || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("registration with the allowed token: Granted %+v (%w)", c, err)
		}
		return nil
	})
	c := getCluster(t, ws, name)
	otherTok := &fleetv1alpha1.ClusterRegistrationToken{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "other"}, otherTok); err != nil {
		t.Fatal(err)
	}
	if c.Annotations[fleetv1alpha1.RegistrationTokenAnnotation] != string(otherTok.UID) || c.Annotations[fleetv1alpha1.AllowRegistrationTokenAnnotation] != "" {
		t.Errorf("after the allowed takeover: annotations %v, want the token %s recorded and the allowance removed", c.Annotations, otherTok.UID)
	}
}
