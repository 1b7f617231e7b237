package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"ok", []string{"version"}, ExitOK, ""},
		{"unknown command", []string{"nosuch"}, ExitUsage, `unknown command "nosuch"`},
		{"unknown subcommand", []string{"cluster", "nosuch"}, ExitUsage, `unknown command "nosuch" for "drover cluster"`},
		{"list with a name", []string{"cluster", "list", "prod"}, ExitUsage, "list takes no NAME (\"prod\"): show one with `drover cluster get prod`"},
		{"bundle list with a name", []string{"bundle", "list", "web"}, ExitUsage, "`drover bundle status web`"},
		{"empty jsonpath", []string{"cluster", "list", "-o", "jsonpath="}, ExitUsage, "-o jsonpath= needs a template"},
		{"unknown flag", []string{"cluster", "list", "--bogus"}, ExitUsage, "unknown flag: --bogus"},
		{"missing argument", []string{"cluster", "get"}, ExitUsage, "accepts 1 arg(s)"},
		{"required flag", []string{"agent", "install"}, ExitUsage, `required flag(s) "token" not set`},
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
