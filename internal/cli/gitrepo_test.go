package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

func TestGitRepoAddListGet(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	out, errOut, err := drover(ctx, "gitrepo", "add", "web", "--repo", "https://git.example.com/org/deploy.git",
		"--branch", "main", "--paths", "apps/*,base", "--cluster", "edge-1", "--selector", "env=prod", "--polling-interval", "30s",
		"--secret", "git-auth", "--helm-secret", "helm-auth", "--helm-repo-url-regex", "^oci://registry[.]example[.]com/", "--kubeconfig", kc, "-n", ns)
	if err != nil {
		t.Fatalf("add: %v\n%s%s", err, out, errOut)
	}
	gr := &fleetv1alpha1.GitRepo{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, gr); err != nil {
		t.Fatal(err)
	}
	s := gr.Spec
	if s.Repo != "https://git.example.com/org/deploy.git" || s.Branch != "main" || strings.Join(s.Paths, ",") != "apps/*,base" ||
		s.ClientSecretName != "git-auth" || s.HelmSecretName != "helm-auth" || s.HelmRepoURLRegex != "^oci://registry[.]example[.]com/" || s.PollingInterval == nil || s.PollingInterval.Duration != 30*time.Second ||
		len(s.Targets) != 2 || s.Targets[0].ClusterName != "edge-1" || s.Targets[1].ClusterSelector.MatchLabels["env"] != "prod" {
		t.Errorf("spec %+v", s)
	}

	// The controller's status, as the list and get commands show it.
	before := gr.DeepCopy()
	gr.Status.Commit = "0123456789abcdef0123456789abcdef01234567"
	gr.Status.Summary = fleetv1alpha1.GitRepoSummary{Bundles: 2, ReadyBundles: 1}
	gr.Status.Bundles = []fleetv1alpha1.GitRepoBundle{{Name: "web-apps-a", Path: "apps/a", Ready: 1, DesiredReady: 1},
		{Name: "web-base", Path: "base", DesiredReady: 1, Message: "1 cluster pending"}}
	meta.SetStatusCondition(&gr.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionSynced, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReasonSucceeded, Message: "synced", ObservedGeneration: gr.Generation})
	meta.SetStatusCondition(&gr.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonBundlesNotReady, Message: "1/2 Bundles ready", ObservedGeneration: gr.Generation})
	if err := mgmt.Client.Status().Patch(ctx, gr, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	out, _, err = drover(ctx, "gitrepo", "list", "--kubeconfig", kc, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NAME", "web", "https://git.example.com/org/deploy.git", "0123456789ab", "1/2", "BundlesNotReady"} {
		if !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}
	// The controller's Events about it (events.k8s.io, as drover records them), newest last.
	for i, note := range []string{"commit 0123456 of branch main rendered into 2 Bundles", "RenderFailed: path base: base/drover.yaml: unknown key helm.vaules"} {
		ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "web-"},
			EventTime: metav1.NewMicroTime(time.Now().Add(time.Duration(i-2) * time.Minute)), ReportingController: "drover-gitrepo", ReportingInstance: "drover-gitrepo-1",
			Action: "Sync", Reason: []string{fleetv1alpha1.EventGitRepoDeployed, fleetv1alpha1.EventGitRepoSyncFailed}[i], Type: []string{"Normal", "Warning"}[i], Note: note,
			Regarding: corev1.ObjectReference{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "GitRepo", Namespace: ns, Name: "web", UID: gr.UID}}
		if err := mgmt.Client.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err = drover(ctx, "gitrepo", "get", "web", "--kubeconfig", kc, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(out, "Deployed"), strings.Index(out, "SyncFailed"); !strings.Contains(out, "\nEvents:\n") || i < 0 || j < i ||
		!strings.Contains(out, "unknown key helm.vaules") {
		t.Errorf("get output lacks the GitRepo's Events, oldest first:\n%s", out)
	}
	for _, want := range []string{"branch main", "apps/*, base", "web-base", "1 cluster pending", "Condition Ready:"} {
		if !strings.Contains(out, want) {
			t.Errorf("get output lacks %q:\n%s", want, out)
		}
	}

	// --wait ends with exit 3 and the reason when the fetch fails.
	_, _, err = drover(ctx, "gitrepo", "add", "private", "--repo", "https://git.example.com/org/private.git",
		"--cluster", "edge-1", "--kubeconfig", kc, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	p := &fleetv1alpha1.GitRepo{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "private"}, p); err != nil {
		t.Fatal(err)
	}
	before = p.DeepCopy()
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionSynced, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonAuthFailed, Message: "the Git server refused the credentials", ObservedGeneration: p.Generation})
	if err := mgmt.Client.Status().Patch(ctx, p, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(mgmt.Config, client.Options{Scheme: mgmt.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	err = waitUntil(ctx, &bytes.Buffer{}, "gitrepo", 10*time.Second, gitRepoReady(c, client.ObjectKeyFromObject(p)))
	if ExitCode(err) != ExitNotReady || !strings.Contains(err.Error(), "AuthFailed: the Git server refused the credentials") || strings.Contains(err.Error(), "timed out") {
		t.Errorf("wait on a GitRepo that cannot fetch: exit %d, %v; want exit %d at once, with the reason and message", ExitCode(err), err, ExitNotReady)
	}
}

func TestGitRepoAddUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"gitrepo", "add", "x", "--repo", "https://e.com/r.git", "--branch", "main", "--tag", "v1", "--cluster", "c"},
		{"gitrepo", "add", "x", "--repo", "https://e.com/r.git"},
		{"gitrepo", "add", "x", "--cluster", "c"},
	} {
		_, _, err := drover(t.Context(), args...)
		if ExitCode(err) != ExitUsage {
			t.Errorf("%v: exit %d (%v), want %d", args, ExitCode(err), err, ExitUsage)
		}
	}
}
