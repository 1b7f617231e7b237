package aks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
)

// TestAzureCLI runs Debian's az (azure-cli 2.45) against the simulator as a new user would, as
// docs/cloudsim.md says: register the simulator as a cloud from its ARM endpoint alone (the
// other endpoints come from /metadata/endpoints: an ADFS-style authority, so MSAL does no
// instance discovery), log in as a service principal (ARM's GET /subscriptions), then an AKS
// lifecycle: create, list, update --tags, nodepool scale, show, delete. Every change is checked
// in the simulator's own state, not only in az's output.
func TestAzureCLI(t *testing.T) {
	az, err := exec.LookPath("az")
	if err != nil {
		t.Skip("az is not installed: apt-get install azure-cli (Debian's package; .ci/run installs it)")
	}
	t.Parallel()
	const (
		tenant, client, secret = "0a0a0a0a-0a0a-4a0a-8a0a-0a0a0a0a0a0a", "1b1b1b1b-1b1b-4b1b-8b1b-1b1b1b1b1b1b", "azcli-test-secret"
		sub, rg, name          = "2c2c2c2c-2c2c-4c2c-8c2c-2c2c2c2c2c2c", "rg-azcli", "azcli"
	)
	sim := aks.NewTestServer(t, aks.Options{
		Credentials: []aks.Credential{{TenantID: tenant, ClientID: client, ClientSecret: secret, Subscriptions: []string{sub}}},
		// az polls a long-running operation every 30 s unless told otherwise (Retry-After).
		Delay: 300 * time.Millisecond, PollRetryAfter: 100 * time.Millisecond,
	})
	dir := t.TempDir()
	ca := filepath.Join(dir, "aks-ca.pem")
	if err := os.WriteFile(ca, sim.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "AZURE_CONFIG_DIR=" + filepath.Join(dir, "azure"),
		"REQUESTS_CA_BUNDLE=" + ca, "AZURE_CORE_COLLECT_TELEMETRY=false", "AZURE_CORE_NO_COLOR=true",
	}
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, az, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("az %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		t.Logf("az %s %s: %s", args[0], args[1], time.Since(start).Round(10*time.Millisecond))
		return stdout.Bytes()
	}
	type cluster struct {
		Name              string
		ProvisioningState string
		Tags              map[string]string
		AgentPoolProfiles []struct {
			Name  string
			Count int32
		}
	}
	decode := func(what string, b []byte, v any) {
		t.Helper()
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, b)
		}
	}

	run("cloud", "register", "--name", "DroverSim", "--endpoint-resource-manager", sim.URL())
	run("cloud", "set", "--name", "DroverSim", "--only-show-errors")
	var accounts []struct {
		ID, TenantID string
		User         struct{ Name, Type string }
	}
	decode("az login", run("login", "--service-principal", "-u", client, "-p", secret, "--tenant", tenant, "-o", "json"), &accounts)
	if len(accounts) != 1 || accounts[0].ID != sub || accounts[0].TenantID != tenant || accounts[0].User.Name != client || accounts[0].User.Type != "servicePrincipal" {
		t.Fatalf("az login: %+v, want the subscription %s of service principal %s", accounts, sub, client)
	}

	var c cluster
	decode("az aks create", run("aks", "create", "-g", rg, "-n", name, "--location", "westeurope", "--node-count", "1", "--no-ssh-key", "-o", "json"), &c)
	if c.ProvisioningState != "Succeeded" || len(c.AgentPoolProfiles) != 1 || c.AgentPoolProfiles[0].Count != 1 {
		t.Fatalf("az aks create: %+v", c)
	}
	pool := c.AgentPoolProfiles[0].Name
	var list []cluster
	decode("az aks list", run("aks", "list", "-o", "json"), &list)
	if len(list) != 1 || list[0].Name != name {
		t.Fatalf("az aks list: %+v, want %s", list, name)
	}

	run("aks", "update", "-g", rg, "-n", name, "--tags", "team=platform", "-o", "none")
	run("aks", "nodepool", "scale", "-g", rg, "--cluster-name", name, "-n", pool, "--node-count", "3", "-o", "none")
	decode("az aks show", run("aks", "show", "-g", rg, "-n", name, "-o", "json"), &c)
	st, ok := sim.ManagedCluster(sub, rg, name)
	if !ok {
		t.Fatal("the simulator has no cluster after az aks create")
	}
	if c.Tags["team"] != "platform" || c.AgentPoolProfiles[0].Count != 3 {
		t.Fatalf("after update --tags and nodepool scale: az shows tags %v, %d nodes; want team=platform, 3", c.Tags, c.AgentPoolProfiles[0].Count)
	}
	if tag := st.Tags["team"]; tag == nil || *tag != "platform" || *st.Properties.AgentPoolProfiles[0].Count != 3 {
		t.Fatalf("after update --tags and nodepool scale: the simulator has tags %v, %d nodes; want team=platform, 3", st.Tags, *st.Properties.AgentPoolProfiles[0].Count)
	}

	run("aks", "delete", "-g", rg, "-n", name, "--yes")
	if _, ok := sim.ManagedCluster(sub, rg, name); ok {
		t.Fatal("the cluster still exists after az aks delete")
	}
}
