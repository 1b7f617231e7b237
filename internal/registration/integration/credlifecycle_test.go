package integration

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/internal/registration/names"
)

// importCluster creates the Cluster ws/name imported with a kubeconfig for the downstream
// cluster (extra: more keys of its kubeconfig secret, e.g. its own apiServerURL/CA) and waits
// until drover has deployed the agent's installation; it returns the agent namespace.
func importCluster(t *testing.T, ws, name string, extra map[string][]byte) string {
	t.Helper()
	ctx := t.Context()
	kubeconfig, err := local.Kubeconfig(downstream.Config)
	if err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{fleetv1alpha1.KeyKubeconfig: kubeconfig}
	maps.Copy(data, extra)
	if err := mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "kc-" + name}, Data: data}); err != nil {
		t.Fatal(err)
	}
	agentNS := name + "-" + ws
	c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc-" + name, AgentNamespace: agentNS}}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = downstream.Client.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNS}})
	})
	eventually(t, 30*time.Second, func() error {
		if c := getCluster(t, ws, name); !meta.IsStatusConditionTrue(c.Status.Conditions, fleetv1alpha1.ConditionImported) {
			return fmt.Errorf("not imported: %+v", c.Status.Conditions)
		}
		return downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.BootstrapSecret}, &corev1.Secret{})
	})
	return agentNS
}

// conditionReasons records each reason the Cluster's condition typ takes from now on. A watch
// sees every status write, so a reason that lasts only a moment is recorded too.
func conditionReasons(t *testing.T, ws, name, typ string) func() []string {
	t.Helper()
	wc, err := client.NewWithWatch(mgmt.Config, client.Options{Scheme: register.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(t.Context(), &fleetv1alpha1.ClusterList{}, client.InNamespace(ws), client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var seen []string
	go func() {
		for ev := range w.ResultChan() {
			c, ok := ev.Object.(*fleetv1alpha1.Cluster)
			if !ok {
				continue
			}
			if cond := meta.FindStatusCondition(c.Status.Conditions, typ); cond != nil {
				mu.Lock()
				if len(seen) == 0 || seen[len(seen)-1] != cond.Reason {
					seen = append(seen, cond.Reason)
				}
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// rejected waits until the management API server rejects token as unauthenticated (its
// ServiceAccount is gone, which the API server treats like an expired token).
func rejected(t *testing.T, what string, token []byte) {
	t.Helper()
	c := tokenClient(t, token)
	eventually(t, 20*time.Second, func() error {
		err := c.List(t.Context(), &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace("default"))
		if apierrors.IsUnauthorized(err) {
			return nil
		}
		return fmt.Errorf("%s: got %w, want Unauthorized", what, err)
	})
}

// waitHeartbeatAfter waits for a check-in of the Cluster's agent later than since.
func waitHeartbeatAfter(t *testing.T, ws, name string, since time.Time) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		if c := getCluster(t, ws, name); c.Status.Agent.LastSeen == nil || !c.Status.Agent.LastSeen.After(since) {
			return fmt.Errorf("no heartbeat after %s (last %v)", since, c.Status.Agent.LastSeen)
		}
		return nil
	})
}

func renewalRegistration(ns, clientID string) *fleetv1alpha1.ClusterRegistration {
	return &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: names.RenewalPrefix},
		Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: clientID, ClientRandom: "0123456789abcdef0123"}}
}

// TestImportedAgentRebootstrapped: the agent of an imported cluster was away for so long that
// both its request token and its renewal identity's token lapsed (their ServiceAccounts are
// deleted here: the API server then rejects the tokens as it does expired ones, and real tokens
// cannot be made to expire within a test). The agent comes back, cannot register and says so
// downstream; drover sees from the last check-in that the renewal identity may have lapsed
// (condition and Warning event), deploys a new bootstrap secret without anyone asking, and the
// running agent registers with it on its next attempt.
func TestImportedAgentRebootstrapped(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	const name = "lapsed"
	agentNS := importCluster(t, ws, name, nil)
	a := startAgent(t, downstream.Config, agentNS, "")
	cred := credential(t, downstream.Client, agentNS)
	clusterNS := string(cred[fleetv1alpha1.KeyDeploymentNamespace])
	if got := string(cred[fleetv1alpha1.KeyClusterName]); got != name || len(cred[fleetv1alpha1.KeyRenewalToken]) == 0 {
		t.Fatalf("agent registered as %q (renewal token: %d bytes), want %s with a renewal token", got, len(cred[fleetv1alpha1.KeyRenewalToken]), name)
	}
	waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonCredentialCurrent, 30*time.Second)

	a.stop()
	for _, sa := range []string{string(cred[fleetv1alpha1.KeyServiceAccount]), names.RenewalServiceAccount} {
		if err := mgmt.Client.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: sa}}); err != nil {
			t.Fatal(err)
		}
	}
	rejected(t, "old request token", cred[fleetv1alpha1.KeyToken])
	rejected(t, "old renewal token", cred[fleetv1alpha1.KeyRenewalToken])

	// The agent is back: neither credential works and there is no bootstrap secret.
	startAgent(t, downstream.Config, agentNS, "")
	eventually(t, 60*time.Second, func() error {
		if st := agentStatus(t, downstream.Client, agentNS); st["reason"] != fleetv1alpha1.ReasonCredentialRevoked {
			return fmt.Errorf("agent status %v, want %s", st, fleetv1alpha1.ReasonCredentialRevoked)
		}
		return nil
	})
	if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.BootstrapSecret}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("bootstrap secret before drover saw the renewal lapse: got %v, want NotFound", err)
	}

	// Away for longer than half the renewal token's life (30 days) as the cluster controller
	// counts it: the suite cannot wait that long, so the last check-in is moved back (the agent
	// cannot check in to overwrite it).
	imported := conditionReasons(t, ws, name, fleetv1alpha1.ConditionImported)
	c := getCluster(t, ws, name)
	before := c.DeepCopy()
	c.Status.Agent.LastSeen = &metav1.Time{Time: time.Now().Add(-16 * 24 * time.Hour).Truncate(time.Second)}
	if err := mgmt.Client.Status().Patch(ctx, c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	cond := waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonRenewalExpired, 30*time.Second)
	if cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "new bootstrap secret") {
		t.Errorf("RenewalExpired condition %s %q does not say that drover deploys a new bootstrap secret", cond.Status, cond.Message)
	}
	waitEvent(t, ws, name, fleetv1alpha1.ReasonRenewalExpired)

	// The running agent picks up the new bootstrap secret and registers again through it.
	var renewed map[string][]byte
	eventually(t, 90*time.Second, func() error {
		s := &corev1.Secret{}
		if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.CredentialSecret}, s); err != nil {
			return err
		}
		if renewed = s.Data; string(renewed[fleetv1alpha1.KeyServiceAccount]) == string(cred[fleetv1alpha1.KeyServiceAccount]) {
			return fmt.Errorf("credential still for %s", renewed[fleetv1alpha1.KeyServiceAccount])
		}
		return nil
	})
	if got := string(renewed[fleetv1alpha1.KeyClusterName]); got != name || string(renewed[fleetv1alpha1.KeyDeploymentNamespace]) != clusterNS {
		t.Errorf("registered again as %s in %s, want %s in %s", got, renewed[fleetv1alpha1.KeyDeploymentNamespace], name, clusterNS)
	}
	if sa := string(renewed[fleetv1alpha1.KeyServiceAccount]); strings.HasPrefix(sa, names.RenewalPrefix) {
		t.Errorf("request identity %s comes from a renewal: the renewal identity had lapsed", sa)
	}
	cond = waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonReregistered, 30*time.Second)
	if cond.Status != metav1.ConditionTrue {
		t.Errorf("AgentCredential %s after the agent came back, want True", cond.Status)
	}
	waitHeartbeatAfter(t, ws, name, time.Now().Add(-time.Second))
	eventually(t, 30*time.Second, func() error {
		imp := conditionOf(getCluster(t, ws, name).Status.Conditions, fleetv1alpha1.ConditionImported)
		if imp == nil || imp.Status != metav1.ConditionTrue || imp.Reason != fleetv1alpha1.ReasonSucceeded {
			return fmt.Errorf("Imported %+v, want True/%s once the agent is back", imp, fleetv1alpha1.ReasonSucceeded)
		}
		return nil
	})
	if seen := imported(); !slices.Contains(seen, fleetv1alpha1.ReasonRebootstrapped) {
		t.Errorf("Imported reasons %v: never %s", seen, fleetv1alpha1.ReasonRebootstrapped)
	}
	// The agent deletes the bootstrap secret once the credential is persisted (asynchronously).
	eventually(t, 30*time.Second, func() error {
		err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.BootstrapSecret}, &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("bootstrap secret after registering: got %w, want NotFound", err)
	})
	// A fresh renewal identity: the next long absence needs no bootstrap.
	ren := tokenClient(t, renewed[fleetv1alpha1.KeyRenewalToken])
	check(t, "new renewal identity: register its cluster again", true,
		ren.Create(ctx, renewalRegistration(clusterNS, getCluster(t, ws, name).Spec.ClientID), client.DryRunAll))
}

// TestImportedSlowAgentGetsFreshBootstrap: the agent of an imported cluster is slow to start,
// and the import token drover put in its bootstrap secret gets older than its life before the
// agent's first start (its ClusterRegistrationToken's TTL is cut to a second, so the token
// controller expires it as it does at the end of its life). drover keeps the bootstrap secret
// fresh while the agent has not checked in, so the late agent still registers.
func TestImportedSlowAgentGetsFreshBootstrap(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	const name = "slow"
	agentNS := importCluster(t, ws, name, nil)
	boot := &corev1.Secret{}
	if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.BootstrapSecret}, boot); err != nil {
		t.Fatal(err)
	}
	first := boot.Data[fleetv1alpha1.KeyToken]
	tok := &fleetv1alpha1.ClusterRegistrationToken{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: names.ImportTokenName(name)}, tok); err != nil {
		t.Fatal(err)
	}
	firstUID := tok.UID
	before := tok.DeepCopy()
	tok.Spec.TTL = &metav1.Duration{Duration: time.Second}
	if err := mgmt.Client.Patch(ctx, tok, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	rejected(t, "expired import token", first)

	var fresh []byte
	eventually(t, 60*time.Second, func() error {
		if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.BootstrapSecret}, boot); err != nil {
			return err
		}
		if fresh = boot.Data[fleetv1alpha1.KeyToken]; bytes.Equal(fresh, first) {
			return fmt.Errorf("bootstrap secret still holds the expired import token")
		}
		return nil
	})
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: names.ImportTokenName(name)}, tok); err != nil || tok.UID == firstUID {
		t.Errorf("import token after expiry: %v (same token: %v), want a new one", err, tok.UID == firstUID)
	}
	imp := tokenClient(t, fresh)
	check(t, "fresh import token: create a ClusterRegistration", true, imp.Create(ctx, &fleetv1alpha1.ClusterRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-", Labels: map[string]string{fleetv1alpha1.TokenLabel: names.ImportTokenName(name)}},
		Spec:       fleetv1alpha1.ClusterRegistrationSpec{ClientID: "probe", ClientRandom: "0123456789abcdef0123"}}, client.DryRunAll))

	// The agent starts at last.
	startAgent(t, downstream.Config, agentNS, "")
	cred := credential(t, downstream.Client, agentNS)
	if got := string(cred[fleetv1alpha1.KeyClusterName]); got != name {
		t.Errorf("agent registered as cluster %q, want %s", got, name)
	}
	waitHeartbeatAfter(t, ws, name, time.Time{})
	if c := conditionOf(getCluster(t, ws, name).Status.Conditions, fleetv1alpha1.ConditionImported); c == nil || c.Status != metav1.ConditionTrue || c.Reason != fleetv1alpha1.ReasonSucceeded {
		t.Errorf("Imported %+v, want True/%s", c, fleetv1alpha1.ReasonSucceeded)
	}
}

// TestOldAgentRoleUpdated: a cluster registered by a drover from before the agent's upstream
// rights were narrowed has a request identity Role that may read every Secret and ConfigMap in
// its cluster namespace, no renewal identity, and no AgentCredential condition. When its agent
// is first seen, drover updates the Role to the current rules, once, and creates the renewal
// identity, whose token the old credential then gets on its next renewal.
func TestOldAgentRoleUpdated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	clientID := "oldrole-" + ws
	agentNS, cred, a := registerAgent(t, ws, clientID)
	name, clusterNS, sa := string(cred[fleetv1alpha1.KeyClusterName]), string(cred[fleetv1alpha1.KeyDeploymentNamespace]), string(cred[fleetv1alpha1.KeyServiceAccount])
	waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonCredentialCurrent, 30*time.Second)
	a.stop()

	// The state an older drover left: its Role (as it wrote it), no renewal identity, no
	// AgentCredential condition; the old agent's credential has no renewal token.
	role := &rbacv1.Role{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: clusterNS, Name: names.AgentRole}, role); err != nil {
		t.Fatal(err)
	}
	fleet := fleetv1alpha1.GroupVersion.Group
	role.Rules = []rbacv1.PolicyRule{
		{APIGroups: []string{fleet}, Resources: []string{"bundledeployments"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{fleet}, Resources: []string{"bundledeployments/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{sa}, Verbs: []string{"create"}},
	}
	if err := mgmt.Client.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		o.SetNamespace(clusterNS)
		o.SetName(names.RenewalServiceAccount)
		if err := mgmt.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	stored := &corev1.Secret{}
	if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.CredentialSecret}, stored); err != nil {
		t.Fatal(err)
	}
	delete(stored.Data, fleetv1alpha1.KeyRenewalToken)
	delete(stored.Data, fleetv1alpha1.KeyRenewalTokenExpiry)
	if err := downstream.Client.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	req := tokenClient(t, cred[fleetv1alpha1.KeyToken])
	eventually(t, 20*time.Second, func() error {
		return req.List(ctx, &corev1.SecretList{}, client.InNamespace(clusterNS)) // the old rights are in force
	})
	c := getCluster(t, ws, name)
	before := c.DeepCopy()
	meta.RemoveStatusCondition(&c.Status.Conditions, fleetv1alpha1.ConditionAgentCredential)
	if err := mgmt.Client.Status().Patch(ctx, c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}

	eventually(t, 30*time.Second, func() error {
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(role), role); err != nil {
			return err
		}
		for _, r := range role.Rules {
			if slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "configmaps") {
				return fmt.Errorf("agent Role still grants %v on %v", r.Verbs, r.Resources)
			}
		}
		if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.Resources, "serviceaccounts/token") && slices.Contains(r.ResourceNames, names.RenewalServiceAccount) && slices.Contains(r.ResourceNames, sa)
		}) {
			return fmt.Errorf("agent Role %+v: no right to request its own and the renewal identity's tokens", role.Rules)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		if conditionOf(getCluster(t, ws, name).Status.Conditions, fleetv1alpha1.ConditionAgentCredential) == nil {
			return fmt.Errorf("no AgentCredential condition after the update")
		}
		return nil
	})
	eventually(t, 20*time.Second, func() error {
		for _, list := range []client.ObjectList{&corev1.SecretList{}, &corev1.ConfigMapList{}} {
			if err := req.List(ctx, list, client.InNamespace(clusterNS)); !apierrors.IsForbidden(err) {
				return fmt.Errorf("request identity lists %T: got %w, want Forbidden", list, err)
			}
		}
		if err := watchSecrets(t, cred[fleetv1alpha1.KeyToken], clusterNS); !apierrors.IsForbidden(err) {
			return fmt.Errorf("request identity watches Secrets: got %w, want Forbidden", err)
		}
		return nil
	})
	check(t, "updated request identity: list its BundleDeployments", true, req.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(clusterNS)))

	// The old credential gets a renewal token when the agent renews it.
	opts := register.Options{Downstream: downstream.Client, Namespace: agentNS, ClientID: clientID}
	got, err := register.Ensure(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got.Registered {
		t.Error("the old credential was replaced by a new registration; want it kept")
	}
	if err := got.Renew(ctx, opts, time.Hour); err != nil {
		t.Fatal(err)
	}
	renewal := credential(t, downstream.Client, agentNS)[fleetv1alpha1.KeyRenewalToken]
	if len(renewal) == 0 {
		t.Fatal("no renewal token after the renewal")
	}
	check(t, "renewal identity: register its cluster again", true,
		tokenClient(t, renewal).Create(ctx, renewalRegistration(clusterNS, clientID), client.DryRunAll))
}

// TestImportedAgentFollowsCARotation: the management API server's CA rotates and its URL stays
// the same (a proxy with a new certificate stands in for the restarted API server). The agent
// of an imported cluster can no longer trust it; drover shows that the agent is not checking
// in (condition and Warning event). Once the new CA is published where the cluster's endpoint is
// set (the server writes it on start; here the cluster's own apiServerCA), drover redeploys the
// bootstrap secret and the running agent registers again at the same URL with the new CA.
func TestImportedAgentFollowsCARotation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	const name = "rotated"
	proxy := newCAProxy(t, mgmt.Config)
	oldCA := proxy.CA()
	agentNS := importCluster(t, ws, name, map[string][]byte{fleetv1alpha1.KeyAPIServerURL: []byte(proxy.URL), fleetv1alpha1.KeyAPIServerCA: oldCA})
	startAgent(t, downstream.Config, agentNS, "")
	cred := credential(t, downstream.Client, agentNS)
	if string(cred[fleetv1alpha1.KeyAPIServerURL]) != proxy.URL || !bytes.Equal(cred[fleetv1alpha1.KeyAPIServerCA], oldCA) {
		t.Fatalf("credential for %s, want the proxy %s with its CA", cred[fleetv1alpha1.KeyAPIServerURL], proxy.URL)
	}
	waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonCredentialCurrent, 30*time.Second)

	newCA := proxy.rotate(t)
	cond := waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonCredentialExpired, 3*testRequestTokenTTL+20*time.Second)
	if cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "last checked in") {
		t.Errorf("AgentCredential %s %q does not say when the agent last checked in", cond.Status, cond.Message)
	}
	waitEvent(t, ws, name, fleetv1alpha1.ReasonCredentialExpired)

	kc := &corev1.Secret{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "kc-" + name}, kc); err != nil {
		t.Fatal(err)
	}
	kc.Data[fleetv1alpha1.KeyAPIServerCA] = newCA
	if err := mgmt.Client.Update(ctx, kc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if got := getCluster(t, ws, name).Status.APIServerCAHash; got != config.CAHash(newCA) {
			return fmt.Errorf("status.apiServerCAHash %s, want the new CA's", got)
		}
		return nil
	})
	eventually(t, 60*time.Second, func() error {
		s := &corev1.Secret{}
		if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.CredentialSecret}, s); err != nil {
			return err
		}
		if !bytes.Equal(s.Data[fleetv1alpha1.KeyAPIServerCA], newCA) {
			return fmt.Errorf("credential still trusts the old CA")
		}
		if got := string(s.Data[fleetv1alpha1.KeyAPIServerURL]); got != proxy.URL {
			return fmt.Errorf("credential for %s, want the same URL %s", got, proxy.URL)
		}
		return nil
	})
	cond = waitCredentialCondition(t, ws, name, fleetv1alpha1.ReasonReregistered, 30*time.Second)
	if cond.Status != metav1.ConditionTrue {
		t.Errorf("AgentCredential %s after the agent came back, want True", cond.Status)
	}
	waitHeartbeatAfter(t, ws, name, time.Now().Add(-time.Second))
	if c := conditionOf(getCluster(t, ws, name).Status.Conditions, fleetv1alpha1.ConditionImported); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Imported %+v, want True", c)
	}
}
