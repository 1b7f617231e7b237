package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/internal/registration/names"
)

func countRegistrations(t *testing.T, ws string) int {
	t.Helper()
	var list fleetv1alpha1.ClusterRegistrationList
	if err := mgmt.Client.List(t.Context(), &list, client.InNamespace(ws)); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func TestAgentRestartRules(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	agentNS, cred, a := registerAgent(t, ws, "restart-"+ws)
	outer := t // the restarted agent must outlive the subtest that starts it
	if n := countRegistrations(t, ws); n != 1 {
		t.Fatalf("%d registrations after first start, want 1", n)
	}

	t.Run("working credential: no re-registration", func(t *testing.T) {
		a.stop()
		// The first agent may have been stopped before it wrote its status: start clean either way.
		if err := downstream.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: "drover-agent-status"}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		a = startAgent(outer, downstream.Config, agentNS, "restart-"+ws)
		eventually(t, 60*time.Second, func() error {
			if st := agentStatus(t, downstream.Client, agentNS); st["reason"] != fleetv1alpha1.ReasonRegistered {
				return fmt.Errorf("agent status %v", st)
			}
			return nil
		})
		if n := countRegistrations(t, ws); n != 1 {
			t.Errorf("%d registrations after restart, want 1", n)
		}
		if got := credential(t, downstream.Client, agentNS); string(got[fleetv1alpha1.KeyToken]) != string(cred[fleetv1alpha1.KeyToken]) {
			t.Error("restart replaced a working credential")
		}
	})

	t.Run("revoked credential without bootstrap: clear condition, backoff", func(t *testing.T) {
		if err := mgmt.Client.Delete(ctx, getCluster(t, ws, string(cred[fleetv1alpha1.KeyClusterName]))); err != nil {
			t.Fatal(err)
		}
		var st map[string]string
		eventually(t, 60*time.Second, func() error {
			if st = agentStatus(t, downstream.Client, agentNS); st["reason"] != fleetv1alpha1.ReasonCredentialRevoked {
				return fmt.Errorf("agent status %v", st)
			}
			return nil
		})
		if st["message"] == "" {
			t.Error("no message with the condition")
		}
		// Backoff doubles from 1s (test setting): within ~3s at most 2 more attempts.
		first, _ := strconv.Atoi(st["attempts"])
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			n, _ := strconv.Atoi(agentStatus(t, downstream.Client, agentNS)["attempts"])
			if n > first+2 {
				t.Fatalf("attempts went from %d to %d within 3s: hot loop", first, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := countRegistrations(t, ws); n != 0 {
			t.Errorf("%d registrations, want 0 (the agent must not register without a bootstrap secret)", n)
		}
	})
}

// TestAgentLeaderElection runs two agent replicas: only the leader registers and works, and
// when it stops the other takes over with the stored credential, without registering again.
func TestAgentLeaderElection(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	clientID := "ha-" + ws
	ns := downstreamNamespace(t, newToken(t, ws, "token", time.Hour))
	replicas := map[string]*runningAgent{}
	for _, id := range []string{"replica-a", "replica-b"} {
		replicas[id] = startAgent(t, downstream.Config, ns, clientID, func(o *agent.Options) { o.LeaderElection, o.Identity = true, id })
	}
	cred := credential(t, downstream.Client, ns)
	holder := func() string {
		l := &coordinationv1.Lease{}
		if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drover-agent"}, l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var leader string
	eventually(t, 30*time.Second, func() error {
		if leader = holder(); replicas[leader] == nil {
			return fmt.Errorf("lease held by %q", leader)
		}
		return nil
	})
	if n := countRegistrations(t, ws); n != 1 {
		t.Fatalf("%d registrations with two replicas, want 1", n)
	}

	replicas[leader].stop()
	eventually(t, 30*time.Second, func() error {
		if h := holder(); h == leader || replicas[h] == nil {
			return fmt.Errorf("lease held by %q after %s stopped", h, leader)
		}
		return nil
	})
	// The new leader works: it heartbeats to the Cluster with the stored credential.
	name := string(cred[fleetv1alpha1.KeyClusterName])
	var seen time.Time
	if c := getCluster(t, ws, name); c.Status.Agent.LastSeen != nil {
		seen = c.Status.Agent.LastSeen.Time
	}
	eventually(t, 30*time.Second, func() error {
		if c := getCluster(t, ws, name); c.Status.Agent.LastSeen == nil || !c.Status.Agent.LastSeen.After(seen) {
			return fmt.Errorf("no heartbeat after takeover (last %v)", c.Status.Agent.LastSeen)
		}
		return nil
	})
	if n := countRegistrations(t, ws); n != 1 {
		t.Errorf("%d registrations after failover, want 1", n)
	}
	if got := credential(t, downstream.Client, ns); string(got[fleetv1alpha1.KeyToken]) != string(cred[fleetv1alpha1.KeyToken]) {
		t.Error("failover replaced a working credential")
	}
}

func TestTwentyReRegistrationsLeaveOneSet(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	values := newToken(t, ws, "token", time.Hour)
	ns := downstreamNamespace(t, nil)
	opts := register.Options{Downstream: downstream.Client, Namespace: ns, ClientID: "rereg-" + ws}
	var cred *register.Credential
	for i := range 20 {
		putBootstrap(t, downstream.Client, ns, values)
		if err := downstream.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifests.CredentialSecret}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		var err error
		if cred, err = register.Ensure(ctx, opts); err != nil {
			t.Fatalf("registration %d: %v", i, err)
		}
	}
	eventually(t, 20*time.Second, func() error {
		var regs fleetv1alpha1.ClusterRegistrationList
		var sas corev1.ServiceAccountList
		var secrets corev1.SecretList
		if err := mgmt.Client.List(ctx, &regs, client.InNamespace(ws)); err != nil {
			return err
		}
		// Request identities (the cluster's one renewal identity is not per registration).
		if err := mgmt.Client.List(ctx, &sas, client.InNamespace(cred.DeploymentNamespace), client.MatchingLabels{fleetv1alpha1.ManagedLabel: "true"}, client.HasLabels{fleetv1alpha1.RegistrationLabel}); err != nil {
			return err
		}
		if err := mgmt.Client.List(ctx, &secrets, client.InNamespace(fleetv1alpha1.SystemRegistrationNamespace), client.MatchingLabels{fleetv1alpha1.ClusterNamespaceLabel: ws}); err != nil {
			return err
		}
		if len(regs.Items) != 1 || len(sas.Items) != 1 || len(secrets.Items) != 1 {
			return fmt.Errorf("%d registrations, %d request service accounts, %d registration secrets; want 1 each", len(regs.Items), len(sas.Items), len(secrets.Items))
		}
		return nil
	})
	var clusters fleetv1alpha1.ClusterList
	if err := mgmt.Client.List(ctx, &clusters, client.InNamespace(ws)); err != nil || len(clusters.Items) != 1 {
		t.Fatalf("clusters: %v, %d; want 1", err, len(clusters.Items))
	}

	t.Run("the agent renews its request token", func(t *testing.T) {
		old := string(credential(t, downstream.Client, ns)[fleetv1alpha1.KeyToken])
		if err := cred.Renew(ctx, opts, time.Hour); err != nil {
			t.Fatal(err)
		}
		renewed := credential(t, downstream.Client, ns)
		if string(renewed[fleetv1alpha1.KeyToken]) == old {
			t.Fatal("credential secret still holds the old token")
		}
		if err := tokenClient(t, renewed[fleetv1alpha1.KeyToken]).List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(cred.DeploymentNamespace)); err != nil {
			t.Errorf("renewed token: %v", err)
		}
	})
}

func conditionOf(conds []metav1.Condition, typ string) *metav1.Condition {
	return meta.FindStatusCondition(conds, typ)
}

func TestManagerInitiatedImport(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	agentNS := "imported-" + ws
	kubeconfig, err := local.Kubeconfig(downstream.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "kc"}, Data: map[string][]byte{"value": kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "imported"},
		Spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc", AgentNamespace: agentNS}}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = downstream.Client.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNS}})
	})
	eventually(t, 30*time.Second, func() error {
		c = getCluster(t, ws, "imported")
		if !meta.IsStatusConditionTrue(c.Status.Conditions, fleetv1alpha1.ConditionImported) {
			return fmt.Errorf("not imported: %+v", c.Status.Conditions)
		}
		return nil
	})
	for _, name := range []string{manifests.BootstrapSecret} {
		if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: name}, &corev1.Secret{}); err != nil {
			t.Fatalf("bootstrap secret downstream: %v", err)
		}
	}
	startAgent(t, downstream.Config, agentNS, "")
	cred := credential(t, downstream.Client, agentNS)
	if got := string(cred[fleetv1alpha1.KeyClusterName]); got != "imported" {
		t.Errorf("agent registered as cluster %q, want imported", got)
	}
	deployAndWait(t, ws, "imported")

	// The import token drover made for this Cluster sits in the bootstrap Secret downstream:
	// whoever reads it there cannot register another cluster into the workspace with it.
	t.Run("its import token registers no other cluster", func(t *testing.T) {
		tok := &fleetv1alpha1.ClusterRegistrationToken{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: names.ImportTokenName("imported")}, tok); err != nil {
			t.Fatal(err)
		}
		values := &corev1.Secret{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: tok.Status.SecretName}, values); err != nil {
			t.Fatal(err)
		}
		imp := tokenClient(t, values.Data[fleetv1alpha1.KeyToken])
		cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
			Labels:      map[string]string{fleetv1alpha1.TokenLabel: tok.Name},
			Annotations: map[string]string{names.SecretNameAnnotation: names.SecretNameLengthPrefixed}},
			Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: "intruder-" + ws, ClientRandom: "0123456789abcdef0123"}}
		if err := imp.Create(ctx, cr); err != nil {
			t.Fatalf("the import identity may create registrations in its workspace: %v", err)
		}
		eventually(t, 20*time.Second, func() error {
			got := &fleetv1alpha1.ClusterRegistration{}
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
				return err
			}
			c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionGranted)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonTokenForOtherCluster || !strings.Contains(c.Message, "drover token create") {
				return fmt.Errorf("registration with another clientID: Granted %+v, want False/%s", c, fleetv1alpha1.ReasonTokenForOtherCluster)
			}
			return nil
		})
		noClusterFor(t, ws, cr.Spec.ClientID)
	})

	t.Run("changed apiServerURL redeploys the agent", func(t *testing.T) {
		url := mgmt.Config.Host + "/"
		s := &corev1.Secret{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "kc"}, s); err != nil {
			t.Fatal(err)
		}
		s.Data[fleetv1alpha1.KeyAPIServerURL] = []byte(url)
		if err := mgmt.Client.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			if got := getCluster(t, ws, "imported").Status.APIServerURL; got != url {
				return fmt.Errorf("status.apiServerURL %q, want %q", got, url)
			}
			boot := &corev1.Secret{}
			if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.BootstrapSecret}, boot); err != nil {
				return err
			}
			if got := string(boot.Data[fleetv1alpha1.KeyAPIServerURL]); got != url {
				return fmt.Errorf("bootstrap apiServerURL %q, want %q", got, url)
			}
			return nil
		})
	})
}

func TestLocalCluster(t *testing.T) {
	t.Parallel()
	ns := local.DefaultAgentNamespace
	eventually(t, 30*time.Second, func() error {
		c := &fleetv1alpha1.Cluster{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: fleetv1alpha1.LocalWorkspaceNamespace, Name: "local"}, c); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(c.Status.Conditions, fleetv1alpha1.ConditionImported) {
			return fmt.Errorf("local not imported: %+v", c.Status.Conditions)
		}
		return nil
	})
	startAgent(t, mgmt.Config, ns, "")
	cred := credential(t, mgmt.Client, ns)
	if got := string(cred[fleetv1alpha1.KeyClusterName]); got != "local" {
		t.Errorf("local agent registered as %q", got)
	}
	deployAndWait(t, fleetv1alpha1.LocalWorkspaceNamespace, "local")
}

// deployAndWait checks the agent of a registered cluster in: heartbeat, and a BundleDeployment applied.
func deployAndWait(t *testing.T, ws, name string) {
	t.Helper()
	ctx := t.Context()
	c := getCluster(t, ws, name)
	eventually(t, 20*time.Second, func() error {
		if c = getCluster(t, ws, name); c.Status.Agent.LastSeen == nil {
			return fmt.Errorf("no heartbeat")
		}
		return nil
	})
	// Unique per call: "local" is one cluster for every run of the test binary (-count=N).
	bdName := fmt.Sprintf("hello-%d", time.Now().UnixNano())
	bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: c.Status.Namespace, Name: bdName},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "v1", Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: "default"},
			Manifests: rawManifests(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: bdName}})}}
	if err := mgmt.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), bd) })
	eventually(t, 30*time.Second, func() error {
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
			return err
		}
		if bd.Status.AppliedDeploymentID != "v1" {
			return fmt.Errorf("not applied: %+v", bd.Status)
		}
		return nil
	})
}

func TestBadInput(t *testing.T) {
	// Not parallel: the missing-apiServerURL case removes the global setting for a moment;
	// parallel tests wait until this one is done.
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	good, err := local.Kubeconfig(downstream.Config)
	if err != nil {
		t.Fatal(err)
	}
	badCA := *downstream.Config
	badCA.CAData = mgmt.Config.CAData
	wrongCAKubeconfig, err := local.Kubeconfig(&badCA)
	if err != nil {
		t.Fatal(err)
	}

	// A kubeconfig whose exec plugin would leave this file behind if drover ran it.
	ran := filepath.Join(t.TempDir(), "exec-ran")
	execKubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"+
		"clusters: [{name: k, cluster: {server: %q, insecure-skip-tls-verify: true}}]\n"+
		"users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'touch %s'], interactiveMode: Never}}}]\n",
		downstream.Config.Host, ran)

	imports := []struct {
		name, reason string
		data         map[string][]byte
		noConfig     bool
	}{
		{"malformed kubeconfig", fleetv1alpha1.ReasonKubeconfigInvalid, map[string][]byte{"value": []byte("{not a kubeconfig")}, false},
		{"kubeconfig running a command", fleetv1alpha1.ReasonKubeconfigInvalid, map[string][]byte{"value": []byte(execKubeconfig)}, false},
		{"wrong CA", fleetv1alpha1.ReasonCertificateInvalid, map[string][]byte{"value": wrongCAKubeconfig}, false},
		{"missing apiServerURL", fleetv1alpha1.ReasonMissingAPIServerURL, map[string][]byte{"value": good}, true},
	}
	for i, tc := range imports {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noConfig {
				cm := &corev1.ConfigMap{}
				if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: "drover-system", Name: "drover-registration"}, cm); err != nil {
					t.Fatal(err)
				}
				if err := mgmt.Client.Delete(ctx, cm); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := writeConfig(ctx, mgmt.Client, mgmt.Config.Host, mgmt.Config.CAData); err != nil {
						t.Error(err)
					}
				})
			}
			secret := fmt.Sprintf("kc-%d", i)
			if err := mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: secret}, Data: tc.data}); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("bad-%d", i)
			if err := mgmt.Client.Create(ctx, &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
				Spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: secret, AgentNamespace: "bad-" + ws}}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, func() error {
				cond := conditionOf(getCluster(t, ws, name).Status.Conditions, fleetv1alpha1.ConditionImported)
				if cond == nil || cond.Reason != tc.reason || cond.Message == "" {
					return fmt.Errorf("Imported condition %+v, want reason %s", cond, tc.reason)
				}
				// The message names what to set, for the CLI and for the chart.
				if tc.reason == fleetv1alpha1.ReasonMissingAPIServerURL && (!strings.Contains(cond.Message, "--api-server-url") || !strings.Contains(cond.Message, "apiServerURL")) {
					t.Errorf("MissingAPIServerURL message %q names neither --api-server-url nor the chart value apiServerURL", cond.Message)
				}
				return nil
			})
			if _, err := os.Stat(ran); !os.IsNotExist(err) {
				t.Errorf("drover ran the kubeconfig's exec command (%s exists: %v)", ran, err)
			}
			// Nothing half-created: no import token, nothing downstream.
			var toks fleetv1alpha1.ClusterRegistrationTokenList
			if err := mgmt.Client.List(ctx, &toks, client.InNamespace(ws), client.MatchingLabels{fleetv1alpha1.ClusterLabel: name}); err != nil || len(toks.Items) != 0 {
				t.Errorf("import tokens for a failed import: %v, %d", err, len(toks.Items))
			}
			if err := downstream.Client.Get(ctx, client.ObjectKey{Name: "bad-" + ws}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
				t.Errorf("agent namespace downstream: got %v, want NotFound", err)
			}
		})
	}

	t.Run("token without TTL", func(t *testing.T) {
		tok := &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "forever"}}
		if err := mgmt.Client.Create(ctx, tok); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, func() error {
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(tok), tok); err != nil {
				return err
			}
			if c := conditionOf(tok.Status.Conditions, fleetv1alpha1.ConditionReady); c == nil || c.Reason != fleetv1alpha1.ReasonMissingTTL || c.Message == "" {
				return fmt.Errorf("Ready condition %+v, want MissingTTL", c)
			}
			return nil
		})
		var sas corev1.ServiceAccountList
		if err := mgmt.Client.List(ctx, &sas, client.InNamespace(ws), client.MatchingLabels{fleetv1alpha1.TokenLabel: "forever"}); err != nil || len(sas.Items) != 0 {
			t.Errorf("import identities for a token without TTL: %v, %d", err, len(sas.Items))
		}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "forever"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("values secret for a token without TTL: got %v, want NotFound", err)
		}
	})

	t.Run("reserved label prefix", func(t *testing.T) {
		values := newToken(t, ws, "labels", time.Hour)
		imp := tokenClient(t, values[fleetv1alpha1.KeyToken])
		cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
			Labels: map[string]string{fleetv1alpha1.TokenLabel: "labels"}},
			Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: "reserved-" + ws, ClientRandom: "0123456789abcdef0123",
				ClusterLabels: map[string]string{"env": "prod", fleetv1alpha1.ManagedLabel: "false"}}}
		if err := imp.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, func() error {
			got := &fleetv1alpha1.ClusterRegistration{}
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
				return err
			}
			if c := conditionOf(got.Status.Conditions, fleetv1alpha1.ConditionGranted); c == nil || c.Reason != fleetv1alpha1.ReasonReservedLabel || c.Message == "" {
				return fmt.Errorf("Granted condition %+v, want ReservedLabel", c)
			}
			return nil
		})
		noClusterFor(t, ws, cr.Spec.ClientID)
	})
}

// noClusterFor fails the test if workspace ws has a Cluster for clientID (made for a
// registration drover refused).
func noClusterFor(t *testing.T, ws, clientID string) {
	t.Helper()
	var clusters fleetv1alpha1.ClusterList
	if err := mgmt.Client.List(t.Context(), &clusters, client.InNamespace(ws)); err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters.Items {
		if c.Spec.ClientID == clientID {
			t.Errorf("Cluster %s created for a refused registration", c.Name)
		}
	}
}
