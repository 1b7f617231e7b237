package cli

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestGitRepoRedeploy: `drover gitrepo redeploy` increments the GitRepo's
// spec.forceSyncGeneration (which the GitRepo controller copies to its Bundles), once per run.
func TestGitRepoRedeploy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"}, Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/apps.git"}}
	if err := mgmt.Client.Create(ctx, gr); err != nil {
		t.Fatal(err)
	}
	for want := int64(1); want <= 2; want++ {
		out, errOut, err := drover(ctx, "gitrepo", "redeploy", "apps", "-n", ns, "--kubeconfig", mgmtKubeconfig(t))
		if err != nil || !strings.Contains(out, "gitrepo.fleet.drover.io/apps redeploying") {
			t.Fatalf("redeploy: %v\n%s%s", err, out, errOut)
		}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(gr), gr); err != nil {
			t.Fatal(err)
		}
		if gr.Spec.ForceSyncGeneration != want {
			t.Errorf("spec.forceSyncGeneration %d, want %d", gr.Spec.ForceSyncGeneration, want)
		}
	}
	if _, _, err := drover(ctx, "gitrepo", "redeploy", "nope", "-n", ns, "--kubeconfig", mgmtKubeconfig(t)); err == nil || !strings.Contains(err.Error(), `gitrepo "nope" not found`) {
		t.Errorf("redeploy of a missing GitRepo: %v", err)
	}
}
