package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/registration/names"
)

// waitCredentialCondition waits for the Cluster's AgentCredential condition to have reason.
func waitCredentialCondition(t *testing.T, ws, name, reason string, timeout time.Duration) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	eventually(t, timeout, func() error {
		cond = conditionOf(getCluster(t, ws, name).Status.Conditions, fleetv1alpha1.ConditionAgentCredential)
		if cond == nil || cond.Reason != reason || cond.Message == "" {
			return fmt.Errorf("AgentCredential condition %+v, want reason %s", cond, reason)
		}
		return nil
	})
	return cond
}

// waitEvent waits for an Event with reason about the Cluster ws/name.
func waitEvent(t *testing.T, ws, name, reason string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		var list eventsv1.EventList
		if err := mgmt.Client.List(t.Context(), &list, client.InNamespace(ws)); err != nil {
			return err
		}
		if slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool { return e.Regarding.Name == name && e.Reason == reason }) {
			return nil
		}
		return fmt.Errorf("no %s event for Cluster %s among %d events", reason, name, len(list.Items))
	})
}

// TestAgentRecoversAfterCredentialExpiry: an agent away for longer than its request token lives
// comes back on its own. Its request token is rejected (here its ServiceAccount is deleted, which
// the API server treats like expiry: real tokens cannot be made to live under 10 minutes, so the
// suite's request token lifetime is only what the controllers assume), its bootstrap secret is
// long gone, and it registers again with the renewal identity it kept. Meanwhile the Cluster
// says why (condition and Warning event), and afterwards that it re-registered.
func TestAgentRecoversAfterCredentialExpiry(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	clientID := "renew-" + ws
	agentNS, cred, a := registerAgent(t, ws, clientID)
	name, clusterNS := string(cred[fleetv1alpha1.KeyClusterName]), string(cred[fleetv1alpha1.KeyDeploymentNamespace])
	waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonCredentialCurrent, 30*time.Second)
	if len(cred[fleetv1alpha1.KeyRenewalToken]) == 0 {
		t.Fatal("the credential holds no renewal token")
	}

	a.stop()
	// Offline for 3x the request token's life (as the controllers count it).
	cond := waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonCredentialExpired, 3*testRequestTokenTTL+20*time.Second)
	if !strings.Contains(cond.Message, "renewal identity") {
		t.Errorf("CredentialExpired message %q does not say how the agent recovers", cond.Message)
	}
	waitEvent(t, ws, name, fleetv1alpha1.ReasonCredentialExpired)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: string(cred[fleetv1alpha1.KeyServiceAccount])}}
	if err := mgmt.Client.Delete(ctx, sa); err != nil {
		t.Fatal(err)
	}
	old := tokenClient(t, cred[fleetv1alpha1.KeyToken])
	eventually(t, 20*time.Second, func() error {
		if err := old.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(clusterNS)); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("old request token: got %w, want Unauthorized", err)
		}
		return nil
	})
	if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.BootstrapSecret}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("bootstrap secret: got %v, want NotFound (the agent must recover without it)", err)
	}

	startAgent(t, downstream.Config, agentNS, clientID)
	var renewed map[string][]byte
	eventually(t, 60*time.Second, func() error {
		renewed = credential(t, downstream.Client, agentNS)
		if string(renewed[fleetv1alpha1.KeyServiceAccount]) == sa.Name {
			return fmt.Errorf("credential still for %s", sa.Name)
		}
		return nil
	})
	if !strings.HasPrefix(string(renewed[fleetv1alpha1.KeyServiceAccount]), names.RenewalPrefix) || string(renewed[fleetv1alpha1.KeyDeploymentNamespace]) != clusterNS ||
		string(renewed[fleetv1alpha1.KeyClusterName]) != name {
		t.Errorf("renewed credential for %s/%s as %s, want cluster %s (%s) through a renewal", renewed[fleetv1alpha1.KeyClusterName],
			renewed[fleetv1alpha1.KeyDeploymentNamespace], renewed[fleetv1alpha1.KeyServiceAccount], name, clusterNS)
	}
	waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonReregistered, 30*time.Second)
	waitEvent(t, ws, name, fleetv1alpha1.ReasonReregistered)
	seen := getCluster(t, ws, name).Status.Agent.LastSeen
	eventually(t, 30*time.Second, func() error {
		if c := getCluster(t, ws, name); c.Status.Agent.LastSeen == nil || !c.Status.Agent.LastSeen.After(seen.Time) {
			return fmt.Errorf("no heartbeat after recovery (last %v)", c.Status.Agent.LastSeen)
		}
		return nil
	})
	// One registration left: the renewal superseded the original one.
	eventually(t, 20*time.Second, func() error {
		if n, m := countRegistrations(t, ws), countRegistrations(t, clusterNS); n != 0 || m != 1 {
			return fmt.Errorf("%d registrations in the workspace and %d in the cluster namespace, want 0 and 1", n, m)
		}
		return nil
	})

	t.Run("the renewal identity can only register its own cluster", func(t *testing.T) {
		ren := tokenClient(t, renewed[fleetv1alpha1.KeyRenewalToken])
		reg := func(ns string) *fleetv1alpha1.ClusterRegistration {
			return &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: names.RenewalPrefix},
				Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: clientID, ClientRandom: "0123456789abcdef0123"}}
		}
		statusPatch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"agent":{"namespace":"x"}}}`))
		checks := []struct {
			name    string
			allowed bool
			err     error
		}{
			{"create a ClusterRegistration in its cluster namespace", true, ren.Create(ctx, reg(clusterNS), client.DryRunAll)},
			{"create a ClusterRegistration in the workspace", false, ren.Create(ctx, reg(ws), client.DryRunAll)},
			{"list BundleDeployments", false, ren.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(clusterNS))},
			{"list ClusterRegistrations", false, ren.List(ctx, &fleetv1alpha1.ClusterRegistrationList{}, client.InNamespace(clusterNS))},
			{"list secrets in its namespace", false, ren.List(ctx, &corev1.SecretList{}, client.InNamespace(clusterNS))},
			{"list registration secrets", false, ren.List(ctx, &corev1.SecretList{}, client.InNamespace(fleetv1alpha1.SystemRegistrationNamespace))},
			{"patch its Cluster status", false, ren.Status().Patch(ctx, &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}}, statusPatch)},
			{"create a token for the request identity", false, ren.SubResource("token").Create(ctx,
				&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: string(renewed[fleetv1alpha1.KeyServiceAccount])}}, tokenRequest())},
		}
		for _, c := range checks {
			check(t, "renewal: "+c.name, c.allowed, c.err)
		}
	})
}

// TestImportTokenLivesAsLongAsItsToken: the import token in a ClusterRegistrationToken's values
// (what a Helm install copies) is valid for the token's whole TTL, not an hour: an agent that
// starts late still registers.
func TestImportTokenLivesAsLongAsItsToken(t *testing.T) {
	t.Parallel()
	ws := mgmt.Namespace(t)
	values := newToken(t, ws, "long", 3*time.Hour)
	parts := strings.Split(string(values[fleetv1alpha1.KeyToken]), ".")
	if len(parts) != 3 {
		t.Fatalf("import token is not a JWT (%d parts)", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(time.Unix(claims.Exp, 0)); left < 170*time.Minute {
		t.Errorf("import token expires in %s, want the token's TTL (3h)", left.Round(time.Minute))
	}
}

// TestAgentMovesToNewEndpoint: the management API server URL changed and the admin re-pointed a
// Helm-installed agent (helm upgrade --set apiServerURL=..., keeping the old, long expired import
// token): the running agent notices the bootstrap secret, registers again at the new URL with its
// renewal identity and works from there.
func TestAgentMovesToNewEndpoint(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	clientID := "move-" + ws
	agentNS, cred, _ := registerAgent(t, ws, clientID)
	name := string(cred[fleetv1alpha1.KeyClusterName])
	eventually(t, 30*time.Second, func() error {
		if c := getCluster(t, ws, name); c.Status.Agent.LastSeen == nil {
			return fmt.Errorf("no heartbeat yet")
		}
		return nil
	})
	// The same API server under another URL stands in for the new endpoint.
	moved := mgmt.Config.Host + "/"
	boot := map[string][]byte{
		fleetv1alpha1.KeyAPIServerURL: []byte(moved), fleetv1alpha1.KeyAPIServerCA: mgmt.Config.CAData,
		fleetv1alpha1.KeyToken: []byte("expired-import-token"), fleetv1alpha1.KeyTokenName: []byte("token"), fleetv1alpha1.KeyClusterNamespace: []byte(ws),
	}
	putBootstrap(t, downstream.Client, agentNS, boot)
	eventually(t, 60*time.Second, func() error {
		got := credential(t, downstream.Client, agentNS)
		if string(got[fleetv1alpha1.KeyAPIServerURL]) != moved {
			return fmt.Errorf("credential still for %q", got[fleetv1alpha1.KeyAPIServerURL])
		}
		if !strings.HasPrefix(string(got[fleetv1alpha1.KeyServiceAccount]), names.RenewalPrefix) {
			return fmt.Errorf("moved without the renewal identity (request identity %s)", got[fleetv1alpha1.KeyServiceAccount])
		}
		return nil
	})
	eventually(t, 20*time.Second, func() error {
		err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.BootstrapSecret}, &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("bootstrap secret still there after the move: %w", err)
	})
	seen := getCluster(t, ws, name).Status.Agent.LastSeen
	eventually(t, 30*time.Second, func() error {
		if c := getCluster(t, ws, name); c.Status.Agent.LastSeen == nil || !c.Status.Agent.LastSeen.After(seen.Time) {
			return fmt.Errorf("no heartbeat after the move (last %v)", c.Status.Agent.LastSeen)
		}
		return nil
	})
}
