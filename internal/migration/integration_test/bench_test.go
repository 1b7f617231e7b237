package integration_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/rke1"
)

// BenchmarkMigrationStepOverhead measures drover's own time per step of a full migration with
// leader migration, as the CLI runs it (state file fsynced on every save): the time spent in
// the engine's transitions, including its API calls and the verification that passed,
// excluding the waiting between verification polls and the polls that found the cluster not
// ready yet (the cluster's time; reported separately, at the tests' 50 ms poll interval) and, for RKE1, the apply and Helm commands (rke
// up's and helm's time). It reports each step's median over the iterations (step<N>-ms), the
// largest median (max-ms/step) and their mean. The target is at most 1 s per step. Run with e.g.
//
//	go test ./internal/migration/integration_test -run '^$' -bench StepOverhead -benchtime 3x
func BenchmarkMigrationStepOverhead(b *testing.B) {
	for _, dist := range []string{"rke2", "rke1"} {
		b.Run(dist, func(b *testing.B) {
			// Per step and iteration: drover's own time, the excluded command and poll times.
			var own, commands, polls [migration.NumSteps][]time.Duration
			for range b.N {
				b.StopTimer()
				e := newEnv(b, envOpts{rke2: dist == "rke2"})
				var cmd time.Duration // command time since the last action
				var cmds [migration.NumSteps]time.Duration
				if dist == "rke1" {
					e.dist = rke1.New(e.file, "", func(ctx context.Context, argv []string) error {
						start := time.Now()
						defer func() { cmd += time.Since(start) }()
						return e.sim.Runner(ctx, argv)
					})
				}
				eng := e.engine(migration.FileStore{Path: filepath.Join(b.TempDir(), "state.json")}, time.Minute)
				eng.OnAction = func(step int) { cmds[step] += cmd; cmd = 0 }
				if err := eng.Init(b.Context(), spec(true, "")); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				err := eng.Run(b.Context())
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if st, _ := eng.Store.Load(b.Context()); st.Status.Phase != migrationv1alpha1.PhaseSucceeded {
					b.Fatalf("phase %s, want Succeeded", st.Status.Phase)
				}
				e.stopSim() // its polling would load the next iteration's API server and CPU
				for s := range migration.NumSteps {
					own[s] = append(own[s], eng.Overhead[s]-cmds[s])
					commands[s] = append(commands[s], cmds[s])
					polls[s] = append(polls[s], eng.PollTime[s])
				}
			}
			// Medians: the host is shared, and a descheduled process is not drover's cost.
			var worst, sum time.Duration
			for s := range migration.NumSteps {
				d := median(own[s])
				sum += d
				worst = max(worst, d)
				b.Logf("step %d %-26s drover median %7.1f ms, max %7.1f ms (excluded: commands %6.1f ms, unready polls %7.1f ms)",
					s, migration.StepNames[s], ms(d), ms(slices.Max(own[s])), ms(median(commands[s])), ms(median(polls[s])))
				b.ReportMetric(ms(d), fmt.Sprintf("step%d-ms", s))
				if d > time.Second {
					b.Errorf("step %d %s: drover overhead %s exceeds the 1 s target", s, migration.StepNames[s], d)
				}
			}
			b.ReportMetric(ms(worst), "max-ms/step")
			b.ReportMetric(ms(sum/migration.NumSteps), "mean-ms/step")
		})
	}
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
