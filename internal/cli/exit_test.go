package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestExitCodes: the documented exit codes, through the command line as a script sees them.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	// An RKE1 cluster.yml whose cluster (the empty API server) has no control plane to migrate.
	clusterYML := filepath.Join(t.TempDir(), "cluster.yml")
	in, err := os.ReadFile("../migration/rke1/testdata/cluster.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clusterYML, in, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"ok", []string{"version", "--client"}, ExitOK, ""},
		{"unknown command", []string{"nosuch"}, ExitUsage, `unknown command "nosuch"`},
		{"unknown subcommand", []string{"cluster", "nosuch"}, ExitUsage, `unknown command "nosuch" for "drover cluster"`},
		{"mistyped command", []string{"clsuter", "list"}, ExitUsage, `unknown command "clsuter" for "drover"; did you mean "cluster"?`},
		{"mistyped subcommand", []string{"bundle", "stauts"}, ExitUsage, `unknown command "stauts" for "drover bundle"; did you mean "status"?`},
		{"unsupported shell", []string{"completion", "ksh"}, ExitUsage, `unknown command "ksh" for "drover completion"`},
		{"list with a name", []string{"cluster", "list", "prod"}, ExitUsage, "list takes no NAME (\"prod\"): show one with `drover cluster get prod`"},
		{"bundle list with a name", []string{"bundle", "list", "web"}, ExitUsage, "`drover bundle status web`"},
		{"empty jsonpath", []string{"cluster", "list", "-o", "jsonpath="}, ExitUsage, "-o jsonpath= needs a template"},
		{"jsonpath without template", []string{"cluster", "list", "-o", "jsonpath"}, ExitUsage, "-o jsonpath needs a template"},
		{"server dry run", []string{"bundle", "apply", "-f", ".", "--cluster", "x", "--dry-run=server"}, ExitUsage, "--dry-run=server: drover prints the Bundle with --dry-run=client"},
		{"bundle name too long", []string{"bundle", "apply", "-f", ".", "--cluster", "x", "--name", strings.Repeat("a", 64)}, ExitUsage,
			"--name \"" + strings.Repeat("a", 64) + "\": at most 63 characters"},
		{"unknown flag", []string{"cluster", "list", "--bogus"}, ExitUsage, "unknown flag: --bogus"},
		{"missing argument", []string{"cluster", "get"}, ExitUsage, "requires at least 1 arg(s)"},
		{"required flag", []string{"agent", "install"}, ExitUsage, `required flag(s) "token" not set`},
		{"renewal token too long", []string{"agent", "--renewal-token-ttl", "2200h"}, ExitUsage, "--renewal-token-ttl 2200h0m0s: at most 2160h0m0s"},
		{"missing value flag", []string{"cluster", "import", "eks", "--name", "x", "--credential", "c"}, ExitUsage, "--region is required"},
		{"bad output", []string{"cluster", "list", "-o", "xml", "--kubeconfig", kc}, ExitUsage, "unknown output format"},
		{"not found", []string{"cluster", "get", "missing", "--kubeconfig", kc, "-n", ns}, ExitError, `cluster "missing" not found`},
		{"refused by the preflight", []string{"migrate", "cloud-provider", "plan", "--distribution", "rke1", "--config", clusterYML,
			"--downstream-kubeconfig", kc, "--system-namespace", ns}, ExitRefused, "not eligible"},
		{"no downstream kubeconfig", []string{"migrate", "cloud-provider", "plan", "--distribution", "rke1", "--config", clusterYML}, ExitUsage, "--downstream-kubeconfig"},
		{"no kubeconfig file", []string{"cluster", "list", "--kubeconfig", filepath.Join(t.TempDir(), "nope")}, ExitError, "file not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := NewRootCommand()
			cmd.SetArgs(tt.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			var stderr bytes.Buffer
			code := exit(cmd.ExecuteContext(t.Context()), &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, &stderr)
			}
			if !strings.Contains(stderr.String(), tt.msg) {
				t.Errorf("stderr %q does not say %q", &stderr, tt.msg)
			}
		})
	}
}

// TestBundleApplyDryRun: --dry-run takes kubectl's values: alone or =client prints the Bundle.
func TestBundleApplyDryRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--dry-run", "--dry-run=client"} {
		out, errOut, err := drover(t.Context(), "bundle", "apply", "-f", dir, "--cluster", "edge-1", flag)
		if err != nil || !strings.Contains(out, "kind: Bundle") || !strings.Contains(out, "clusterName: edge-1") {
			t.Errorf("bundle apply %s: %v\n%s%s", flag, err, out, errOut)
		}
	}
	// The README's example Bundle reads as one.
	out, errOut, err := drover(t.Context(), "bundle", "apply", "-f", "../../examples/web", "--cluster", "edge-1", "--dry-run")
	if err != nil {
		t.Fatalf("bundle apply -f examples/web: %v\n%s", err, errOut)
	}
	for _, want := range []string{"name: web", "kind: Namespace", "kind: Deployment", "kind: Service", "kind: ConfigMap"} {
		if !strings.Contains(out, want) {
			t.Errorf("examples/web Bundle lacks %q:\n%s", want, out)
		}
	}
}

// TestBundleTargetsCell: an empty selector targets every cluster, and says so.
func TestBundleTargetsCell(t *testing.T) {
	b := &fleetv1alpha1.Bundle{Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{
		{ClusterSelector: &metav1.LabelSelector{}}, {ClusterName: "edge-1"}}}}
	if got := bundleTargets(b); !strings.Contains(got, "all clusters") || !strings.Contains(got, "edge-1") {
		t.Errorf("TARGETS %q, want all clusters and edge-1", got)
	}
}

// TestFleetReadyCell: fleet list's READY says why a cluster is not ready.
func TestFleetReadyCell(t *testing.T) {
	for _, tc := range []struct {
		conds []metav1.Condition
		want  string
	}{
		{nil, "-"},
		{[]metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded"}}, "True"},
		{[]metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonDownstreamUnreachable}}, "False (DownstreamUnreachable)"},
	} {
		c := &fleetv1alpha1.Cluster{Status: fleetv1alpha1.ClusterStatus{Conditions: tc.conds}}
		if got := fleetColumns[1].cell(c); got != tc.want {
			t.Errorf("READY %q, want %q", got, tc.want)
		}
	}
}
