// Package kubeconfig tests `drover cluster kubeconfig` and `drover cluster token` end to end, as
// a user runs them: the drover binary (built once) with the user's own cloud credentials in its
// environment and a management kubeconfig that may read hosted Clusters but no Secrets; the EKS,
// AKS and GKE simulators serving clusters whose API server is a real kube-apiserver (the
// downstream) authenticating the providers' tokens through its token webhook; kubectl using the
// printed kubeconfig, with drover as its exec plugin.
package kubeconfig

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
	"github.com/droverhq/drover/test/envtest"
)

var (
	mgmt, downstream *envtest.Cluster
	// backend is the downstream as the simulators' clusters' API server.
	backend   = &simcore.Backend{Name: "downstream"}
	reviewers = &simcore.Reviewers{}
	// droverDir holds the drover binary built for the tests; binDir kubectl.
	droverDir, binDir string
)

func register(t *testing.T, r simcore.TokenReviewer) {
	t.Cleanup(reviewers.Add(r))
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if binDir, err = envtest.BinDir(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if droverDir, err = os.MkdirTemp("", "drover-kubeconfig-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(droverDir) }()
	build := exec.Command("go", "build", "-o", filepath.Join(droverDir, "drover"), "./cmd/drover")
	build.Dir = envtest.RepoRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build drover:", err)
		return 1
	}

	webhook := httptest.NewServer(simcore.TokenReviewHandler(reviewers))
	defer webhook.Close()
	type result struct {
		c   *envtest.Cluster
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := envtest.Start("downstream", envtest.Options{
			TokenWebhook: &envtest.TokenWebhook{URL: webhook.URL + simcore.TokenReviewPath(backend.Name)}})
		ch <- result{c, err}
	}()
	mgmt, err = envtest.Start("management", envtest.Options{InstallCRDs: true})
	r := <-ch
	downstream = r.c
	defer func() {
		if mgmt != nil {
			_ = mgmt.Stop()
		}
		if downstream != nil {
			_ = downstream.Stop()
		}
	}()
	if err != nil || r.err != nil {
		fmt.Fprintln(os.Stderr, err, r.err)
		return 1
	}
	backend.Endpoint = downstream.Config.Host
	if !strings.Contains(backend.Endpoint, "://") {
		backend.Endpoint = "https://" + backend.Endpoint
	}
	backend.CAPEM = downstream.Config.CAData
	return m.Run()
}

// result is what a user sees of one command.
type result struct {
	stdout, stderr string
	code           int
}

// user runs commands in a clean environment: only PATH (drover, kubectl, the system), a
// private HOME and what the test gives, so nothing of the machine's own cloud credentials
// (~/.aws, gcloud's ADC, az login) or instance metadata leaks in.
type user struct {
	t   *testing.T
	env []string
}

func newUser(t *testing.T, env ...string) user {
	home := t.TempDir()
	base := []string{
		"PATH=" + droverDir + string(os.PathListSeparator) + binDir + string(os.PathListSeparator) + "/usr/bin:/bin",
		"HOME=" + home,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=" + filepath.Join(home, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "no-aws-credentials"),
		"AZURE_CONFIG_DIR=" + filepath.Join(home, ".azure"), "CLOUDSDK_CONFIG=" + filepath.Join(home, ".gcloud"),
	}
	return user{t: t, env: append(base, env...)}
}

func (u user) run(bin string, args ...string) result {
	u.t.Helper()
	r := envtest.RunCommand(u.t, 2*time.Minute, u.env, bin, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// drover runs the drover binary and fails the test unless it exits with code.
func (u user) drover(code int, args ...string) result {
	u.t.Helper()
	r := u.run(filepath.Join(droverDir, "drover"), args...)
	if r.code != code {
		u.t.Fatalf("drover %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// kubectl runs kubectl with the kubeconfig (which runs drover as its exec plugin, found on PATH).
func (u user) kubectl(kubeconfig string, args ...string) result {
	u.t.Helper()
	return u.run(filepath.Join(binDir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// whoami is the user name the kubeconfig authenticates as on the downstream, after checking it
// can list namespaces there.
func (u user) whoami(kubeconfig string) string {
	u.t.Helper()
	if r := u.kubectl(kubeconfig, "get", "ns", "default", "-o", "name"); r.code != 0 || strings.TrimSpace(r.stdout) != "namespace/default" {
		u.t.Fatalf("kubectl get ns with the printed kubeconfig: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := u.kubectl(kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if r.code != 0 {
		u.t.Fatalf("kubectl auth whoami: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return r.stdout
}
