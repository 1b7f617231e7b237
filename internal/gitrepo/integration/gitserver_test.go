package integration

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/gitserve"
)

// Credentials of the Git server's private repositories (URL path /private/...).
const (
	gitUser     = "drover"
	gitPassword = "correct-horse-battery-staple"
)

// gitServer is Debian's git serving repositories under root over the smart HTTP protocol
// (git http-backend run through net/http/cgi), on loopback. Repositories under /private/ need
// basic auth with gitUser/gitPassword.
type gitServer struct {
	root string
	url  string
	srv  *http.Server
	home string
}

func startGitServer() (*gitServer, error) {
	root, err := os.MkdirTemp("", "drover-git-*")
	if err != nil {
		return nil, err
	}
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	cgiHandler, err := gitserve.Handler(filepath.Join(root, "repos"), home)
	if err != nil {
		return nil, fmt.Errorf("these tests need git: %w", err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.record(r.URL.Path)
		if strings.HasPrefix(r.URL.Path, "/private/") {
			if u, p, ok := r.BasicAuth(); !ok || u != gitUser || p != gitPassword {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		cgiHandler.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &gitServer{root: root, url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: handler}, home: home}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// fetches records when each repository was last asked for by a client (HTTP or SSH), so a
// test can tell when drover started a fetch.
var fetches = &fetchLog{last: map[string]time.Time{}}

type fetchLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// record notes a request for the repository in urlPath ("/public/NAME.git/info/refs" → NAME).
func (f *fetchLog) record(urlPath string) {
	for _, part := range strings.Split(urlPath, "/") {
		if name, ok := strings.CutSuffix(strings.Trim(part, "'\""), ".git"); ok {
			f.mu.Lock()
			f.last[name] = time.Now()
			f.mu.Unlock()
			return
		}
	}
}

// since reports whether repository name was asked for after t.
func (f *fetchLog) since(name string, t time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[name].After(t)
}

func (s *gitServer) stop() {
	_ = s.srv.Close()
	_ = os.RemoveAll(s.root)
}

// repo is a repository on the server and a working copy to commit to it.
type repo struct {
	t    testing.TB
	url  string
	bare string
	work string
}

// newRepo creates an empty repository (under /private/ when private) with default branch main.
func newRepo(t testing.TB, name string, private bool) *repo {
	t.Helper()
	dir := "public"
	if private {
		dir = "private"
	}
	r := &repo{t: t, url: git.url + "/" + dir + "/" + name + ".git", bare: filepath.Join(git.root, "repos", dir, name+".git"), work: t.TempDir()}
	r.git("", "init", "--quiet", "--bare", "-b", "main", r.bare)
	r.git(r.work, "init", "--quiet", "-b", "main")
	r.git(r.work, "remote", "add", "origin", r.bare)
	return r
}

// git runs git in dir with an isolated configuration and returns its trimmed output.
func (r *repo) git(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+git.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=test",
		"GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(out.String())
}

// commit writes files (path → content; "" removes the path, a directory with everything in
// it), commits, pushes to main and returns the commit's SHA.
func (r *repo) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for p, content := range files {
		full := filepath.Join(r.work, filepath.FromSlash(p))
		if content == "" {
			if err := os.RemoveAll(full); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git(r.work, "add", "-A")
	r.git(r.work, "commit", "--quiet", "--allow-empty", "-m", msg)
	r.git(r.work, "push", "--quiet", "--force", "origin", "HEAD:main")
	return r.git(r.work, "rev-parse", "HEAD")
}

// forcePush moves main on the server back (or forward) to commit.
func (r *repo) forcePush(commit string) {
	r.t.Helper()
	r.git(r.work, "reset", "--quiet", "--hard", commit)
	r.git(r.work, "push", "--quiet", "--force", "origin", "HEAD:main")
}

// tag creates an annotated tag at HEAD and pushes it.
func (r *repo) tag(name string) {
	r.t.Helper()
	r.git(r.work, "tag", "-a", "-m", name, name)
	r.git(r.work, "push", "--quiet", "origin", "refs/tags/"+name)
}
