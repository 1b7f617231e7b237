package dashboard_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
)

// fleet is a namespace's worth of every kind the dashboard shows, in known states.
type fleet struct {
	ns string
	// Hosted clusters: web (EKS, active), api (AKS, updating), data (GKE, failed, conflict).
	web, api, data *managementv1alpha1.Cluster
	// Fleet clusters: edge1 connected, edge2 disconnected, edge3 never checked in.
	edge1, edge2, edge3 *fleetv1alpha1.Cluster
	// Bundles: app (ready on edge1, pending on edge2), monitoring (drift on edge1, apply
	// failed on edge2).
	app, monitoring *fleetv1alpha1.Bundle
	migration       *migrationv1alpha1.CloudProviderMigration
	// GitRepos: apps (its last commit failed to render; one of its two Bundles ready), infra
	// (paused, ready).
	apps, infra *fleetv1alpha1.GitRepo
	// Tokens: edge (maxClusters 2, both used), open (no limit), an import token drover made
	// for edge-1.
	tokens []*fleetv1alpha1.ClusterRegistrationToken
}

func cond(t, status, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

func newFleet(t testing.TB, ns string) *fleet {
	t.Helper()
	f := &fleet{ns: ns}
	now := metav1.Now()
	f.web = &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: managementv1alpha1.ClusterSpec{EKSConfig: &managementv1alpha1.EKSClusterConfig{DisplayName: "web", Region: "us-west-2",
			CredentialSecret: "aws", KubernetesVersion: ptr.To("1.32"), Tags: map[string]string{"team": "platform"}}}}
	f.api = &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: managementv1alpha1.ClusterSpec{AKSConfig: &managementv1alpha1.AKSClusterConfig{ClusterName: "api", ResourceGroup: "rg",
			ResourceLocation: "westeurope", CredentialSecret: "azure", KubernetesVersion: ptr.To("1.31")}}}
	f.data = &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: managementv1alpha1.ClusterSpec{GKEConfig: &managementv1alpha1.GKEClusterConfig{ClusterName: "data", ProjectID: "acme",
			Zone: "europe-west1-b", CredentialSecret: "gcp", Imported: true}}}
	f.edge1 = &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-1", Labels: map[string]string{"env": "prod"}},
		Spec: fleetv1alpha1.ClusterSpec{AgentImage: "example.com/drover:v9.8.7"}}
	f.edge2 = &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-2", Labels: map[string]string{"env": "staging"}}}
	f.edge3 = &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-3"}}
	f.app = &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{}}}}}
	f.monitoring = &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "monitoring"},
		Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{}}}}}
	f.migration = &migrationv1alpha1.CloudProviderMigration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "move-prod"},
		Spec: migrationv1alpha1.CloudProviderMigrationSpec{Distribution: "rke2", KubeconfigSecretRef: migrationv1alpha1.SecretKeyReference{Name: "prod-kubeconfig"},
			ClusterRef: &migrationv1alpha1.ClusterReference{Namespace: ns, Name: "prod"}}}
	edgeNS := []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: ns + "-e1"}}, {ObjectMeta: metav1.ObjectMeta{Name: ns + "-e2"}}}
	f.apps = &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/org/apps.git", Branch: "main", Paths: []string{"apps/*"},
			ClientSecretName: "git-auth"}}
	f.infra = &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "infra"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: "git@github.com:org/infra.git", Tag: "v1.2.0", Paused: true}}
	hour := &metav1.Duration{Duration: time.Hour}
	f.tokens = []*fleetv1alpha1.ClusterRegistrationToken{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}, Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: hour, MaxClusters: ptr.To[int32](2)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "open"}, Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: hour}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "import-edge-1", Labels: map[string]string{fleetv1alpha1.ClusterLabel: "edge-1", fleetv1alpha1.ClusterUIDLabel: "0000"}},
			Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: hour}},
	}
	createAll(t, f.web, f.api, f.data, f.edge1, f.edge2, f.edge3, f.app, f.monitoring, f.migration, f.apps, f.infra, edgeNS[0], edgeNS[1],
		f.tokens[0], f.tokens[1], f.tokens[2])
	t.Cleanup(func() {
		for _, n := range edgeNS {
			_ = mgmt.Client.Delete(context.Background(), n)
		}
	})

	f.web.Status = managementv1alpha1.ClusterStatus{Phase: managementv1alpha1.PhaseActive, LastRefreshTime: &now,
		Conditions: []metav1.Condition{cond("Ready", "True", "Active", "The cluster is active."), cond("Synced", "True", "InSync", "Every managed field matches the provider.")},
		Fleet: &managementv1alpha1.FleetStatus{ClusterName: "web", Conditions: []metav1.Condition{
			cond(managementv1alpha1.ConditionJoined, "True", managementv1alpha1.ReasonJoined, "The cluster is fleet Cluster web"),
			cond(managementv1alpha1.ConditionAgentReady, "True", managementv1alpha1.ReasonAgentCheckedIn, "The agent checked in")}}}
	f.api.Status = managementv1alpha1.ClusterStatus{Phase: managementv1alpha1.PhaseUpdating,
		Conditions: []metav1.Condition{cond("Ready", "True", "Updating", "An update is in progress.")},
		Fleet: &managementv1alpha1.FleetStatus{Conditions: []metav1.Condition{
			cond(managementv1alpha1.ConditionJoined, "False", managementv1alpha1.ReasonCredentialsRejected, "The cluster's API server refused drover's token (401)")}}}
	f.data.Status = managementv1alpha1.ClusterStatus{Phase: managementv1alpha1.PhaseFailed, FailureMessage: "The cluster to import does not exist.",
		Conditions: []metav1.Condition{cond("Ready", "False", "NotFound", "The cluster to import does not exist."),
			cond("Conflict", "True", "ChangedOnBothSides", "Changed in drover and at the provider since the last sync; drover's value was applied: gkeConfig.labels[a]: drover \"x\", provider \"y\"")}}
	for _, c := range []*managementv1alpha1.Cluster{f.web, f.api, f.data} {
		setStatus(t, c)
	}

	seen := metav1.NewTime(time.Now().Add(-20 * time.Second))
	old := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	f.edge1.Status = fleetv1alpha1.ClusterStatus{Namespace: ns + "-e1", Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen, Namespace: "drover-agent"},
		Conditions: []metav1.Condition{cond("Ready", "True", "Succeeded", "Agent checked in")}}
	f.edge2.Status = fleetv1alpha1.ClusterStatus{Namespace: ns + "-e2", Agent: fleetv1alpha1.AgentStatus{LastSeen: &old, Namespace: "drover-agent"},
		Conditions: []metav1.Condition{cond("Ready", "False", fleetv1alpha1.ReasonAgentDisconnected, "The agent last checked in 10 minutes ago")}}
	for _, c := range []*fleetv1alpha1.Cluster{f.edge1, f.edge2} {
		setStatus(t, c)
	}
	f.app.Status = fleetv1alpha1.BundleStatus{DeploymentID: "app-1", Summary: fleetv1alpha1.BundleSummary{DesiredReady: 2, Ready: 1, Pending: 1},
		Conditions: []metav1.Condition{cond("Ready", "False", "Pending", "1/2 clusters ready")}}
	f.monitoring.Status = fleetv1alpha1.BundleStatus{DeploymentID: "mon-1", Summary: fleetv1alpha1.BundleSummary{DesiredReady: 2, Modified: 1, ErrApplied: 1},
		Conditions: []metav1.Condition{cond("Ready", "False", "Pending", "0/2 clusters ready")}}
	setStatus(t, f.app)
	setStatus(t, f.monitoring)

	bd := func(b *fleetv1alpha1.Bundle, c *fleetv1alpha1.Cluster, id string) *fleetv1alpha1.BundleDeployment {
		return &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: c.Status.Namespace, Name: b.Name + "-" + ns,
			Labels: map[string]string{bundle.BundleNameLabel: b.Name, bundle.BundleNamespaceLabel: b.Namespace,
				fleetv1alpha1.ClusterLabel: c.Name, fleetv1alpha1.ClusterNamespaceLabel: c.Namespace}},
			Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: id}}
	}
	appReady, appPending := bd(f.app, f.edge1, "app-1"), bd(f.app, f.edge2, "app-1")
	monDrift, monFailed := bd(f.monitoring, f.edge1, "mon-1"), bd(f.monitoring, f.edge2, "mon-1")
	createAll(t, appReady, appPending, monDrift, monFailed)
	appReady.Status = fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "app-1", Ready: true, NonModified: true}
	monDrift.Status = fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "mon-1", Ready: true, NonModified: false,
		Resources: []fleetv1alpha1.ResourceState{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "monitoring", Name: "prometheus", State: "Modified", Message: "spec.replicas"}}}
	failed := cond(fleetv1alpha1.ConditionApplied, "False", fleetv1alpha1.ReasonApplyFailed, "namespaces \"monitoring\" is forbidden")
	failed.ObservedGeneration = monFailed.Generation
	monFailed.Status = fleetv1alpha1.BundleDeploymentStatus{Conditions: []metav1.Condition{failed}}
	for _, b := range []*fleetv1alpha1.BundleDeployment{appReady, monDrift, monFailed} {
		b.Status.Display = bundle.Display(b) // as the agent writes it with the status
		setStatus(t, b)
	}

	f.apps.Status = fleetv1alpha1.GitRepoStatus{Commit: "0123456789abcdef0123456789abcdef01234567",
		Summary: fleetv1alpha1.GitRepoSummary{Bundles: 2, ReadyBundles: 1},
		Bundles: []fleetv1alpha1.GitRepoBundle{{Name: "apps-web", Path: "apps/web", Ready: 2, DesiredReady: 2},
			{Name: "apps-db", Path: "apps/db", Ready: 1, DesiredReady: 2, Message: "edge-2: pending"}},
		Conditions: []metav1.Condition{
			gen(cond(fleetv1alpha1.ConditionSynced, "False", fleetv1alpha1.ReasonRenderFailed, "commit 89abcdef: path apps/db: apps/db/drover.yaml: unknown key helm.vaules"), f.apps.Generation),
			gen(cond(fleetv1alpha1.ConditionReady, "False", "BundlesNotReady", "1 of 2 Bundles ready"), f.apps.Generation)}}
	f.infra.Status = fleetv1alpha1.GitRepoStatus{Commit: "fedcba9876543210fedcba9876543210fedcba98",
		Summary: fleetv1alpha1.GitRepoSummary{Bundles: 1, ReadyBundles: 1},
		Bundles: []fleetv1alpha1.GitRepoBundle{{Name: "infra-crds", Path: ".", Ready: 3, DesiredReady: 3}},
		Conditions: []metav1.Condition{gen(cond(fleetv1alpha1.ConditionSynced, "False", "Paused", "Fetching is paused"), f.infra.Generation),
			gen(cond(fleetv1alpha1.ConditionReady, "True", "Ready", "Every Bundle is ready"), f.infra.Generation)}}
	setStatus(t, f.apps)
	setStatus(t, f.infra)

	expires := metav1.NewTime(time.Now().Add(90 * time.Minute))
	for i, tok := range f.tokens {
		tok.Status = fleetv1alpha1.ClusterRegistrationTokenStatus{Expires: &expires, SecretName: tok.Name + "-values",
			Conditions: []metav1.Condition{cond("Ready", "True", "Issued", "The import identity is issued")}}
		if i == 0 {
			tok.Status.RegisteredClientIDs = []string{"client-a", "client-b"}
		}
		setStatus(t, tok)
	}

	started := metav1.NewTime(time.Now().Add(-time.Minute))
	f.migration.Status = migrationv1alpha1.CloudProviderMigrationStatus{Phase: migrationv1alpha1.PhaseRunning, CurrentStep: 2,
		Steps: []migrationv1alpha1.StepStatus{
			{Index: 0, Name: "Preflight", Phase: migrationv1alpha1.StepSucceeded, StartedAt: &started, FinishedAt: &started},
			{Index: 1, Name: "EnableLeaderMigration", Phase: migrationv1alpha1.StepSucceeded, StartedAt: &started, FinishedAt: &started},
			{Index: 2, Name: "CordonControlPlane", Phase: migrationv1alpha1.StepRunning, StartedAt: &started, Message: "waiting for node cp-1 to be unschedulable"},
		}}
	setStatus(t, f.migration)

	createAll(t, warningEvent(ns, "data-conflict", corev1.ObjectReference{APIVersion: "management.drover.io/v1alpha1", Kind: "Cluster",
		Namespace: ns, Name: "data", UID: f.data.UID}, "Conflict", "gkeConfig.labels[a] was changed both in drover and at the provider"),
		warningEvent(ns, "move-prod-slow", corev1.ObjectReference{APIVersion: migrationv1alpha1.GroupVersion.String(), Kind: "CloudProviderMigration",
			Namespace: ns, Name: "move-prod", UID: f.migration.UID}, "StepSlow", "node cp-1 is not unschedulable yet"))
	return f
}

// must re-reads an object as admin.
func must[T client.Object](t testing.TB, o T) T {
	t.Helper()
	if err := mgmt.Client.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
	return o
}
