package integration

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/gitrepo"
)

// gitDaemon is Debian's `git daemon` serving the Git protocol (git://) for the repositories of
// the HTTP server, on loopback. Each connection is handed to `git daemon --inetd`, so the test
// owns the listener and no port is guessed.
type gitDaemon struct {
	ln   net.Listener
	wg   sync.WaitGroup
	base string
}

func startGitDaemon(reposRoot, home string) (*gitDaemon, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &gitDaemon{ln: ln, base: reposRoot}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					fmt.Fprintln(os.Stderr, "git daemon accept:", err)
				}
				return
			}
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				d.serve(conn, home)
			}()
		}
	}()
	return d, nil
}

func (d *gitDaemon) serve(conn net.Conn, home string) {
	defer func() { _ = conn.Close() }()
	f, err := conn.(*net.TCPConn).File()
	if err != nil {
		fmt.Fprintln(os.Stderr, "git daemon conn:", err)
		return
	}
	defer func() { _ = f.Close() }()
	cmd := exec.Command("git", "daemon", "--inetd", "--export-all", "--informative-errors", "--base-path="+d.base, d.base)
	cmd.Stdin, cmd.Stdout = f, f
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "git daemon: %v: %s\n", err, stderr.String())
	}
}

// url is the git:// URL of repository name under public/.
func (d *gitDaemon) url(name string) string {
	return "git://" + d.ln.Addr().String() + "/public/" + name + ".git"
}

func (d *gitDaemon) stop() {
	_ = d.ln.Close()
	d.wg.Wait()
}

// TestGitRepoOverGitDaemon: a repository served by `git daemon` (git://) deploys, and a new
// commit pushed to it is followed.
func TestGitRepoOverGitDaemon(t *testing.T) {
	t.Parallel()
	r := newRepo(t, "over-daemon", false)
	c1 := r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", "over-daemon", "one")})
	gr := newGitRepo(t, "over-daemon", r, func(s *fleetv1alpha1.GitRepoSpec) { s.Repo = daemon.url("over-daemon") })
	name := gitrepo.BundleName("over-daemon", ".")
	eventually(t, 60*time.Second, func() error {
		if err := wantSynced(t, gr, c1, name); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"default/over-daemon": "one"})
	})
	c2 := r.commit("two", map[string]string{"cm.yaml": configMapYAML("default", "over-daemon", "two")})
	eventually(t, 30*time.Second, func() error {
		if err := wantSynced(t, gr, c2, name); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"default/over-daemon": "two"})
	})
}
