package integration_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/migration"
)

// stopWriter collects a command's output and calls stop once the output matches stop's pattern:
// progress lines are printed after each step is saved, so this interrupts the command (as
// Ctrl-C would) exactly at a step boundary.
type stopWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	at   *regexp.Regexp
	stop context.CancelFunc
}

func (w *stopWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.at != nil && w.at.Match(w.buf.Bytes()) {
		w.stop()
		w.at = nil
	}
	return n, err
}

func (w *stopWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// drover runs the drover command line in-process, with the distribution simulator standing in
// for rke up, helm and kubectl.
func (e *env) drover(ctx context.Context, out *stopWriter, args ...string) error {
	cmd := cli.NewRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(out)
	return cmd.ExecuteContext(migration.WithRunner(ctx, e.sim.Runner))
}

// TestCLIPlanApplyStatusRollback drives `drover migrate cloud-provider` for an RKE2 Cluster
// manifest and an RKE1 cluster.yml: plan prints the exact diffs (golden), apply is interrupted
// after step 2 and resumed from the state file without repeating an action, status reports the
// progress, and rollback restores the original file byte for byte.
func TestCLIPlanApplyStatusRollback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dist    string
		input   string // the configuration file as the user has it
		final   string // golden final document
		applies int
	}{
		{"rke2", "../rke2/testdata/cluster.yaml", "../rke2/testdata/leader-migration.final.yaml", 5},
		{"rke1", "../rke1/testdata/cluster.yml", "testdata/rke1-leader-migration.final.yaml", 4},
	}
	for _, tc := range tests {
		t.Run(tc.dist, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			e := newEnv(t, envOpts{rke2: tc.dist == "rke2"})
			dir := t.TempDir()
			in, err := os.ReadFile(tc.input)
			if err != nil {
				t.Fatal(err)
			}
			// The RKE2 manifest names the test's provisioning Cluster (kubectl apply targets it).
			original := []byte(strings.Replace(string(in), "namespace: fleet-default", "namespace: "+e.ns, 1))
			file := filepath.Join(dir, filepath.Base(tc.input))
			if err := os.WriteFile(file, original, 0o644); err != nil {
				t.Fatal(err)
			}
			kc := filepath.Join(dir, "downstream.kubeconfig")
			if err := os.WriteFile(kc, kubeconfig(t), 0o600); err != nil {
				t.Fatal(err)
			}
			args := func(sub string) []string {
				return []string{"migrate", "cloud-provider", sub, "--distribution", tc.dist, "--config", file, "--kubeconfig", kc,
					"--system-namespace", e.ns, "--kcm-identity", "kcm-" + e.ns, "--node-selector", e.sim.Selector(),
					"--poll-interval", "50ms", "--step-timeout", "1m"}
			}
			normalize := func(s string) string {
				return strings.NewReplacer(dir, "DIR", e.ns, "NAMESPACE").Replace(s)
			}

			// plan: changes nothing, prints every step with its exact diff.
			out := &stopWriter{}
			if err := e.drover(ctx, out, args("plan")...); err != nil {
				t.Fatalf("plan: %v\n%s", err, out)
			}
			golden(t, "cli-plan-"+tc.dist+".txt", []byte(normalize(out.String())))
			if got, _ := os.ReadFile(file); !bytes.Equal(got, original) {
				t.Fatal("plan changed the configuration file")
			}
			state := file + ".migration-state.json"
			if _, err := os.Stat(state); !os.IsNotExist(err) {
				t.Fatalf("plan wrote a state file: %v", err)
			}

			// apply, interrupted right after step 2 is saved.
			applyCtx, interrupt := context.WithCancel(ctx)
			out = &stopWriter{at: regexp.MustCompile(`step 2 CordonControlPlane\s+Succeeded`), stop: interrupt}
			err = e.drover(applyCtx, out, args("apply")...)
			interrupt()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted apply: %v, want context.Canceled\n%s", err, out)
			}
			st, err := migration.FileStore{Path: state}.Load(ctx)
			if err != nil {
				t.Fatalf("state file after the interruption: %v", err)
			}
			if st.Status.Steps[2].Phase != migrationv1alpha1.StepSucceeded || st.Status.Steps[3].Phase != migrationv1alpha1.StepPending {
				t.Fatalf("state after the interruption: step 2 %s, step 3 %s; want Succeeded, Pending", st.Status.Steps[2].Phase, st.Status.Steps[3].Phase)
			}

			// status reads the state file.
			out = &stopWriter{}
			if err := e.drover(ctx, out, args("status")...); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Phase Running, step 2", "step 1 EnableLeaderMigration      Succeeded", "step 3 InstallCCM                 Pending"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("status output lacks %q:\n%s", want, out)
				}
			}

			// apply again: resumes at step 3, never repeats steps 0-2.
			out = &stopWriter{}
			if err := e.drover(ctx, out, args("apply")...); err != nil {
				t.Fatalf("resumed apply: %v\n%s", err, out)
			}
			if !strings.Contains(out.String(), "Resuming from "+state) || !strings.Contains(out.String(), "Migration Succeeded") {
				t.Errorf("resumed apply output:\n%s", out)
			}
			// The progress bar starts from the saved steps and ends full.
			for _, want := range []string{"] 3/7 steps done\n", "] 7/7 steps done\nMigration Succeeded"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("resumed apply shows no progress bar %q:\n%s", want, out)
				}
			}
			if m := regexp.MustCompile(`(?m)^step [0-2] .*$`).FindString(out.String()); m != "" {
				t.Errorf("resumed apply repeated a finished step: %q", m)
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(tc.final)
			if err != nil {
				t.Fatal(err)
			}
			got = []byte(strings.Replace(string(got), "namespace: "+e.ns, "namespace: fleet-default", 1))
			if d, _ := migration.Diff(want, got); d != "" {
				t.Errorf("final %s differs from %s (-want +got):\n%s", file, tc.final, d)
			}
			if n := e.sim.Applies(); n != tc.applies {
				t.Errorf("distribution applied %d configurations, want %d (none repeated)", n, tc.applies)
			}

			// rollback restores the original file exactly.
			out = &stopWriter{}
			if err := e.drover(ctx, out, args("rollback")...); err != nil {
				t.Fatalf("rollback: %v\n%s", err, out)
			}
			if got, _ := os.ReadFile(file); !bytes.Equal(got, original) {
				d, _ := migration.Diff(original, got)
				t.Fatalf("rollback did not restore %s:\n%s", file, d)
			}
			out = &stopWriter{}
			if err := e.drover(ctx, out, args("status")...); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "Phase RolledBack") {
				t.Errorf("status after rollback:\n%s", out)
			}
		})
	}
}
