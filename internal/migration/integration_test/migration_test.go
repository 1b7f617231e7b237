package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/rke2"
	"github.com/droverhq/drover/pkg/distsim"
)

func TestMigrateEndToEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rke2    bool
		lm      bool
		version string
		// applies counts configuration applications by the distribution (rke2: + the initial
		// one); a version bump is its own, written after the verified switch.
		applies int
	}{
		{"rke2-leader-migration", true, true, "", 5},
		{"rke2-leader-migration-bump", true, true, "v1.27.16+rke2r1", 6},
		{"rke2-no-leader-migration", true, false, "", 2},
		{"rke2-no-leader-migration-bump", true, false, "v1.27.16+rke2r1", 3},
		{"rke1-leader-migration", false, true, "", 4},
		{"rke1-leader-migration-bump", false, true, "v1.27.16-rancher1-1", 5},
		{"rke1-no-leader-migration", false, false, "", 2},
		{"rke1-no-leader-migration-bump", false, false, "v1.27.16-rancher1-1", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			e := newEnv(t, envOpts{rke2: tc.rke2})
			eng := e.engine(&migration.MemoryStore{}, time.Minute)
			actions := map[int]int{}
			eng.OnAction = func(s int) { actions[s]++ }
			if err := eng.Init(ctx, spec(tc.lm, tc.version)); err != nil {
				t.Fatal(err)
			}
			if err := eng.Run(ctx); err != nil {
				t.Fatal(err)
			}
			st, _ := eng.Store.Load(ctx)
			if st.Status.Phase != migrationv1alpha1.PhaseSucceeded {
				t.Fatalf("phase %s, want Succeeded", st.Status.Phase)
			}
			for s, n := range actions {
				if n != 1 {
					t.Errorf("step %d action ran %d times, want 1", s, n)
				}
			}
			doc, err := e.dist.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".final.yaml", e.normalize(doc))
			if got := e.sim.Applies(); got != tc.applies {
				t.Errorf("distribution applied %d configurations, want %d", got, tc.applies)
			}
			// Logged only: with every subtest of the package in parallel on a couple of cores
			// these figures measure contention. BenchmarkMigrationStepOverhead measures (and
			// asserts) the 1 s per step budget on its own.
			for i, d := range eng.Overhead {
				t.Logf("step %d %s: drover overhead %s", i, migration.StepNames[i], d)
			}
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	t.Parallel()
	replace := func(old, new string) func([]byte) []byte {
		return func(b []byte) []byte { return []byte(strings.Replace(string(b), old, new, 1)) }
	}
	tests := []struct {
		name  string
		rke2  bool
		opts  envOpts
		extra func(t *testing.T, e *env)
		want  string
	}{
		{name: "already external", opts: envOpts{doc: replace("name: aws", "name: external-aws")}, want: "already uses the external cloud provider"},
		{name: "already external rke2", rke2: true, opts: envOpts{doc: replace("cloud-provider-name: aws", "cloud-provider-name: external")}, want: "already uses the external cloud provider"},
		{name: "in-tree at 1.27", opts: envOpts{doc: replace("v1.26.15-rancher1-1", "v1.27.16-rancher1-1")}, want: "which was removed in 1.27"},
		{name: "node without ProviderID", extra: func(t *testing.T, e *env) { addNode(t, e, "ip-10-250-0-1.us-west-2.compute.internal", "") }, want: `has ProviderID "", want aws:///`},
		{name: "node name would change", extra: func(t *testing.T, e *env) { addNode(t, e, "pool1-abcde", "aws:///us-west-2a/i-0abc") }, want: "node pool1-abcde is not named after its EC2 private DNS name"},
		{name: "rke1 node without internal_address or hostname_override", opts: envOpts{doc: replace("    internal_address: 10.0.1.20\n", "")}, want: "cluster.yml node 10.0.1.20 has neither internal_address nor hostname_override"},
		{name: "missing lease permission", opts: envOpts{noLeasePerm: true}, want: "may not get, create, update leases/cloud-provider-extraction-migration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.rke2 = tc.rke2
			e := newEnv(t, tc.opts)
			if tc.extra != nil {
				tc.extra(t, e)
			}
			eng := e.engine(&migration.MemoryStore{}, time.Minute)
			plan, err := eng.Plan(t.Context(), spec(true, ""))
			if err != nil {
				t.Fatal(err)
			}
			if !containsAny(plan.Refusals, tc.want) {
				t.Fatalf("refusals %q, want one containing %q", plan.Refusals, tc.want)
			}
			// apply refuses too, at step 0, and changes nothing.
			before, _ := e.dist.Read(t.Context())
			if err := eng.Init(t.Context(), spec(true, "")); err != nil {
				t.Fatal(err)
			}
			err = eng.Run(t.Context())
			var fe *migration.FailedError
			if !errors.As(err, &fe) || fe.Step != migration.StepPreflight || !strings.Contains(fe.Msg, tc.want) {
				t.Fatalf("apply: %v, want a step 0 failure containing %q", err, tc.want)
			}
			after, _ := e.dist.Read(t.Context())
			if string(before) != string(after) {
				t.Fatal("a refused migration changed the configuration")
			}
		})
	}
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func addNode(t *testing.T, e *env, name, pid string) {
	t.Helper()
	n := envtestFakeNode(name, map[string]string{distsim.ClusterLabel: e.ns})
	n.Spec.ProviderID = pid
	if err := full.Client.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = full.Client.Delete(context.Background(), n) })
}

// crashStore persists like its inner store, then "crashes" the engine (cancels its context)
// right after save number crashAt: the next engine must resume from what was saved.
type crashStore struct {
	migration.Store
	saves, crashAt int
	cancel         context.CancelFunc
}

var errCrash = errors.New("injected crash")

func (c *crashStore) Save(ctx context.Context, s *migration.State) error {
	if err := c.Store.Save(ctx, s); err != nil {
		return err
	}
	c.saves++
	if c.saves == c.crashAt {
		c.cancel()
		return errCrash
	}
	return nil
}

// TestCrashAfterEverySaveResumes kills the engine right after each persisted transition of one
// migration and resumes it with a fresh engine: no action runs twice, the result is the same.
func TestCrashAfterEverySaveResumes(t *testing.T) {
	t.Parallel()
	for _, rke2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("rke2=%t", rke2), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{rke2: rke2})
			file := migration.FileStore{Path: t.TempDir() + "/state.json"}
			actions := map[int]int{}
			crashes := 0
			for attempt := 1; ; attempt++ {
				if attempt > 100 {
					t.Fatal("migration did not finish after 100 resumes")
				}
				ctx, cancel := context.WithCancel(t.Context())
				// Each engine crashes after its first save: a crash after every transition.
				eng := e.engine(&crashStore{Store: file, crashAt: 1, cancel: cancel}, time.Minute)
				eng.OnAction = func(s int) { actions[s]++ }
				if err := eng.Init(ctx, spec(true, "")); err != nil && !errors.Is(err, errCrash) {
					t.Fatal(err)
				}
				err := eng.Run(ctx)
				cancel()
				st, lerr := file.Load(t.Context())
				if lerr != nil {
					t.Fatal(lerr)
				}
				if st.Status.Phase == migrationv1alpha1.PhaseSucceeded {
					break
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				crashes++
			}
			t.Logf("%d crashes injected", crashes)
			for s := range migration.NumSteps {
				if actions[s] != 1 {
					t.Errorf("step %d action ran %d times, want exactly 1", s, actions[s])
				}
			}
			doc, err := e.dist.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			name := "rke1-leader-migration.final.yaml"
			if rke2 {
				name = "rke2-leader-migration.final.yaml"
			}
			golden(t, name, e.normalize(doc))
			want := map[bool]int{false: 4, true: 5}[rke2]
			if got := e.sim.Applies(); got != want {
				t.Errorf("distribution applied %d configurations, want %d (no repeats)", got, want)
			}
		})
	}
}

func TestMisbehaviourStopsAndRollsBack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		rke2      bool
		misbehave distsim.Misbehaviour
		step      int
		want      string
		// waits: the failure is a verification that never passes, so the step timeout (short
		// here) fails it; other failures are found at once, and the earlier steps must not
		// time out on a loaded machine.
		waits bool
		// version is the target Kubernetes version (a bump with the switch); failedGolden, if
		// set, is the golden document at the failure (the switch made, the version not).
		version, failedGolden string
	}{
		{"lease never acquired", true, distsim.NeverAcquireLease, migration.StepEnableLeaderMigration, "Lease NS/cloud-provider-extraction-migration does not exist yet", true, "", ""},
		{"daemonset never ready", true, distsim.DaemonSetNeverReady, migration.StepInstallCCM, "runs on 0 nodes, want every control-plane node (2)", true, "", ""},
		{"node renamed", true, distsim.RenameNode, migration.StepSwitchProvider, "re-registered as NS-worker-2", false, "", ""},
		{"providerID missing", false, distsim.DropProviderID, migration.StepSwitchProvider, `has ProviderID "", was "aws:///us-west-2a/`, false, "", ""},
		{"lease never acquired rke1", false, distsim.NeverAcquireLease, migration.StepEnableLeaderMigration, "does not exist yet", true, "", ""},
		{"load balancer sync fails", true, distsim.LoadBalancerSyncFails, migration.StepSwitchProvider, "LoadBalancer Service NS/web: SyncLoadBalancerFailed after the switch (Error syncing load balancer: failed to ensure load balancer: AccessDenied", false, "", ""},
		// A failed switch with a version bump is still below 1.27, so it rolls back.
		{"node renamed with version bump", true, distsim.RenameNode, migration.StepSwitchProvider, "re-registered as NS-worker-2", false,
			"v1.27.16+rke2r1", "rke2-leader-migration-bump.failed-switch.yaml"},
		{"providerID missing with version bump", false, distsim.DropProviderID, migration.StepSwitchProvider, `has ProviderID "", was "aws:///us-west-2a/`, false,
			"v1.27.16-rancher1-1", "rke1-leader-migration-bump.failed-switch.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			e := newEnv(t, envOpts{rke2: tc.rke2, misbehave: tc.misbehave})
			original, err := e.dist.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			timeout := time.Minute
			if tc.waits {
				timeout = 5 * time.Second
			}
			eng := e.engine(&migration.MemoryStore{}, timeout)
			if err := eng.Init(ctx, spec(true, tc.version)); err != nil {
				t.Fatal(err)
			}
			err = eng.Run(ctx)
			var fe *migration.FailedError
			want := strings.ReplaceAll(tc.want, "NS", e.ns)
			if !errors.As(err, &fe) || fe.Step != tc.step || !strings.Contains(fe.Msg, want) {
				t.Fatalf("got %v, want step %d failing with %q", err, tc.step, want)
			}
			if tc.failedGolden != "" {
				doc, err := e.dist.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, tc.failedGolden, e.normalize(doc))
			}
			if err := eng.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := e.dist.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(original) {
				d, _ := migration.Diff(original, got)
				t.Fatalf("rollback did not restore the original document:\n%s", d)
			}
			if !tc.rke2 {
				if _, err := os.Stat(e.file + ".aws-ccm-values.yaml"); !os.IsNotExist(err) {
					t.Errorf("CCM values file left behind after rollback: %v", err)
				}
			}
			st, _ := eng.Store.Load(ctx)
			if st.Status.Phase != migrationv1alpha1.PhaseRolledBack {
				t.Fatalf("phase %s, want RolledBack", st.Status.Phase)
			}
		})
	}
}

func TestRollbackRefusedAt127(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, envOpts{})
	eng := e.engine(&migration.MemoryStore{}, time.Minute)
	if err := eng.Init(ctx, spec(true, "v1.27.16-rancher1-1")); err != nil {
		t.Fatal(err)
	}
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	err := eng.Rollback(ctx)
	if err == nil || !strings.Contains(err.Error(), "no in-tree AWS provider") {
		t.Fatalf("rollback at 1.27: %v, want a refusal", err)
	}
}

// racingDist edits the provisioning Cluster behind the engine's back (another field) between
// the engine's read of the document and its write, the first time step is edited.
type racingDist struct {
	migration.Distribution
	step int
	edit func() error
	once sync.Once
	err  error
}

func (r *racingDist) Edit(doc []byte, step int, p migration.Params) ([]byte, error) {
	if step == r.step {
		r.once.Do(func() { r.err = r.edit() })
	}
	return r.Distribution.Edit(doc, step, p)
}

// TestConcurrentEditKept: an edit of the provisioning Cluster made while a step edits it (the
// user's, or Rancher's) is kept, and the step's own edit is made on top of it.
func TestConcurrentEditKept(t *testing.T) {
	t.Parallel()
	const field, value = "defaultPodSecurityAdmissionConfigurationTemplateName", "rancher-restricted"
	for _, step := range []int{migration.StepEnableLeaderMigration, migration.StepSwitchProvider} {
		t.Run(migration.StepNames[step], func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			e := newEnv(t, envOpts{rke2: true})
			race := &racingDist{Distribution: e.dist, step: step, edit: func() error {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(rke2.ClusterGVK)
				if err := full.Client.Get(ctx, e.key, u); err != nil {
					return err
				}
				if err := unstructured.SetNestedField(u.Object, value, "spec", field); err != nil {
					return err
				}
				return full.Client.Update(ctx, u)
			}}
			e.dist = race
			eng := e.engine(&migration.MemoryStore{}, time.Minute)
			if err := eng.Init(ctx, spec(true, "")); err != nil {
				t.Fatal(err)
			}
			if err := eng.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if race.err != nil {
				t.Fatalf("concurrent edit: %v", race.err)
			}
			doc, err := e.dist.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			line := "  " + field + ": " + value + "\n"
			if !strings.Contains(string(doc), line) {
				t.Fatalf("the concurrent edit (%s) was lost:\n%s", strings.TrimSpace(line), doc)
			}
			golden(t, "rke2-leader-migration.final.yaml", e.normalize([]byte(strings.Replace(string(doc), line, "", 1))))
		})
	}
}

// TestRollbackKeepsOthersEdits: a change someone else made to the configuration during the
// migration (here an unrelated setting, written after drover's edits) survives the rollback,
// which undoes drover's edits only; without that change the original comes back byte for byte
// (TestMisbehaviourStopsAndRollsBack).
func TestRollbackKeepsOthersEdits(t *testing.T) {
	t.Parallel()
	for _, rke2 := range []bool{true, false} {
		t.Run(map[bool]string{true: "rke2", false: "rke1"}[rke2], func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			e := newEnv(t, envOpts{rke2: rke2, misbehave: distsim.RenameNode})
			original, err := e.dist.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			eng := e.engine(&migration.MemoryStore{}, time.Minute)
			if err := eng.Init(ctx, spec(true, "")); err != nil {
				t.Fatal(err)
			}
			if err := eng.Run(ctx); err == nil {
				t.Fatal("the migration succeeded; want it to fail at the switch (a node renamed)")
			}
			// Someone else changes a setting drover does not touch.
			theirs := func(doc []byte) []byte {
				t.Helper()
				var m map[string]any
				if err := sigsyaml.Unmarshal(doc, &m); err != nil {
					t.Fatal(err)
				}
				if rke2 {
					m["spec"].(map[string]any)["defaultClusterRoleForProjectMembers"] = "user"
				} else {
					m["ignore_docker_version"] = true
				}
				out, err := sigsyaml.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			cur, err := e.dist.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.dist.Write(ctx, theirs(cur)); err != nil {
				t.Fatal(err)
			}
			if err := eng.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := e.dist.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := theirs(original)
			if d, _ := migration.Diff(want, got); d != "" {
				t.Fatalf("after the rollback, want the original with their change:\n%s", d)
			}
		})
	}
}
