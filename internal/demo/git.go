package demo

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/gitserve"
)

// The demo's Git repository, when git is installed: GitRepo GitRepoName deploys its path
// GitRepoPath to every fleet cluster of the demo, the joined hosted cluster included.
const (
	GitRepoName = "demo-apps"
	GitRepoPath = "hello-config"
	// GitNamespace is the namespace the repository's manifests create downstream.
	GitNamespace = "hello-git"
)

// gitServer serves the demo's repository over Git's smart HTTP protocol (git http-backend
// through net/http/cgi) on loopback.
type gitServer struct {
	url string // of the repository
	srv *http.Server
}

// errNoGit: git is not installed; the demo goes on without its GitRepo.
var errNoGit = errors.New("git is not installed")

// startGit creates the repository under dir (one commit with GitRepoPath) and serves it.
func startGit(dir string) (*gitServer, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errNoGit
	}
	home, repos, work := filepath.Join(dir, "home"), filepath.Join(dir, "repos"), filepath.Join(dir, "work")
	for _, d := range []string{home, repos, filepath.Join(work, GitRepoPath)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	git := func(dir string, args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=drover demo",
			"GIT_AUTHOR_EMAIL=demo@drover.invalid", "GIT_COMMITTER_NAME=drover demo", "GIT_COMMITTER_EMAIL=demo@drover.invalid")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
	files := map[string]string{
		"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + GitNamespace + "\n",
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\n  namespace: " + GitNamespace +
			"\ndata:\n  message: Hello from Git, deployed by drover to every cluster of the demo's fleet\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(work, GitRepoPath, name), []byte(content), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	bare := filepath.Join(repos, "apps.git")
	for _, step := range []struct {
		dir  string
		args []string
	}{
		{dir, []string{"init", "--quiet", "--bare", "-b", "main", bare}},
		{work, []string{"init", "--quiet", "-b", "main"}},
		{work, []string{"add", "-A"}},
		{work, []string{"commit", "--quiet", "-m", "hello-config: a ConfigMap for every cluster"}},
		{work, []string{"push", "--quiet", bare, "main"}},
	} {
		if err := git(step.dir, step.args...); err != nil {
			return nil, err
		}
	}
	h, err := gitserve.Handler(repos, home)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the Git server: %w", err)
	}
	s := &gitServer{url: "http://" + ln.Addr().String() + "/apps.git", srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *gitServer) close() { _ = s.srv.Close() }

// gitRepo is the demo's GitRepo: every cluster of the demo's namespace gets GitRepoPath.
func (s *gitServer) gitRepo() *fleetv1.GitRepo {
	return &fleetv1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: GitRepoName},
		Spec: fleetv1.GitRepoSpec{Repo: s.url, Branch: "main", Paths: []string{GitRepoPath},
			Targets: []fleetv1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{}}}}}
}
