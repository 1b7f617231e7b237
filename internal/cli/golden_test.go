package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// goldenNS holds the fixed objects of the golden tests; goldenLabel marks them for -A -l.
const (
	goldenNS    = "golden"
	goldenLabel = "drover.io/golden=true"
)

var goldenNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// goldenAge is how old each golden object is at goldenNow (its AGE): the API server sets
// creationTimestamp itself, so the golden test fixes createdAt. The ages keep the order the
// objects are created in (prod before staging), so --sort-by=.metadata.creationTimestamp agrees.
var goldenAge = map[string]time.Duration{
	"prod": 40 * 24 * time.Hour, "staging": 3*time.Hour + 10*time.Minute, "web": 26 * time.Hour,
	"edge-1": 9 * 24 * time.Hour, "rke2-prod": 5*time.Minute + 30*time.Second, "apps": 51 * time.Hour,
}

// seedGolden creates the fixed objects every golden test prints.
func seedGolden(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := mgmt.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: goldenNS}}); err != nil {
		t.Fatal(err)
	}
	refreshed := metav1.NewTime(goldenNow.Add(-90 * time.Second))
	since := metav1.NewTime(goldenNow.Add(-time.Hour))
	cond := func(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, LastTransitionTime: since}
	}
	labels := map[string]string{"drover.io/golden": "true"}
	prod := &v1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: goldenNS, Name: "prod", Labels: labels},
		Spec: v1.ClusterSpec{SyncPolicy: v1.SyncPolicyAdopt, EKSConfig: &v1.EKSClusterConfig{
			DisplayName: "prod", Region: "us-west-2", CredentialSecret: "aws", KubernetesVersion: ptr.To("1.32"),
			Tags: map[string]string{"team": "platform"},
		}},
	}
	staging := &v1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: goldenNS, Name: "staging", Labels: labels},
		Spec: v1.ClusterSpec{GKEConfig: &v1.GKEClusterConfig{
			ClusterName: "staging", ProjectID: "acme", Zone: "europe-west1-b", CredentialSecret: "gcp", Imported: true,
		}},
	}
	web := &fleetv1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: goldenNS, Name: "web", Labels: labels},
		Spec: fleetv1alpha1.BundleSpec{
			Resources: []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}`)}},
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "prod"},
				{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}},
			Rollout: fleetv1alpha1.BundleRollout{Paused: true},
		},
	}
	seen := metav1.NewTime(goldenNow.Add(-30 * time.Second))
	edge := &fleetv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: goldenNS, Name: "edge-1", Labels: map[string]string{"drover.io/golden": "true", "env": "prod"}},
		Spec: fleetv1alpha1.ClusterSpec{AgentImage: "ghcr.io/droverhq/drover:v0.9.0",
			TemplateValues: &runtime.RawExtension{Raw: []byte(`{"host":"edge-1.example.com"}`)}},
	}
	mig := &migrationv1alpha1.CloudProviderMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: goldenNS, Name: "rke2-prod", Labels: labels},
		Spec: migrationv1alpha1.CloudProviderMigrationSpec{Distribution: migrationv1alpha1.Distribution("rke2"),
			ClusterRef:          &migrationv1alpha1.ClusterReference{Namespace: "fleet-default", Name: "prod"},
			KubeconfigSecretRef: migrationv1alpha1.SecretKeyReference{Name: "prod-kubeconfig"}, KubernetesVersion: "v1.27.16+rke2r1"},
	}
	repo := &fleetv1alpha1.GitRepo{
		ObjectMeta: metav1.ObjectMeta{Namespace: goldenNS, Name: "apps", Labels: labels},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/acme/apps.git", Branch: "main", Paths: []string{"web", "monitoring/*"},
			Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}},
	}
	for _, o := range []client.Object{prod, staging, web, edge, mig, repo} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
	prod.Status = v1.ClusterStatus{Phase: v1.PhaseActive, LastRefreshTime: &refreshed, Conditions: []metav1.Condition{
		cond(hosted.CondReady, metav1.ConditionTrue, "Active", "the cluster is active"),
		cond(hosted.CondSynced, metav1.ConditionTrue, "InSync", "the provider matches the spec"),
		cond(hosted.CondConflict, metav1.ConditionFalse, "NoConflict", ""),
	}, Fleet: &v1.FleetStatus{ClusterName: "prod", KubeconfigSecret: "prod-kubeconfig",
		CredentialsExpireTime: &metav1.Time{Time: goldenNow.Add(10 * time.Minute)}, CredentialsRefreshTime: &metav1.Time{Time: goldenNow.Add(5 * time.Minute)},
		Conditions: []metav1.Condition{
			cond(v1.ConditionJoined, metav1.ConditionTrue, v1.ReasonJoined, "kubeconfig Secret and fleet Cluster in place"),
			cond(v1.ConditionAgentReady, metav1.ConditionFalse, v1.ReasonWaitingForAgent, "the agent has not checked in yet"),
		}}}
	staging.Status = v1.ClusterStatus{Phase: v1.PhaseCreating}
	web.Status = fleetv1alpha1.BundleStatus{DeploymentID: "s-1:abc", Summary: fleetv1alpha1.BundleSummary{
		DesiredReady: 2, Ready: 1, Pending: 1,
		NonReadyClusters: []fleetv1alpha1.NonReadyCluster{{Name: "edge", State: "Pending", Message: "waiting for the agent"}},
	}}
	meta.SetStatusCondition(&web.Status.Conditions, cond("Ready", metav1.ConditionFalse, "NotReady", "1 of 2 clusters ready"))
	edge.Status = fleetv1alpha1.ClusterStatus{Namespace: "cluster-golden-edge-1", Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen, Namespace: "drover-agent",
		Features: []string{fleetv1alpha1.AgentFeatureHelmValues}, FeaturesSeen: &seen},
		Conditions: []metav1.Condition{cond("Ready", metav1.ConditionTrue, "Ready", "namespace and RBAC in place")}}
	mig.Status = migrationv1alpha1.CloudProviderMigrationStatus{Phase: migrationv1alpha1.PhaseRunning, CurrentStep: 2, Steps: []migrationv1alpha1.StepStatus{
		{Index: 0, Name: "Preflight", Phase: migrationv1alpha1.StepSucceeded},
		{Index: 1, Name: "EnableLeaderMigration", Phase: migrationv1alpha1.StepSucceeded},
		{Index: 2, Name: "CordonControlPlane", Phase: migrationv1alpha1.StepPending, Message: "waiting for the nodes"},
	}}
	repo.Status = fleetv1alpha1.GitRepoStatus{Commit: "4f2a9c1e0b7d3a6f8e5c2b1a0d9e8f7c6b5a4d3e", Summary: fleetv1alpha1.GitRepoSummary{Bundles: 2, ReadyBundles: 1},
		Bundles: []fleetv1alpha1.GitRepoBundle{
			{Name: "apps-web", Path: "web", Ready: 2, DesiredReady: 2},
			{Name: "apps-monitoring-prometheus", Path: "monitoring/prometheus", Ready: 0, DesiredReady: 2, Message: "edge-1: waiting for the agent"},
		},
		Conditions: []metav1.Condition{
			cond(fleetv1alpha1.ConditionSynced, metav1.ConditionTrue, "Synced", "commit 4f2a9c1e0b7d deployed"),
			cond(fleetv1alpha1.ConditionReady, metav1.ConditionFalse, fleetv1alpha1.ReasonBundlesNotReady, "1 of 2 Bundles ready"),
		}}
	for _, o := range []client.Object{prod, staging, web, edge, mig, repo} {
		if err := c.Status().Update(ctx, o); err != nil {
			t.Fatalf("status of %s: %v", o.GetName(), err)
		}
	}
}

var volatile = regexp.MustCompile(`(?m)("?(uid|resourceVersion|creationTimestamp)"?: )"?[^",\n]*"?`)

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = volatile.ReplaceAllString(got, `${1}"X"`)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update if intended):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestGoldenOutput: every read command in every output format, against fixed objects.
func TestGoldenOutput(t *testing.T) {
	seedGolden(t)
	old, oldCreated := now, createdAt
	now = func() time.Time { return goldenNow }
	createdAt = func(obj metav1.Object) time.Time {
		if a, ok := goldenAge[obj.GetName()]; ok && obj.GetNamespace() == goldenNS {
			return goldenNow.Add(-a)
		}
		return oldCreated(obj)
	}
	t.Cleanup(func() { now, createdAt = old, oldCreated })
	kc := mgmtKubeconfig(t)
	formats := []string{"", "table", "wide", "json", "yaml", "name", "jsonpath={.metadata.name}"}
	type command struct {
		name string
		args []string
		list bool
	}
	commands := []command{
		{"cluster-list", []string{"cluster", "list"}, true},
		{"cluster-get", []string{"cluster", "get", "prod"}, false},
		{"bundle-status", []string{"bundle", "status", "web"}, false},
		{"bundle-list", []string{"bundle", "list"}, true},
		{"fleet-list", []string{"fleet", "list"}, true},
		{"fleet-get", []string{"fleet", "get", "edge-1"}, false},
		{"migrate-list", []string{"migrate", "list"}, true},
		{"migrate-get", []string{"migrate", "get", "rke2-prod"}, false},
		{"gitrepo-list", []string{"gitrepo", "list"}, true},
		{"gitrepo-get", []string{"gitrepo", "get", "apps"}, false},
	}
	for _, c := range commands {
		for _, f := range formats {
			name := c.name
			args := append([]string{}, c.args...)
			if f != "" {
				args = append(args, "-o", f)
				name += "-" + strings.SplitN(f, "=", 2)[0]
				if c.list && strings.HasPrefix(f, "jsonpath") {
					args[len(args)-1] = "jsonpath={.items[*].metadata.name}"
				}
			}
			t.Run(name, func(t *testing.T) {
				out, errOut, err := drover(t.Context(), append(args, "--kubeconfig", kc, "-n", goldenNS)...)
				if err != nil {
					t.Fatalf("%v: %v\n%s", args, err, errOut)
				}
				golden(t, name, out)
				if f == "" || f == "table" {
					for _, l := range strings.Split(out, "\n") {
						if len(l) > 100 {
							t.Errorf("line wider than 100 columns (%d): %q", len(l), l)
						}
					}
				}
			})
		}
	}
	t.Run("cluster-list-all-namespaces", func(t *testing.T) {
		out, _, err := drover(t.Context(), "cluster", "list", "-A", "-l", goldenLabel, "--kubeconfig", kc)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "cluster-list-all-namespaces", out)
	})
	// kubectl's table flags: --no-headers, --show-labels, --sort-by (a string, a timestamp with
	// staging's missing first, the creation time); -o name ignores the first two and follows
	// --sort-by's order.
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"cluster-list-no-headers", []string{"cluster", "list", "--no-headers"}},
		{"cluster-list-all-namespaces-no-headers", []string{"cluster", "list", "-A", "-l", goldenLabel, "--no-headers"}},
		{"cluster-list-show-labels", []string{"cluster", "list", "--show-labels"}},
		{"fleet-list-show-labels", []string{"fleet", "list", "--show-labels"}},
		{"fleet-list-wide-show-labels", []string{"fleet", "list", "-o", "wide", "--show-labels"}},
		{"fleet-list-show-labels-no-headers", []string{"fleet", "list", "--show-labels", "--no-headers"}},
		{"cluster-list-sort-by-phase", []string{"cluster", "list", "--sort-by", "{.status.phase}"}},
		{"cluster-list-sort-by-refresh", []string{"cluster", "list", "--sort-by", ".status.lastRefreshTime"}},
		{"cluster-list-sort-by-created", []string{"cluster", "list", "--sort-by=.metadata.creationTimestamp"}},
		{"cluster-list-name-sort-by-refresh", []string{"cluster", "list", "-o", "name", "--sort-by", ".status.lastRefreshTime", "--no-headers", "--show-labels"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !slices.Contains(args, "-A") {
				args = append(args, "-n", goldenNS)
			}
			out, errOut, err := drover(t.Context(), append(args, "--kubeconfig", kc)...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, errOut)
			}
			golden(t, tc.name, out)
		})
	}
	t.Run("empty list", func(t *testing.T) {
		out, errOut, err := drover(t.Context(), "cluster", "list", "-l", "nothing=here", "--kubeconfig", kc, "-n", goldenNS)
		if err != nil || out != "" || !strings.Contains(errOut, "No clusters found in namespace golden (every namespace: -A).") {
			t.Fatalf("empty list: %v stdout %q stderr %q", err, out, errOut)
		}
	})
	t.Run("unknown format", func(t *testing.T) {
		_, _, err := drover(t.Context(), "cluster", "list", "-o", "xml", "--kubeconfig", kc)
		if ExitCode(err) != ExitUsage {
			t.Fatalf("-o xml: %v (exit %d), want a usage error", err, ExitCode(err))
		}
	})
}
