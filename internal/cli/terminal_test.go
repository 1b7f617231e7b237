package cli

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

func TestTerminalSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain\ttext\r\nünïcödé ✓\n", "plain\ttext\r\nünïcödé ✓\n"},
		{"title\x1b]0;owned\x07!", `title\x1b]0;owned\x07!`},
		{"red\x1b[31mtext\x1b[0m", `red\x1b[31mtext\x1b[0m`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
		{"del\x7f nul\x00", `del\x7f nul\x00`},
		{"bad utf-8 \xff\xfe", `bad utf-8 \xff\xfe`},
	} {
		var b bytes.Buffer
		n, err := terminalSafe{&b}.Write([]byte(tc.in))
		if err != nil || n != len(tc.in) || b.String() != tc.want {
			t.Errorf("Write(%q) = %d, %v, wrote %q; want %d, %q", tc.in, n, err, b.String(), len(tc.in), tc.want)
		}
	}
}

// TestOutputCannotDriveTheTerminal: a registered cluster's agent may patch its Cluster's status,
// so it chooses condition messages drover prints. Through drover's own entry point, escape
// sequences in them reach the reader's terminal as text, not as commands.
func TestOutputCannotDriveTheTerminal(t *testing.T) {
	ctx := t.Context()
	ns, kc := mgmt.Namespace(t), mgmtKubeconfig(t)
	c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status.Conditions = []metav1.Condition{{Type: "Pwned", Status: "True", Reason: "Agent", LastTransitionTime: metav1.Now(),
		Message: "all good\x1b]0;you have been owned\x07\x1b[2J\x1b[1A"}, {Type: "Ready", Status: "False", Reason: "Agent", LastTransitionTime: metav1.Now(),
		Message: "down\nCondition Healthy:\tTrue (Agent) all good"}}
	if err := mgmt.Client.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"fleet", "get", "edge"}, {"fleet", "get", "edge", "-o", "yaml"}, {"fleet", "list", "-o", "wide"}} {
		var out, errOut bytes.Buffer
		if code := mainWith(ctx, append(args, "--kubeconfig", kc, "-n", ns), &out, &errOut); code != ExitOK {
			t.Fatalf("drover %v: exit %d\n%s", args, code, errOut.String())
		}
		if strings.ContainsAny(out.String(), "\x1b\x07") {
			t.Errorf("drover %v printed raw escape sequences:\n%q", args, out.String())
		}
		if args[len(args)-1] == "edge" && !strings.Contains(out.String(), `all good\x1b]0;you have been owned\x07`) {
			t.Errorf("drover %v does not show the message as text:\n%s", args, out.String())
		}
		// A message's line break cannot forge a condition line of its own.
		if args[len(args)-1] == "edge" && (strings.Contains(out.String(), "\nCondition Healthy") || !strings.Contains(out.String(), `down\nCondition Healthy: True`)) {
			t.Errorf("drover %v printed a message's line break:\n%s", args, out.String())
		}
	}
}
