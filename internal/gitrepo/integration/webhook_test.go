package integration

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/gitrepo/webhook"
	"github.com/droverhq/drover/internal/registration/config"
)

// The webhook Secret's values, one per provider.
var webhookSecrets = map[webhook.Provider]string{
	webhook.GitHub: "gh-secret-4f1c", webhook.GitLab: "gl-token-77aa", webhook.Gitea: "gitea-secret-9b2e", webhook.Bitbucket: "bb-secret-0d3f",
}

// webhookURL is where the receiver, run by the test's manager, listens.
var webhookURL string

// setupWebhook creates the webhook Secret and adds the receiver to mgr on a loopback listener.
func setupWebhook(ctx context.Context, mgr ctrl.Manager) error {
	if err := createWebhookSecret(ctx, mgmt.Client); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	webhookURL = "http://" + ln.Addr().String() + "/"
	return webhook.Setup(mgr, webhook.Options{Listener: ln, SecretNamespace: config.DefaultNamespace})
}

// createWebhookSecret creates the receiver's Secret with webhookSecrets.
func createWebhookSecret(ctx context.Context, c client.Client) error {
	data := map[string][]byte{}
	for p, v := range webhookSecrets {
		data[string(p)] = []byte(v)
	}
	return c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: config.DefaultNamespace, Name: webhook.DefaultSecretName}, Data: data})
}

func hmacHex(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// delivery is one webhook request.
type delivery struct {
	header http.Header
	body   []byte
}

// signed builds a push delivery of provider for the repository at the given URLs (as the
// provider's payload names them) and ref, signed with the right secret.
func signed(p webhook.Provider, ref string, urls ...string) delivery {
	d := delivery{header: http.Header{}}
	first := func(i int) string {
		if i < len(urls) {
			return urls[i]
		}
		return ""
	}
	var payload any
	switch p {
	case webhook.GitHub, webhook.Gitea:
		payload = map[string]any{"ref": ref, "after": strings.Repeat("a", 40), "repository": map[string]any{
			"clone_url": first(0), "ssh_url": first(1), "html_url": strings.TrimSuffix(first(0), ".git"), "default_branch": "main"}}
	case webhook.GitLab:
		payload = map[string]any{"object_kind": "push", "ref": ref, "project": map[string]any{
			"git_http_url": first(0), "git_ssh_url": first(1), "web_url": strings.TrimSuffix(first(0), ".git"), "default_branch": "main"}}
	case webhook.Bitbucket:
		branch := strings.TrimPrefix(ref, "refs/heads/")
		payload = map[string]any{"push": map[string]any{"changes": []any{map[string]any{"new": map[string]any{"type": "branch", "name": branch}, "old": nil}}},
			"repository": map[string]any{"full_name": "public/x", "links": map[string]any{"html": map[string]any{"href": first(0)}}}}
	}
	d.body, _ = json.Marshal(payload)
	secret := webhookSecrets[p]
	switch p {
	case webhook.GitHub:
		d.header.Set("X-GitHub-Event", "push")
		d.header.Set("X-Hub-Signature-256", "sha256="+hmacHex(secret, d.body))
	case webhook.Gitea:
		d.header.Set("X-Gitea-Event", "push")
		d.header.Set("X-GitHub-Event", "push") // Gitea sends GitHub's headers too
		d.header.Set("X-Gitea-Signature", hmacHex(secret, d.body))
	case webhook.GitLab:
		d.header.Set("X-Gitlab-Event", "Push Hook")
		d.header.Set("X-Gitlab-Token", secret)
	case webhook.Bitbucket:
		d.header.Set("X-Event-Key", "repo:push")
		d.header.Set("X-Hub-Signature", "sha256="+hmacHex(secret, d.body))
	}
	return d
}

// post sends d to the receiver and returns the status code and body.
func post(t *testing.T, d delivery) (int, string) {
	t.Helper()
	return postTo(t, webhookURL, d)
}

// postTo sends d to the receiver at url and returns the status code and body.
func postTo(t testing.TB, url string, d delivery) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(d.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = d.header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// syncedWithoutPolling creates a GitRepo polling once an hour and waits until it deployed c1.
func syncedWithoutPolling(t *testing.T, name string, r *repo, c1 string, mutate func(*fleetv1alpha1.GitRepoSpec)) *fleetv1alpha1.GitRepo {
	t.Helper()
	gr := newGitRepo(t, name, r, func(s *fleetv1alpha1.GitRepoSpec) {
		s.PollingInterval = &metav1.Duration{Duration: time.Hour}
		if mutate != nil {
			mutate(s)
		}
	})
	eventually(t, 60*time.Second, func() error {
		if err := wantSynced(t, gr, c1, name); err != nil {
			return err
		}
		return wantDownstream(t, map[string]string{"default/" + name: "one"})
	})
	return gr
}

// TestWebhookTriggersFetch: for each payload format, a push webhook makes a GitRepo that polls
// once an hour fetch the new commit within a second, and the change reaches the downstream
// cluster. Repository URLs are matched across forms: the Forgejo case follows the repository
// over SSH while the payload names its http and scp-style URLs; the GitLab case names it
// without ".git" and in other letter case.
//
// Not parallel: Go runs it before this package's parallel tests, so the 1 s bound is measured
// on controllers that are not also busy polling and fetching for the other tests' GitRepos.
func TestWebhookTriggersFetch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider webhook.Provider
		ssh      bool
		urls     func(r *repo) []string
		header   func(http.Header)
	}{
		{name: "wh-github", provider: webhook.GitHub, urls: func(r *repo) []string { return []string{r.url} }},
		{name: "wh-gitlab", provider: webhook.GitLab, urls: func(r *repo) []string {
			return []string{strings.ToUpper(strings.TrimSuffix(r.url, ".git"))}
		}},
		{name: "wh-gitea", provider: webhook.Gitea, urls: func(r *repo) []string { return []string{r.url} }},
		{name: "wh-forgejo", provider: webhook.Gitea, ssh: true, urls: func(r *repo) []string {
			return []string{r.url, "git@127.0.0.1:public/wh-forgejo.git"}
		}, header: func(h http.Header) {
			h.Set("X-Forgejo-Event", h.Get("X-Gitea-Event"))
			h.Set("X-Forgejo-Signature", h.Get("X-Gitea-Signature"))
			h.Del("X-Gitea-Event")
			h.Del("X-Gitea-Signature")
		}},
		{name: "wh-bitbucket", provider: webhook.Bitbucket, urls: func(r *repo) []string { return []string{strings.TrimSuffix(r.url, ".git")} }},
	} {
		// One after the other, for the same reason.
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			r := newRepo(t, tc.name, false)
			c1 := r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", tc.name, "one")})
			var mutate func(*fleetv1alpha1.GitRepoSpec)
			if tc.ssh {
				secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: tc.name + "-ssh"}, Type: corev1.SecretTypeSSHAuth,
					Data: map[string][]byte{corev1.SSHAuthPrivateKey: sshd.clientKey, fleetv1alpha1.GitKeyKnownHosts: []byte(sshd.knownHosts)}}
				if err := mgmt.Client.Create(ctx, secret); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), secret) })
				mutate = func(s *fleetv1alpha1.GitRepoSpec) { s.Repo, s.ClientSecretName = sshd.url(tc.name), secret.Name }
			}
			gr := syncedWithoutPolling(t, tc.name, r, c1, mutate)

			c2 := r.commit("two", map[string]string{"cm.yaml": configMapYAML("default", tc.name, "two")})
			d := signed(tc.provider, "refs/heads/main", tc.urls(r)...)
			if tc.header != nil {
				tc.header(d.header)
			}
			start := time.Now()
			if code, body := post(t, d); code != http.StatusAccepted {
				t.Fatalf("webhook: %d %q, want 202", code, body)
			}
			// Within a second of the push, drover asks the Git server for the repository: only
			// the webhook explains it (the next poll is an hour away). The fetch itself (a clone
			// through git's CGI or SSH server, render, status) is then timed, not bounded: it
			// depends on the machine's load, not on the webhook.
			for !fetches.since(tc.name, start) {
				if time.Since(start) > time.Second {
					t.Fatalf("%s after the webhook drover has not asked the Git server for %s", time.Since(start), tc.name)
				}
				time.Sleep(10 * time.Millisecond) // polling interval
			}
			t.Logf("%s: fetch started %s after the webhook", tc.name, time.Since(start).Round(time.Millisecond))
			eventually(t, 30*time.Second, func() error {
				got, err := getGitRepo(t, gr)
				if err != nil {
					return err
				}
				if got.Status.Commit != c2 {
					return fmt.Errorf("GitRepo at %s, want %s; conditions %+v", got.Status.Commit, c2, got.Status.Conditions)
				}
				return nil
			})
			t.Logf("%s: commit fetched and rendered %s after the webhook", tc.name, time.Since(start).Round(time.Millisecond))
			eventually(t, 30*time.Second, func() error {
				return wantDownstream(t, map[string]string{"default/" + tc.name: "two"})
			})
		})
	}
}

// TestWebhookRefused: a push with a bad or missing signature or token is 401, one for a
// repository no GitRepo follows is 404; other events and pushes to other branches are
// acknowledged and ignored. None of them changes the GitRepo, and the new commit stays
// unfetched.
func TestWebhookRefused(t *testing.T) {
	t.Parallel()
	const name = "wh-refused"
	r := newRepo(t, name, false)
	c1 := r.commit("one", map[string]string{"cm.yaml": configMapYAML("default", name, "one")})
	gr := syncedWithoutPolling(t, name, r, c1, nil)
	before, err := getGitRepo(t, gr)
	if err != nil {
		t.Fatal(err)
	}
	r.commit("two", map[string]string{"cm.yaml": configMapYAML("default", name, "two")})

	wrongGitHub := signed(webhook.GitHub, "refs/heads/main", r.url)
	wrongGitHub.header.Set("X-Hub-Signature-256", "sha256="+hmacHex("not-the-secret", wrongGitHub.body))
	unsigned := signed(webhook.GitHub, "refs/heads/main", r.url)
	unsigned.header.Del("X-Hub-Signature-256")
	wrongToken := signed(webhook.GitLab, "refs/heads/main", r.url)
	wrongToken.header.Set("X-Gitlab-Token", "guess")
	otherKey := signed(webhook.Gitea, "refs/heads/main", r.url)
	otherKey.header.Set("X-Gitea-Signature", hmacHex(webhookSecrets[webhook.GitHub], otherKey.body)) // GitHub's secret for Gitea
	tampered := signed(webhook.Bitbucket, "refs/heads/main", strings.TrimSuffix(r.url, ".git"))
	tampered.body = bytes.Replace(tampered.body, []byte(`"main"`), []byte(`"mainx"`), 1)
	issue := signed(webhook.GitHub, "refs/heads/main", r.url)
	issue.header.Set("X-GitHub-Event", "issues")
	for _, tc := range []struct {
		name string
		d    delivery
		code int
	}{
		{"bad signature", wrongGitHub, http.StatusUnauthorized},
		{"no signature", unsigned, http.StatusUnauthorized},
		{"wrong GitLab token", wrongToken, http.StatusUnauthorized},
		{"another provider's secret", otherKey, http.StatusUnauthorized},
		{"tampered body", tampered, http.StatusUnauthorized},
		{"unknown repository", signed(webhook.GitHub, "refs/heads/main", git.url+"/public/nobody-follows.git"), http.StatusNotFound},
		{"other branch", signed(webhook.GitHub, "refs/heads/feature", r.url), http.StatusOK},
		{"not a push", issue, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := post(t, tc.d); code != tc.code {
				t.Errorf("%d %q, want %d", code, body, tc.code)
			}
			// The receiver writes before it answers: an unchanged GitRepo now means nothing
			// was requested.
			got, err := getGitRepo(t, gr)
			if err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != before.ResourceVersion || got.Annotations[fleetv1alpha1.FetchRequestedAnnotation] != "" {
				t.Errorf("GitRepo changed: resourceVersion %s → %s, annotations %v", before.ResourceVersion, got.ResourceVersion, got.Annotations)
			}
		})
	}
	// And nothing was fetched meanwhile.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		got, err := getGitRepo(t, gr)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Commit != c1 {
			t.Fatalf("GitRepo moved to %s after refused webhooks", got.Status.Commit)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := wantDownstream(t, map[string]string{"default/" + name: "one"}); err != nil {
		t.Error(err)
	}
	// The same push, signed right, is accepted (so the refusals above were about the signature).
	if code, body := post(t, signed(webhook.GitHub, "refs/heads/main", r.url)); code != http.StatusAccepted {
		t.Errorf("a correctly signed push: %d %q, want 202", code, body)
	}
}
