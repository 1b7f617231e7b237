package rke2

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/internal/migration"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := migration.Diff(want, got); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, d)
	}
}

func TestEditSteps(t *testing.T) {
	in, err := os.ReadFile("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    migration.Params
	}{
		{"leader-migration", migration.Params{LeaderMigration: true, ImageTag: "v1.26.0"}},
		{"leader-migration-bump", migration.Params{LeaderMigration: true, KubernetesVersion: "v1.27.16+rke2r1", ImageTag: "v1.27.0"}},
		{"no-leader-migration", migration.Params{ImageTag: "v1.26.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := in
			for step := range migration.NumSteps {
				if !tc.p.LeaderMigration && (step == migration.StepEnableLeaderMigration || step == migration.StepInstallCCM || step == migration.StepDisableCCMLeaderMigration) {
					continue
				}
				next, err := Editor{}.Edit(doc, step, tc.p)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				again, err := Editor{}.Edit(next, step, tc.p)
				if err != nil || string(again) != string(next) {
					t.Fatalf("step %d is not idempotent (err %v)", step, err)
				}
				if step == migration.StepEnableLeaderMigration {
					golden(t, fmt.Sprintf("%s.step1.yaml", tc.name), next)
				}
				doc = next
			}
			golden(t, tc.name+".final.yaml", doc)
			info, err := Editor{}.Inspect(doc)
			if err != nil || info.Provider != "external" {
				t.Fatalf("final provider %q (err %v), want external", info.Provider, err)
			}
		})
	}
}

func TestLeaderMigrationMergesIntoExistingControlPlaneEntry(t *testing.T) {
	in := []byte(`spec:
  rkeConfig:
    machineSelectorConfig:
      - config:
          kube-controller-manager-arg:
            - node-monitor-period=10s
        machineLabelSelector:
          matchLabels:
            rke.cattle.io/control-plane-role: "true"
`)
	got, err := Editor{}.Edit(in, migration.StepEnableLeaderMigration, migration.Params{LeaderMigration: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `spec:
  rkeConfig:
    machineSelectorConfig:
      - config:
          kube-controller-manager-arg:
            - node-monitor-period=10s
            - enable-leader-migration
        machineLabelSelector:
          matchLabels:
            rke.cattle.io/control-plane-role: "true"
`
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	back, err := Editor{}.Edit(got, migration.StepSwitchProvider, migration.Params{LeaderMigration: true})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := migration.Diff([]byte(want), back); d == "" || !containsLine(back, "            - node-monitor-period=10s") {
		t.Fatalf("switch must drop only enable-leader-migration, got:\n%s", back)
	}
}

func containsLine(doc []byte, line string) bool {
	for _, l := range splitLines(string(doc)) {
		if l == line {
			return true
		}
	}
	return false
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
