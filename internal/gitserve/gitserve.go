// Package gitserve serves Git repositories over Git's smart HTTP protocol with git's own
// http-backend, run through net/http/cgi: the demo's repository and the Git servers of the tests
// (git is needed at run time only by these, never by drover's GitRepo controller).
package gitserve

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi" //nolint:gosec // G504 is about Go < 1.6.3 (httpoxy); this serves git http-backend on loopback
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ErrNoGit means git is not installed.
var ErrNoGit = errors.New("git is not installed (apt-get install git)")

// Handler serves every repository under root (GIT_HTTP_EXPORT_ALL) for fetches and pushes.
// git runs with HOME set to home, so that the configuration of whoever runs it does not apply.
func Handler(root, home string) (http.Handler, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, ErrNoGit
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return nil, fmt.Errorf("git http-backend: %w", err)
	}
	return &cgi.Handler{Path: backend, Dir: root, InheritEnv: []string{"PATH"},
		Env:    []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "HOME=" + home},
		Stderr: &lines{w: os.Stderr}}, nil
}

// lines writes what git http-backend says (e.g. "Not a git repository: '...'", without a
// newline) as whole lines of its own, so it does not splice into the next log line.
type lines struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lines) Write(p []byte) (int, error) {
	msg := strings.TrimRight(string(p), "\n")
	if msg == "" {
		return len(p), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := fmt.Fprintf(l.w, "git http-backend: %s\n", msg); err != nil {
		return 0, err
	}
	return len(p), nil
}
