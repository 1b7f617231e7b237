package integration

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/names"
)

// TestTokenMaxClusters: a token with spec.maxClusters registers that many clusters and no more,
// also when registrations race for the last places; another token's import identity cannot
// register under its name; a cluster that registers again with it counts once, and raising the
// limit lets a waiting one in. Registrations are made as the
// token's real import identity, as an agent makes them.
func TestTokenMaxClusters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	register := limitedToken(t, ws, "two", 2)
	// decided is whether cr was granted, or an error while it is undecided; refused means with
	// the token's reason and a message saying what to do.
	decided := func(cr *fleetv1alpha1.ClusterRegistration) (bool, error) {
		got := &fleetv1alpha1.ClusterRegistration{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
			return false, err
		}
		if got.Status.Granted {
			return true, nil
		}
		c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionGranted)
		if c != nil && c.Status == metav1.ConditionFalse && c.Reason == fleetv1alpha1.ReasonTokenMaxClusters &&
			strings.Contains(c.Message, "--max-clusters") && strings.Contains(c.Message, cr.Spec.ClientID) {
			return false, nil
		}
		return false, fmt.Errorf("registration of %s undecided: %+v", cr.Spec.ClientID, c)
	}

	crs := make([]*fleetv1alpha1.ClusterRegistration, 5)
	var wg sync.WaitGroup
	for i := range crs {
		wg.Go(func() { crs[i] = register(fmt.Sprintf("edge-%d-%s", i, ws)) })
	}
	wg.Wait()
	var granted, refused []string
	eventually(t, 30*time.Second, func() error {
		granted, refused = nil, nil
		for _, cr := range crs {
			ok, err := decided(cr)
			if err != nil {
				return err
			}
			if ok {
				granted = append(granted, cr.Spec.ClientID)
			} else {
				refused = append(refused, cr.Spec.ClientID)
			}
		}
		return nil
	})
	if len(granted) != 2 {
		t.Fatalf("granted %v, refused %v: want exactly 2 granted (spec.maxClusters)", granted, refused)
	}
	for _, id := range refused {
		noClusterFor(t, ws, id)
	}
	tok := &fleetv1alpha1.ClusterRegistrationToken{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "two"}, tok); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(tok.Status.RegisteredClientIDs)); !slices.Equal(got, granted) {
		t.Errorf("status.registeredClientIDs %v, want the granted %v", got, granted)
	}

	// Another token's import identity cannot register under this token's name (and use up its
	// places): the admission policy refuses the label.
	t.Run("another token's import identity", func(t *testing.T) {
		other := tokenClient(t, issueToken(t, &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "other"},
			Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}}})[fleetv1alpha1.KeyToken])
		for _, label := range []string{"two", "othe", "other-x", ""} {
			cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
				Labels:      map[string]string{fleetv1alpha1.TokenLabel: label},
				Annotations: map[string]string{names.SecretNameAnnotation: names.SecretNameLengthPrefixed}},
				Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: "intruder-" + ws, ClientRandom: "0123456789abcdef0123"}}
			err := other.Create(ctx, cr)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "registers only with its own token") {
				t.Errorf("registration labelled %q by token other's import identity: %v, want Forbidden by the admission policy", label, err)
			}
		}
		noClusterFor(t, ws, "intruder-"+ws)
		// Its own label is fine.
		cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
			Labels:      map[string]string{fleetv1alpha1.TokenLabel: "other"},
			Annotations: map[string]string{names.SecretNameAnnotation: names.SecretNameLengthPrefixed}},
			Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: "own-" + ws, ClientRandom: "0123456789abcdef0123"}}
		if err := other.Create(ctx, cr); err != nil {
			t.Errorf("registration with its own token: %v", err)
		}
	})

	t.Run("a registered cluster registers again", func(t *testing.T) {
		cr := register(granted[0])
		eventually(t, 30*time.Second, func() error {
			if ok, err := decided(cr); err != nil || !ok {
				return fmt.Errorf("re-registration of %s not granted: %w", granted[0], err)
			}
			return nil
		})
	})

	t.Run("raising maxClusters lets a waiting one in", func(t *testing.T) {
		if err := mgmt.Client.Patch(ctx, tok, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxClusters":3}}`))); err != nil {
			t.Fatal(err)
		}
		// One of the registrations refused above is granted, without its agent asking again.
		eventually(t, 30*time.Second, func() error {
			var now []string
			for _, cr := range crs {
				if !slices.Contains(refused, cr.Spec.ClientID) {
					continue // granted before; its re-registration superseded (deleted) it
				}
				if ok, err := decided(cr); err != nil {
					return err
				} else if ok {
					now = append(now, cr.Spec.ClientID)
				}
			}
			if len(now) != 1 {
				return fmt.Errorf("refused registrations granted after raising maxClusters to 3: %v, want one", now)
			}
			return nil
		})
		cr := register("edge-new-" + ws)
		eventually(t, 30*time.Second, func() error {
			if ok, err := decided(cr); err != nil || ok {
				return fmt.Errorf("a fourth cluster with maxClusters 3: granted %v (%w), want refused", ok, err)
			}
			return nil
		})
	})
}

// TestTokenPlaceKeptForRefused: a registration that is refused (its Cluster's name is held by a
// Cluster of another clientID) takes no place on its token, so the token still registers as
// many clusters as it says.
func TestTokenPlaceKeptForRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	register := limitedToken(t, ws, "one", 1)
	condition := func(cr *fleetv1alpha1.ClusterRegistration) (*fleetv1alpha1.ClusterRegistration, *metav1.Condition, error) {
		got := &fleetv1alpha1.ClusterRegistration{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
			return nil, nil, err
		}
		return got, meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionGranted), nil
	}

	// Someone holds the Cluster name the registration of "victim" would get.
	victim := "victim-" + ws
	squatter := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: names.ClusterNameForClientID(victim)},
		Spec: fleetv1alpha1.ClusterSpec{ClientID: "squatter-" + ws}}
	if err := mgmt.Client.Create(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	cr := register(victim)
	eventually(t, 30*time.Second, func() error {
		_, c, err := condition(cr)
		if err != nil {
			return err
		}
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonClusterConflict {
			return fmt.Errorf("Granted condition %+v, want False with reason %s", c, fleetv1alpha1.ReasonClusterConflict)
		}
		return nil
	})
	tok := &fleetv1alpha1.ClusterRegistrationToken{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "one"}, tok); err != nil {
		t.Fatal(err)
	}
	if len(tok.Status.RegisteredClientIDs) != 0 {
		t.Errorf("status.registeredClientIDs %v after a refused registration, want none", tok.Status.RegisteredClientIDs)
	}

	// The token's one place is still free.
	ok := register("edge-" + ws)
	eventually(t, 30*time.Second, func() error {
		got, c, err := condition(ok)
		if err != nil {
			return err
		}
		if !got.Status.Granted {
			return fmt.Errorf("registration with the token's free place not granted: %+v", c)
		}
		return nil
	})
}

// limitedToken issues token name in ws with spec.maxClusters n, and returns a function that
// registers a clientID with it as the token's real import identity, as an agent does.
func limitedToken(t *testing.T, ws, name string, n int32) func(clientID string) *fleetv1alpha1.ClusterRegistration {
	values := issueToken(t, &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}, MaxClusters: ptr.To(n)}})
	imp := tokenClient(t, values[fleetv1alpha1.KeyToken])
	return func(clientID string) *fleetv1alpha1.ClusterRegistration {
		cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
			Labels:      map[string]string{fleetv1alpha1.TokenLabel: name},
			Annotations: map[string]string{names.SecretNameAnnotation: names.SecretNameLengthPrefixed}},
			Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: clientID, ClientRandom: fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())}}
		if err := imp.Create(t.Context(), cr); err != nil {
			t.Errorf("the import identity may create registrations: %v", err) // Errorf: called from goroutines
		}
		return cr
	}
}

// TestRefusalReachesAgent: an agent whose registration is refused (its token is full) learns
// why from its answer Secret (its import identity may not read ClusterRegistrations) and
// reports it downstream, with what to do; raising the token's spec.maxClusters then grants
// it, and the credential replaces the refusal.
func TestRefusalReachesAgent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	values := issueToken(t, &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "full"},
		Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}, MaxClusters: ptr.To[int32](1)}})
	registerAgentWithToken(t, ws, values, "first-"+ws)

	// The import identity may not read the registration, so the refusal must come another way.
	imp := tokenClient(t, values[fleetv1alpha1.KeyToken])
	agentNS := downstreamNamespace(t, values)
	startAgent(t, downstream.Config, agentNS, "second-"+ws)
	var st map[string]string
	eventually(t, 30*time.Second, func() error {
		if st = agentStatus(t, downstream.Client, agentNS); st["reason"] != fleetv1alpha1.ReasonTokenMaxClusters {
			return fmt.Errorf("agent status %v, want reason %s", st, fleetv1alpha1.ReasonTokenMaxClusters)
		}
		return nil
	})
	var crs fleetv1alpha1.ClusterRegistrationList
	if err := mgmt.Client.List(ctx, &crs, client.InNamespace(ws)); err != nil {
		t.Fatal(err)
	}
	var cr *fleetv1alpha1.ClusterRegistration
	for i := range crs.Items {
		if crs.Items[i].Spec.ClientID == "second-"+ws {
			cr = &crs.Items[i]
		}
	}
	if cr == nil {
		t.Fatal("no registration of the second cluster")
	}
	if err := imp.Get(ctx, client.ObjectKeyFromObject(cr), &fleetv1alpha1.ClusterRegistration{}); !apierrors.IsForbidden(err) {
		t.Errorf("the import identity reading its registration: %v, want Forbidden", err)
	}
	for _, want := range []string{"ClusterRegistration " + ws + "/" + cr.Name + " was refused by the management cluster (TokenMaxClustersReached)",
		"Token full may register 1 cluster(s)", "--max-clusters"} {
		if !strings.Contains(st["message"], want) {
			t.Errorf("agent status message %q lacks %q", st["message"], want)
		}
	}

	if err := mgmt.Client.Patch(ctx, &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "full"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxClusters":2}}`))); err != nil {
		t.Fatal(err)
	}
	cred := credential(t, downstream.Client, agentNS)
	if len(cred[fleetv1alpha1.KeyToken]) == 0 {
		t.Fatal("the agent's credential has no token")
	}
	answer := &corev1.Secret{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: fleetv1alpha1.SystemRegistrationNamespace,
		Name: names.AnswerSecretName(cr.Annotations, cr.Spec.ClientID, cr.Spec.ClientRandom)}, answer); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	for _, k := range []string{fleetv1alpha1.KeyRefusedReason, fleetv1alpha1.KeyRefusedMessage} {
		if _, ok := answer.Data[k]; ok {
			t.Errorf("the granted answer still carries %s", k)
		}
	}
}
