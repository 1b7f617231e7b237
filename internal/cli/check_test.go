package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/crds"
	regconfig "github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/server"
)

// TestCheck: drover check against a real API server. Without a server's leader lease and
// registration settings it fails (exit 3) naming what is missing and what to do; with a fresh
// lease and an API server URL it passes, and lists, as warnings that keep exit 0, the fleet's
// disconnected and never-seen agents, failing Bundles and failed hosted clusters of -n; a stale
// or released lease fails; an unreachable API server fails without running the rest.
func TestCheck(t *testing.T) {
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	c := mgmt.Client
	ns := mgmt.Namespace(t)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: server.SystemNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: server.SystemNamespace, Name: server.LeaderElectionID}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: regconfig.DefaultRef.Namespace, Name: regconfig.DefaultRef.Name}}
	for _, o := range []client.Object{lease, cm} {
		if err := c.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, args ...string) (map[string]checkResult, string, error) {
		t.Helper()
		out, _, err := drover(ctx, append([]string{"check", "--kubeconfig", kc, "-n", ns, "-o", "json"}, args...)...)
		var results []checkResult
		if jerr := json.Unmarshal([]byte(out), &results); jerr != nil {
			t.Fatalf("-o json: %v\n%s", jerr, out)
		}
		byName := map[string]checkResult{}
		for _, r := range results {
			byName[r.Check] = r
		}
		return byName, out, err
	}
	expect := func(t *testing.T, got map[string]checkResult, name, result string, details ...string) {
		t.Helper()
		r, ok := got[name]
		if !ok || r.Result != result {
			t.Errorf("%s: %+v, want result %s", name, r, result)
		}
		for _, d := range details {
			if !strings.Contains(r.Detail, d) {
				t.Errorf("%s: detail %q does not say %q", name, r.Detail, d)
			}
		}
	}

	t.Run("no server", func(t *testing.T) {
		got, out, err := check(t)
		if ExitCode(err) != ExitNotReady {
			t.Fatalf("exit %d (%v), want %d\n%s", ExitCode(err), err, ExitNotReady, out)
		}
		all, lerr := crds.Load()
		if lerr != nil {
			t.Fatal(lerr)
		}
		expect(t, got, "api-server", checkOK, mgmt.Config.Host, "Kubernetes v")
		expect(t, got, "crds", checkOK, fmt.Sprintf("%d drover CRDs installed and established", len(all)))
		expect(t, got, "server", checkFail, "no drover server has run here", server.LeaderElectionID)
		expect(t, got, "registration", checkFail, "agents cannot find the API server", "--api-server-url")
		expect(t, got, "fleet", checkOK, "no registered clusters")
		expect(t, got, "admission-policy", checkOK, "drover-agent-cluster-status, drover-agent-token-lifetime, drover-import-identity-registrations installed and bound")
	})

	// Without the policy's binding an agent could rewrite its Cluster's status: a failure.
	t.Run("admission policy not bound", func(t *testing.T) {
		policies, err := crds.LoadPolicies()
		if err != nil {
			t.Fatal(err)
		}
		binding := policies.Bindings[0]
		if err := c.Delete(ctx, binding); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := crds.InstallPolicies(context.Background(), c); err != nil {
				t.Error(err)
			}
		}()
		got, _, err := check(t)
		if ExitCode(err) != ExitNotReady {
			t.Fatalf("exit %d (%v), want %d", ExitCode(err), err, ExitNotReady)
		}
		expect(t, got, "admission-policy", checkFail, "ValidatingAdmissionPolicyBinding/drover-agent-cluster-status", "kubectl apply -f config/admission")
	})

	// A running server's lease, and its registration settings without a URL.
	lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("drover-7d9c_1a2b"), LeaseDurationSeconds: ptr.To[int32](15),
		RenewTime: &metav1.MicroTime{Time: time.Now()}}
	cm.Data = map[string]string{regconfig.KeyAPIServerURL: ""}
	for _, o := range []client.Object{lease, cm} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("no API server URL", func(t *testing.T) {
		got, _, err := check(t)
		if ExitCode(err) != ExitNotReady {
			t.Fatalf("exit %d (%v), want %d", ExitCode(err), err, ExitNotReady)
		}
		expect(t, got, "server", checkOK, "leader drover-7d9c_1a2b")
		expect(t, got, "registration", checkFail, "has no apiServerURL", "helm upgrade --set apiServerURL=")
	})

	// The embedded control plane's endpoint: no agent elsewhere reaches it.
	cm.Data[regconfig.KeyAPIServerURL] = "https://127.0.0.1:6443"
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Run("loopback API server URL", func(t *testing.T) {
		got, _, err := check(t)
		if err != nil {
			t.Fatalf("exit %d (%v): a warning must not fail", ExitCode(err), err)
		}
		expect(t, got, "registration", checkWarn, "https://127.0.0.1:6443, a loopback address", "only an agent on this machine", "--advertise-address")
	})

	cm.Data[regconfig.KeyAPIServerURL] = "https://mgmt.example.com:6443"
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// The fleet: one connected, one disconnected, one never seen; a failing and a pending Bundle;
	// a failed hosted cluster.
	now, old := metav1.Now(), metav1.NewTime(time.Now().Add(-time.Hour))
	for name, st := range map[string]fleetv1alpha1.ClusterStatus{
		"edge-ok": {Agent: fleetv1alpha1.AgentStatus{LastSeen: &now, Version: "v1.3.0"},
			Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Succeeded", LastTransitionTime: now}}},
		"edge-gone": {Agent: fleetv1alpha1.AgentStatus{LastSeen: &old, Version: "v1.2.0"},
			Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Reason: fleetv1alpha1.ReasonAgentDisconnected, LastTransitionTime: now}}},
		"edge-new": {},
		// Checks in, but its own API server does not answer.
		"edge-down": {Agent: fleetv1alpha1.AgentStatus{LastSeen: &now, Version: "v1.3.0", DownstreamError: "connection refused"},
			Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Reason: fleetv1alpha1.ReasonDownstreamUnreachable, LastTransitionTime: now}}},
	} {
		fc := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := c.Create(ctx, fc); err != nil {
			t.Fatal(err)
		}
		fc.Status = st
		if err := c.Status().Update(ctx, fc); err != nil {
			t.Fatal(err)
		}
	}
	for name, reason := range map[string]string{"web": "ApplyFailed", "new": "Pending"} {
		b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "edge-ok"}}}}
		if err := c.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		b.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "False", Reason: reason, Message: "m", LastTransitionTime: now}}
		if err := c.Status().Update(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// Ready, but on no cluster: a mistyped --cluster.
	typo := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "typo"}, Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "edge-okk"}}}}
	if err := c.Create(ctx, typo); err != nil {
		t.Fatal(err)
	}
	typo.Status.ObservedGeneration = typo.Generation
	typo.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Succeeded", Message: "0/0", LastTransitionTime: now}}
	if err := c.Status().Update(ctx, typo); err != nil {
		t.Fatal(err)
	}
	// GitRepos: fine; applied without targets (Fleet's default clusterGroup does not exist here);
	// targeting no cluster; with fleet.yaml keys drover ignores.
	for _, g := range []struct {
		name    string
		targets []fleetv1alpha1.BundleTarget
		desired int
		conds   []metav1.Condition
	}{
		{name: "apps", targets: []fleetv1alpha1.BundleTarget{{ClusterName: "edge-ok"}}, desired: 1},
		{name: "apps-untargeted"},
		{name: "apps-typo", targets: []fleetv1alpha1.BundleTarget{{ClusterName: "edge-okk"}}},
		{name: "apps-fleet", targets: []fleetv1alpha1.BundleTarget{{ClusterName: "edge-ok"}}, desired: 1,
			conds: []metav1.Condition{{Type: fleetv1alpha1.ConditionConfigSupported, Status: "False", Reason: fleetv1alpha1.ReasonUnsupportedFleetKeys, Message: "m", LastTransitionTime: now}}},
	} {
		gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: g.name}, Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps", Targets: g.targets}}
		if err := c.Create(ctx, gr); err != nil {
			t.Fatal(err)
		}
		gr.Status = fleetv1alpha1.GitRepoStatus{ObservedGeneration: gr.Generation, Commit: "0a1b2c3",
			Bundles:    []fleetv1alpha1.GitRepoBundle{{Name: g.name + "-web", Path: "web", Ready: g.desired, DesiredReady: g.desired}},
			Conditions: append(g.conds, metav1.Condition{Type: "Ready", Status: "True", Reason: "Succeeded", Message: "m", LastTransitionTime: now})}
		if err := c.Status().Update(ctx, gr); err != nil {
			t.Fatal(err)
		}
	}
	h := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod-east"}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{DisplayName: "a", Region: "us-east-1", CredentialSecret: "aws"}}}
	if err := c.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	h.Status.Phase = v1.PhaseFailed
	if err := c.Status().Update(ctx, h); err != nil {
		t.Fatal(err)
	}
	// An active one whose credentials the provider rejects (joined before the rotation).
	rejected := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod-north"}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{DisplayName: "n", Region: "eu-west-1", CredentialSecret: "aws"}}}
	if err := c.Create(ctx, rejected); err != nil {
		t.Fatal(err)
	}
	rejected.Status.Phase = v1.PhaseActive
	rejected.Status.Conditions = []metav1.Condition{{Type: v1.ConditionCredentialsValid, Status: "False", Reason: v1.ReasonRejected, Message: "m", LastTransitionTime: now}}
	rejected.Status.Fleet = &v1.FleetStatus{Conditions: []metav1.Condition{{Type: v1.ConditionJoined, Status: "True", Reason: v1.ReasonJoined, Message: "m", LastTransitionTime: now}}}
	if err := c.Status().Update(ctx, rejected); err != nil {
		t.Fatal(err)
	}
	// One refused: it names a cluster another owns at the provider.
	taken := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "copy"}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{DisplayName: "prod-east", Region: "us-east-1", CredentialSecret: "aws"}}}
	if err := c.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}
	taken.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: "False", Reason: v1.ReasonAlreadyExists, Message: "m", LastTransitionTime: now}}
	if err := c.Status().Update(ctx, taken); err != nil {
		t.Fatal(err)
	}
	// An active one that cannot join the fleet, one that stays out of it.
	for name, reason := range map[string]string{"prod-west": v1.ReasonAccessEntryMissing, "lab": v1.ReasonJoinDisabled} {
		h := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{DisplayName: name, Region: "us-west-2", CredentialSecret: "aws"}}}
		if err := c.Create(ctx, h); err != nil {
			t.Fatal(err)
		}
		h.Status.Phase = v1.PhaseActive
		h.Status.Fleet = &v1.FleetStatus{Conditions: []metav1.Condition{{Type: v1.ConditionJoined, Status: "False", Reason: reason, Message: "m", LastTransitionTime: now}}}
		if err := c.Status().Update(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("healthy server, fleet needs attention", func(t *testing.T) {
		got, out, err := check(t)
		if err != nil {
			t.Fatalf("exit %d (%v): warnings alone must not fail\n%s", ExitCode(err), err, out)
		}
		if _, _, err := check(t, "--strict"); ExitCode(err) != ExitNotReady || !strings.Contains(err.Error(), "checks warn") {
			t.Errorf("--strict with warnings: exit %d (%v), want %d", ExitCode(err), err, ExitNotReady)
		}
		expect(t, got, "registration", checkOK, "https://mgmt.example.com:6443")
		expect(t, got, "fleet", checkWarn, "4 registered clusters", "1 disconnected: edge-gone", "1 never checked in: edge-new",
			"1 whose agent cannot reach their API server: edge-down", "(drover fleet get NAME -n "+ns+")", "agents run v1.2.0 (1), v1.3.0 (2)")
		expect(t, got, "bundles", checkWarn, "2 of 3 Bundles not ready", "typo (TargetsNoCluster)", "web (ApplyFailed)", "(drover bundle status NAME -n "+ns+")")
		expect(t, got, "hosted-clusters", checkWarn, "4 of 5 hosted clusters failed, lack valid credentials or cannot join the fleet: copy (AlreadyExists), prod-east (failed), prod-north (CredentialsValid Rejected), prod-west (AccessEntryMissing)", "drover cluster get")
		expect(t, got, "gitrepos", checkWarn, "3 of 4 GitRepos need attention", "apps-fleet (UnsupportedFleetKeys)", "apps-typo (TargetsNoCluster)",
			"apps-untargeted (NoTargets)", "(drover gitrepo get NAME -n "+ns+")")
		expect(t, got, "migrations", checkOK)
		if strings.Contains(got["fleet"].Detail, "edge-ok") {
			t.Errorf("fleet names the connected cluster: %s", got["fleet"].Detail)
		}
		if _, ok := got["namespace"]; ok {
			t.Errorf("an existing namespace reported: %+v", got["namespace"])
		}
		// A mistyped -n is said, not checked as an empty, healthy namespace.
		out, _, _ = drover(ctx, "check", "--kubeconfig", kc, "-n", "no-such-"+ns, "-o", "json")
		if !strings.Contains(out, "namespace no-such-"+ns+" does not exist") {
			t.Errorf("check -n of a missing namespace:\n%s", out)
		}
		// The table, as a person reads it.
		table, _, err := drover(ctx, "check", "--kubeconfig", kc, "-n", ns)
		if err != nil || !strings.HasPrefix(table, "CHECK") || !strings.Contains(table, "fleet") || !strings.Contains(table, "warn") {
			t.Errorf("table: %v\n%s", err, table)
		}
	})

	t.Run("stale lease", func(t *testing.T) {
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-2 * time.Minute)}
		if err := c.Update(ctx, lease); err != nil {
			t.Fatal(err)
		}
		got, _, err := check(t)
		if ExitCode(err) != ExitNotReady {
			t.Fatalf("exit %d (%v), want %d", ExitCode(err), err, ExitNotReady)
		}
		expect(t, got, "server", checkFail, "leader drover-7d9c_1a2b last renewed its lease 2m0s ago", "kubectl -n drover-system get pods")
	})

	t.Run("released lease", func(t *testing.T) {
		lease.Spec.HolderIdentity = ptr.To("")
		if err := c.Update(ctx, lease); err != nil {
			t.Fatal(err)
		}
		got, _, err := check(t)
		if ExitCode(err) != ExitNotReady {
			t.Fatalf("exit %d (%v), want %d", ExitCode(err), err, ExitNotReady)
		}
		expect(t, got, "server", checkFail, "no drover server is running")
	})

	t.Run("unreachable", func(t *testing.T) {
		dead := kubeconfigFor(t, &rest.Config{Host: "https://127.0.0.1:1"}, filepath.Join(t.TempDir(), "kubeconfig"))
		out, _, err := drover(context.Background(), "check", "--kubeconfig", dead, "-o", "json")
		if ExitCode(err) != ExitNotReady || !strings.Contains(out, "does not answer") || strings.Contains(out, `"crds"`) {
			t.Errorf("exit %d (%v), want %d and only the api-server check\n%s", ExitCode(err), err, ExitNotReady, out)
		}
	})

	t.Run("bad output", func(t *testing.T) {
		if _, _, err := drover(ctx, "check", "--kubeconfig", kc, "-o", "yaml"); ExitCode(err) != ExitUsage {
			t.Errorf("-o yaml: exit %d (%v), want %d", ExitCode(err), err, ExitUsage)
		}
	})
}

func TestLoopbackURL(t *testing.T) {
	for url, want := range map[string]bool{
		"https://127.0.0.1:6443": true, "https://localhost:6443": true, "https://[::1]:6443": true, "https://127.1.2.3": true,
		"https://api.localhost": true, "https://mgmt.example.com:6443": false, "https://10.0.0.1:6443": false, "not a url\x7f": false,
	} {
		if got := loopbackURL(url); got != want {
			t.Errorf("loopbackURL(%q) = %t, want %t", url, got, want)
		}
	}
}
