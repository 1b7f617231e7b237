package e2e

import (
	"bufio"
	"encoding/json"
	"github.com/droverhq/drover/test/envtest"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	simeks "github.com/droverhq/drover/pkg/cloudsim/eks"
)

// result is what a user sees of one command: its output streams and exit code.
type result struct {
	stdout, stderr string
	code           int
}

// cliUser runs the drover binary (and kubectl) the way a user does in a shell with KUBECONFIG
// exported.
type cliUser struct {
	t          *testing.T
	kubeconfig string
}

func (u cliUser) run(bin string, args ...string) result {
	u.t.Helper()
	r := envtest.RunCommand(u.t, 3*time.Minute, append(os.Environ(), "KUBECONFIG="+u.kubeconfig), bin, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// drover runs drover and fails the test unless it exits with code.
func (u cliUser) drover(code int, args ...string) result {
	u.t.Helper()
	r := u.run(droverBin, args...)
	if r.code != code {
		u.t.Fatalf("drover %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// startCloudsim runs `drover cloudsim --eks` on a free port and returns the endpoint it prints.
func startCloudsim(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(droverBin, "cloudsim", "--eks", "--listen", "127.0.0.1:0", "--delay", "2s", "--dir", t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("drover cloudsim printed no endpoint: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "EKS simulator: ")
	if !ok {
		t.Fatalf("drover cloudsim first line %q, want \"EKS simulator: URL\"", line)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }() // the rest, so the simulator never blocks on a full pipe
	return url
}

// TestCLIAsAUser drives the drover command line as a user would, against one embedded
// `drover server` and the EKS simulator: create an EKS cluster with --wait, list it -o json,
// get it -o yaml, delete it with --wait, and branch on the documented exit codes (1 not found,
// 2 usage error, 3 wait timed out).
func TestCLIAsAUser(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	s := startServer(t, dataDir, "--hosted-poll-interval", "1s")
	endpoint := startCloudsim(t)
	s.waitReady(t)
	u := cliUser{t: t, kubeconfig: filepath.Join(dataDir, "kubeconfig")}

	// The credential Secret, as README's quickstart creates it.
	if r := u.run(filepath.Join(binDir, "kubectl"), "create", "secret", "generic", "aws",
		"--from-literal=accessKeyID="+simeks.DefaultAccessKeyID, "--from-literal=secretAccessKey="+simeks.DefaultSecretAccessKey,
		"--from-literal=endpoint="+endpoint); r.code != 0 {
		t.Fatalf("kubectl create secret: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	eks := func(name string, more ...string) []string {
		return append([]string{"cluster", "create", "eks", "--name", name, "--region", "us-west-2", "--credential", "aws",
			"--kubernetes-version", "1.33", "--service-role", "arn:aws:iam::123456789012:role/eks", "--subnets", "subnet-a,subnet-b",
			"--node-role", "arn:aws:iam::123456789012:role/node", "--nodes", "2", "--tags", "team=platform"}, more...)
	}

	// create --wait: progress on stdout, exit 0 once the cluster (and its node group) is active.
	r := u.drover(0, eks("prod", "--wait", "--timeout", "2m")...)
	if !strings.Contains(r.stdout, "cluster.management.drover.io/prod created in namespace default (eks)") ||
		!strings.Contains(r.stdout, "cluster default/prod: phase active") {
		t.Errorf("create --wait output:\n%s", r.stdout)
	}

	// list -o json is one parseable List on stdout, nothing else.
	r = u.drover(0, "cluster", "list", "-o", "json")
	var list struct {
		Kind  string                       `json:"kind"`
		Items []managementv1alpha1.Cluster `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("cluster list -o json is not JSON: %v\n%s", err, r.stdout)
	}
	if list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Name != "prod" || list.Items[0].Status.Phase != managementv1alpha1.PhaseActive {
		t.Errorf("cluster list -o json: %+v, want prod active", list.Items)
	}

	// get -o yaml is the object, with what the simulator reported.
	r = u.drover(0, "cluster", "get", "prod", "-o", "yaml")
	var got managementv1alpha1.Cluster
	if err := yaml.UnmarshalStrict([]byte(r.stdout), &got); err != nil {
		t.Fatalf("cluster get -o yaml: %v\n%s", err, r.stdout)
	}
	if got.Spec.EKSConfig == nil || got.Spec.EKSConfig.Region != "us-west-2" || got.Status.Phase != managementv1alpha1.PhaseActive ||
		got.Kind != "Cluster" || got.APIVersion != managementv1alpha1.GroupVersion.String() {
		t.Errorf("cluster get -o yaml: %s %s spec %+v phase %s", got.APIVersion, got.Kind, got.Spec.EKSConfig, got.Status.Phase)
	}

	// Usage errors exit 2, before touching the cluster.
	for _, args := range [][]string{
		{"cluster", "get"},
		{"cluster", "list", "--bogus"},
		{"cluster", "list", "-o", "xml"},
		{"cluster", "nosuch"},
	} {
		if r := u.drover(2, args...); !strings.HasPrefix(r.stderr, "Error: ") || r.stdout != "" {
			t.Errorf("drover %v: stdout %q stderr %q, want only an Error line on stderr", args, r.stdout, r.stderr)
		}
	}

	// A wait that times out exits 3: the simulator takes 2s to create a cluster.
	r = u.drover(3, eks("slow", "--wait", "--timeout", "1s")...)
	if !strings.Contains(r.stderr, "timed out after 1s waiting for cluster default/slow") {
		t.Errorf("timed-out wait: stderr %q", r.stderr)
	}

	// delete --wait returns once the cloud cluster is gone and the object with it.
	r = u.drover(0, "cluster", "delete", "prod", "--wait", "--timeout", "2m")
	if !strings.Contains(r.stdout, "cluster default/prod: deleted") {
		t.Errorf("delete --wait output:\n%s", r.stdout)
	}

	// Not found exits 1.
	if r := u.drover(1, "cluster", "get", "prod"); !strings.Contains(r.stderr, `cluster "prod" not found`) {
		t.Errorf("get after delete: stderr %q", r.stderr)
	}
	u.drover(1, "cluster", "delete", "prod")
}
