package rke1

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
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
	in, err := os.ReadFile("testdata/cluster.yml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    migration.Params
		imds bool
	}{
		{"leader-migration", migration.Params{LeaderMigration: true}, false},
		{"bump-imds", migration.Params{LeaderMigration: true, KubernetesVersion: "v1.27.16-rancher1-1"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{UseInstanceMetadataHostname: tc.imds}
			doc := in
			for step := range migration.NumSteps {
				next, err := c.Edit(doc, step, tc.p)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if again, _ := c.Edit(next, step, tc.p); string(again) != string(next) {
					t.Fatalf("step %d is not idempotent", step)
				}
				if step == migration.StepEnableLeaderMigration {
					golden(t, tc.name+".step1.yml", next)
				}
				doc = next
			}
			golden(t, tc.name+".final.yml", doc)
			for _, comment := range []string{"# RKE1 cluster for the team's prod workloads", "# flow style survives", "# keep the cluster CIDR in sync with the VPC", "# required by in-tree aws >= 1.23", "# trailing comment"} {
				if !strings.Contains(string(doc), comment) {
					t.Errorf("comment %q lost", comment)
				}
			}
		})
	}
}

func TestKeepsNodeName(t *testing.T) {
	doc, err := os.ReadFile("testdata/cluster.yml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, node string
		imds, want bool
	}{
		{"override matches", "ip-10-0-1-10.us-west-2.compute.internal", false, true},
		{"no override", "worker-1", false, false},
		{"imds replaces the override", "ip-10-0-1-10.us-west-2.compute.internal", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&Cluster{UseInstanceMetadataHostname: tc.imds}).KeepsNodeName(doc, tc.node); got != tc.want {
				t.Fatalf("KeepsNodeName(%s) = %t, want %t", tc.node, got, tc.want)
			}
		})
	}
}

// TestEditRancherWrapper: a Rancher-provisioned cluster's cluster.yml holds the RKE
// configuration under rancher_kubernetes_engine_config; it is read and edited there, and
// Rancher's own top-level settings are left alone.
func TestEditRancherWrapper(t *testing.T) {
	in, err := os.ReadFile("testdata/rancher-cluster.yml")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{}
	info, err := c.Inspect(in)
	if err != nil || info.Provider != "aws" || info.KubernetesVersion != "v1.26.15-rancher1-1" {
		t.Fatalf("Inspect = %+v (err %v), want aws at v1.26.15-rancher1-1", info, err)
	}
	p := migration.Params{LeaderMigration: true, KubernetesVersion: "v1.27.16-rancher1-1"}
	doc := in
	for step := range migration.NumSteps {
		next, err := c.Edit(doc, step, p)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if again, _ := c.Edit(next, step, p); string(again) != string(next) {
			t.Fatalf("step %d is not idempotent", step)
		}
		if step == migration.StepEnableLeaderMigration {
			golden(t, "rancher-wrapper.step1.yml", next)
		}
		doc = next
	}
	golden(t, "rancher-wrapper.final.yml", doc)
	if info, err := c.Inspect(doc); err != nil || info.Provider != "external-aws" || info.KubernetesVersion != p.KubernetesVersion {
		t.Fatalf("final Inspect = %+v (err %v), want external-aws at %s", info, err, p.KubernetesVersion)
	}
	for _, line := range strings.Split(string(doc), "\n") {
		for _, key := range []string{"cloud_provider:", "services:", "kubernetes_version:"} {
			if strings.HasPrefix(line, key) {
				t.Errorf("%s written at the top level, outside %s", key, RancherKey)
			}
		}
	}
	if _, err := c.Edit([]byte(RancherKey+": [a]\n"), migration.StepSwitchProvider, p); err == nil || !strings.Contains(err.Error(), RancherKey+" is not a mapping") {
		t.Fatalf("a malformed wrapper: %v, want an error naming %s", err, RancherKey)
	}
}
