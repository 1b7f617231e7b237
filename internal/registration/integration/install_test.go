package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/registration/local"
)

// TestAgentInstallCommand installs the agent the way an admin does: `drover agent install
// --token -n WS` against the management cluster (-n names the token's namespace, as in every
// command), the output applied downstream; the agent registers.
func TestAgentInstallCommand(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	newToken(t, ws, "install", time.Hour)
	kc, err := local.Kubeconfig(mgmt.Config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	agentNS := "installed-" + ws
	var out bytes.Buffer
	cmd := cli.NewRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"agent", "install", "--token", "install", "-n", ws, "--kubeconfig", path, "--agent-namespace", agentNS, "--client-id", "installed-" + ws})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	kinds := map[string]bool{}
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) == 0 {
			continue
		}
		kinds[u.GetKind()] = true
		if err := downstream.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl")); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Secret", "Deployment"} {
		if !kinds[k] {
			t.Errorf("install output has no %s", k)
		}
	}
	startAgent(t, downstream.Config, agentNS, "")
	cred := credential(t, downstream.Client, agentNS)
	if string(cred[fleetv1alpha1.KeyClusterNamespace]) != ws {
		t.Errorf("registered in workspace %q, want %q", cred[fleetv1alpha1.KeyClusterNamespace], ws)
	}
}
