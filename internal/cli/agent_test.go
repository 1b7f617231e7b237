package cli

import (
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestAgentNamesItsDownstreamKubeconfig: drover agent run outside a pod without
// --downstream-kubeconfig says so, naming that flag (and $KUBECONFIG's file, which it does not
// read), not the management cluster's --kubeconfig advice of the other commands.
func TestAgentNamesItsDownstreamKubeconfig(t *testing.T) {
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(limit) }) // drover agent sets one
	_, saDir := isolateKube(t)
	for _, tc := range []struct {
		name, kubeconfig string
		pod              bool
		want             []string
	}{
		{name: "nothing", want: []string{"no downstream cluster: drover agent runs in a pod of the downstream cluster (its service account), or with --downstream-kubeconfig FILE"}},
		{name: "$KUBECONFIG", kubeconfig: "downstream.kubeconfig", want: []string{"--downstream-kubeconfig FILE",
			"drover agent does not read $KUBECONFIG: pass --downstream-kubeconfig downstream.kubeconfig"}},
		{name: "pod without a token", pod: true, want: []string{"--downstream-kubeconfig FILE",
			"KUBERNETES_SERVICE_HOST is set, but there is no service account token at " + filepath.Join(saDir, "token")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			if tc.pod {
				t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
			}
			_, _, err := drover(t.Context(), "agent", "--namespace", "agent-x")
			if err == nil {
				t.Fatal("drover agent without a downstream cluster did not fail")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "pass --kubeconfig") || strings.Contains(err.Error(), "~/.kube/config") {
				t.Errorf("error %q gives the management cluster's advice", err)
			}
			if ExitCode(err) != ExitUsage {
				t.Errorf("exit code %d, want %d", ExitCode(err), ExitUsage)
			}
		})
	}
}

// TestAgentHelpKubeconfig: drover agent's help describes --downstream-kubeconfig (and its
// deprecated alias --kubeconfig, which still works) and no management cluster --kubeconfig;
// drover agent install's --kubeconfig is still the management cluster's.
func TestAgentHelpKubeconfig(t *testing.T) {
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(limit) })
	isolateKube(t)
	help, _, err := drover(t.Context(), "agent", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help, "--downstream-kubeconfig string") || !strings.Contains(help, "--kubeconfig is a deprecated alias") {
		t.Errorf("drover agent --help does not describe --downstream-kubeconfig:\n%s", help)
	}
	if strings.Contains(help, "kubeconfig of the management cluster") || strings.Contains(help, "      --kubeconfig string") {
		t.Errorf("drover agent --help describes a --kubeconfig of the management cluster:\n%s", help)
	}
	help, _, err = drover(t.Context(), "agent", "install", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`--kubeconfig string\s+kubeconfig of the management cluster`).MatchString(help) {
		t.Errorf("drover agent install --help lost the management cluster's --kubeconfig:\n%s", help)
	}
	// The alias names the downstream cluster.
	missing := filepath.Join(t.TempDir(), "downstream.kubeconfig")
	if _, _, err := drover(t.Context(), "agent", "--kubeconfig", missing); err == nil || !strings.Contains(err.Error(), "--downstream-kubeconfig "+missing+": file not found") {
		t.Errorf("drover agent --kubeconfig %s: %v, want the downstream kubeconfig's error", missing, err)
	}
}
