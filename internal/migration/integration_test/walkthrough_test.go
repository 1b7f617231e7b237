package integration_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/migration"
)

// TestCLIWalkthrough follows a new user's RKE2 --config migration through the problems a
// walkthrough found: an exported manifest with a resourceVersion is refused by plan; a failing
// apply command is bounded by --step-timeout and re-running apply retries the failed step (with
// a warning for a changed setting); a second apply on a locked state file exits at once; apply
// during an unfinished rollback exits at once; rollback prints what it waits for; rollback
// without a state file names it; plan refuses a downstream kubeconfig whose
// kube-controller-manager is already external.
func TestCLIWalkthrough(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // a regression loops forever
	defer cancel()
	e := newEnv(t, envOpts{rke2: true})
	dir := t.TempDir()
	in, err := os.ReadFile("../rke2/testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clean := strings.Replace(string(in), "namespace: fleet-default", "namespace: "+e.ns, 1)
	file := filepath.Join(dir, "cluster.yaml")
	kc := filepath.Join(dir, "downstream.kubeconfig")
	if err := os.WriteFile(kc, kubeconfig(t), 0o600); err != nil {
		t.Fatal(err)
	}
	state := file + ".migration-state.json"
	args := func(sub string, extra ...string) []string {
		return append([]string{"migrate", "cloud-provider", sub, "--distribution", "rke2", "--config", file, "--downstream-kubeconfig", kc,
			"--system-namespace", e.ns, "--kcm-identity", "kcm-" + e.ns, "--node-selector", e.sim.Selector(),
			"--poll-interval", "50ms", "--step-timeout", "1m"}, extra...)
	}
	run := func(want int, wantOut []string, a ...string) string {
		t.Helper()
		out := &stopWriter{}
		err := e.drover(ctx, out, a...)
		text := out.String()
		if err != nil {
			text += "\nError: " + err.Error()
		}
		if got := cli.ExitCode(err); got != want {
			t.Fatalf("drover %s: exit %d, want %d\n%s", strings.Join(a[:3], " "), got, want, text)
		}
		for _, w := range wantOut {
			if !strings.Contains(text, w) {
				t.Errorf("drover %s output lacks %q:\n%s", strings.Join(a[:3], " "), w, text)
			}
		}
		return text
	}

	// An exported manifest (with metadata.resourceVersion) would fail every apply: refused.
	stale := strings.Replace(clean, "metadata:\n", "metadata:\n  resourceVersion: \"1\"\n", 1)
	if err := os.WriteFile(file, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	run(cli.ExitRefused, []string{"sets metadata.resourceVersion", "remove metadata.resourceVersion"}, args("plan")...)

	// A failing apply command is retried for --step-timeout, then the step fails.
	if err := os.WriteFile(file, []byte(clean), 0o644); err != nil {
		t.Fatal(err)
	}
	run(cli.ExitNotReady, []string{"still failing after 2s (--step-timeout)", "kubectl replace -f", "run apply again to retry step 1 EnableLeaderMigration"},
		append(args("apply"), "--apply-command", "kubectl replace -f {file}", "--step-timeout", "2s")...)

	// Another apply holds the state file: exit at once.
	unlock, err := migration.FileStore{Path: state}.Lock()
	if err != nil {
		t.Fatal(err)
	}
	run(cli.ExitError, []string{"another drover migrate holds the state file"}, args("apply")...)
	unlock()

	// Fixed (the default apply command): apply retries the failed step and finishes; a changed
	// setting is named in a warning.
	run(cli.ExitOK, []string{"Retrying step 1 EnableLeaderMigration", `Warning: --leader-migration=false is ignored: resuming with the saved value "true"`, "Migration Succeeded"},
		append(args("apply"), "--leader-migration=false")...)

	// An unfinished rollback: apply exits at once, saying so.
	st, err := migration.FileStore{Path: state}.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.Status.Phase = migrationv1alpha1.PhaseRollingBack
	if err := (migration.FileStore{Path: state}).Save(ctx, st); err != nil {
		t.Fatal(err)
	}
	run(cli.ExitNotReady, []string{migration.ErrRollbackInProgress.Error()}, args("apply")...)

	// rollback says what it waits for.
	run(cli.ExitOK, []string{"Rollback: waiting: ", "Rolled back"}, args("rollback")...)

	// rollback without a state file names the file it looked for.
	run(cli.ExitError, []string{"no migration state file " + filepath.Join(dir, "other.json")}, append(args("rollback"), "--state", filepath.Join(dir, "other.json"))...)

	// A downstream kubeconfig whose kube-controller-manager is already external (another,
	// migrated cluster's) is refused by the preflight.
	e.stopSim()
	var pods corev1.PodList
	if err := full.Client.List(ctx, &pods, client.InNamespace(e.ns), client.MatchingLabels{"component": "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if err := full.Client.Delete(ctx, &p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		n := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: p.Name + "-x", Labels: p.Labels},
			Spec: corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: []corev1.Container{{Name: "kube-controller-manager", Image: "x",
				Command: []string{"kube-controller-manager", "--cloud-provider=external"}}}, Tolerations: p.Spec.Tolerations}}
		if err := full.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	run(cli.ExitRefused, []string{"kube-controller-manager does not agree", "--cloud-provider=aws", "another cluster's"}, args("plan")...)
}
