package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

const (
	testNamespace = "drover-system"
	testRepoURL   = "https://git.example.com/team/deploy.git"
)

// clock is a settable clock for Receiver.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// countingReader counts the Secret reads that reach the reader it wraps.
type countingReader struct {
	client.Reader
	reads atomic.Int64
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		r.reads.Add(1)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// countingClient counts the patches (fetch requests) written through the client it wraps.
type countingClient struct {
	client.Client
	patches atomic.Int64
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.patches.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// env is a Receiver on a fake API with one GitRepo following testRepoURL's main branch.
type env struct {
	rcv     *Receiver
	api     client.Client
	secrets *countingReader
	writes  *countingClient
	clock   *clock
}

// newEnv builds an env; secrets, when not nil, are the webhook Secret's data (key: provider).
func newEnv(t *testing.T, secrets map[Provider]string, mutate func(*Receiver)) *env {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{&fleetv1alpha1.GitRepo{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "deploy"},
		Spec:       fleetv1alpha1.GitRepoSpec{Repo: testRepoURL, Branch: "main"},
	}}
	if secrets != nil {
		objs = append(objs, webhookSecret(secrets))
	}
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&fleetv1alpha1.GitRepo{}, repoIndex, repoKeys).Build()
	e := &env{api: api, secrets: &countingReader{Reader: api}, writes: &countingClient{Client: api},
		clock: &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	e.rcv = &Receiver{Client: e.writes, SecretReader: e.secrets, SecretNamespace: testNamespace, SecretName: DefaultSecretName,
		RateBurst: 1000, MaxInFlight: 1000, Now: e.clock.Now}
	if mutate != nil {
		mutate(e.rcv)
	}
	return e
}

func webhookSecret(secrets map[Provider]string) *corev1.Secret {
	data := map[string][]byte{}
	for p, v := range secrets {
		data[string(p)] = []byte(v)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: DefaultSecretName}, Data: data}
}

// delivery is one webhook request.
type delivery struct {
	method string // default POST
	header http.Header
	body   io.Reader
	length int64 // Content-Length, when not known from body
}

func (e *env) serve(t *testing.T, d delivery) *httptest.ResponseRecorder {
	t.Helper()
	method := d.method
	if method == "" {
		method = http.MethodPost
	}
	req := httptest.NewRequestWithContext(t.Context(), method, "/", d.body)
	if d.length != 0 {
		req.ContentLength = d.length
	}
	for k, vs := range d.header {
		req.Header[k] = vs
	}
	if _, ok := d.header["Content-Type"]; !ok {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	e.rcv.ServeHTTP(w, req)
	return w
}

// annotation is the GitRepo's fetch-requested annotation.
func (e *env) annotation(t *testing.T) string {
	t.Helper()
	var gr fleetv1alpha1.GitRepo
	if err := e.api.Get(t.Context(), client.ObjectKey{Namespace: "team", Name: "deploy"}, &gr); err != nil {
		t.Fatal(err)
	}
	return gr.Annotations[fleetv1alpha1.FetchRequestedAnnotation]
}

func sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// pushDelivery is a push delivery of provider p for repository url and ref, signed with secret.
func pushDelivery(p Provider, secret, url, ref string) delivery {
	var payload any
	switch p {
	case GitHub, Gitea:
		payload = map[string]any{"ref": ref, "repository": map[string]any{"clone_url": url, "default_branch": "main"}}
	case GitLab:
		payload = map[string]any{"object_kind": "push", "ref": ref, "project": map[string]any{"git_http_url": url, "default_branch": "main"}}
	case Bitbucket:
		payload = map[string]any{"push": map[string]any{"changes": []any{map[string]any{"new": map[string]any{"type": "branch", "name": strings.TrimPrefix(ref, "refs/heads/")}}}},
			"repository": map[string]any{"links": map[string]any{"html": map[string]any{"href": url}}}}
	}
	body, _ := json.Marshal(payload)
	h := http.Header{}
	switch p {
	case GitHub:
		h.Set("X-GitHub-Event", "push")
		h.Set("X-Hub-Signature-256", "sha256="+sign(secret, body))
	case Gitea:
		h.Set("X-Gitea-Event", "push")
		h.Set("X-Gitea-Signature", sign(secret, body))
	case GitLab:
		h.Set("X-Gitlab-Event", "Push Hook")
		h.Set("X-Gitlab-Token", secret)
	case Bitbucket:
		h.Set("X-Event-Key", "repo:push")
		h.Set("X-Hub-Signature", "sha256="+sign(secret, body))
	}
	return delivery{header: h, body: bytes.NewReader(body)}
}

// unsigned is a GitHub push delivery without a signature: what junk on the port looks like.
func unsigned() delivery {
	d := pushDelivery(GitHub, "", testRepoURL, "refs/heads/main")
	d.header.Del("X-Hub-Signature-256")
	return d
}

var testSecrets = map[Provider]string{GitHub: "gh-secret", GitLab: "gl-token", Gitea: "gitea-secret", Bitbucket: "bb-secret"}

// TestSignedPushTriggersFetch: a verified push of each provider for the GitRepo's repository and
// branch requests a fetch (202, annotation set); the refusals and the ignored events write
// nothing.
func TestSignedPushTriggersFetch(t *testing.T) {
	t.Parallel()
	forgejo := pushDelivery(Gitea, testSecrets[Gitea], testRepoURL, "refs/heads/main")
	forgejo.header.Set("X-Forgejo-Event", "push")
	forgejo.header.Set("X-Forgejo-Signature", forgejo.header.Get("X-Gitea-Signature"))
	forgejo.header.Del("X-Gitea-Event")
	forgejo.header.Del("X-Gitea-Signature")
	badSig := pushDelivery(GitHub, "not-the-secret", testRepoURL, "refs/heads/main")
	ping := pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main")
	ping.header.Set("X-GitHub-Event", "ping")
	for _, tc := range []struct {
		name  string
		d     delivery
		code  int
		fetch bool
	}{
		{"github", pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main"), http.StatusAccepted, true},
		{"gitlab", pushDelivery(GitLab, testSecrets[GitLab], strings.TrimSuffix(testRepoURL, ".git"), "refs/heads/main"), http.StatusAccepted, true},
		{"gitea", pushDelivery(Gitea, testSecrets[Gitea], testRepoURL, "refs/heads/main"), http.StatusAccepted, true},
		{"forgejo", forgejo, http.StatusAccepted, true},
		{"bitbucket", pushDelivery(Bitbucket, testSecrets[Bitbucket], strings.TrimSuffix(testRepoURL, ".git"), "refs/heads/main"), http.StatusAccepted, true},
		{"bad signature", badSig, http.StatusUnauthorized, false},
		{"unsigned", unsigned(), http.StatusUnauthorized, false},
		{"another provider's secret", pushDelivery(GitLab, testSecrets[GitHub], testRepoURL, "refs/heads/main"), http.StatusUnauthorized, false},
		{"unknown repository", pushDelivery(GitHub, testSecrets[GitHub], "https://git.example.com/team/other.git", "refs/heads/main"), http.StatusNotFound, false},
		{"other branch", pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/feature"), http.StatusOK, false},
		{"not a push", ping, http.StatusOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, testSecrets, nil)
			w := e.serve(t, tc.d)
			if w.Code != tc.code {
				t.Fatalf("%d %q, want %d", w.Code, w.Body.String(), tc.code)
			}
			want := ""
			if tc.fetch {
				want = e.clock.Now().Format(time.RFC3339Nano)
			}
			if got := e.annotation(t); got != want {
				t.Errorf("fetch-requested annotation %q, want %q", got, want)
			}
			if tc.fetch != (e.writes.patches.Load() > 0) {
				t.Errorf("%d patches, want a fetch request: %v", e.writes.patches.Load(), tc.fetch)
			}
		})
	}
}

// TestSecretReadOncePerTTL: however many deliveries arrive, one after the other or at once,
// the webhook Secret is read at most once per TTL, whether it exists or not; after the TTL
// it is read again.
func TestSecretReadOncePerTTL(t *testing.T) {
	t.Parallel()
	const n = 50
	for _, tc := range []struct {
		name       string
		secrets    map[Provider]string
		d          func() delivery
		concurrent bool
		code       int
	}{
		{"unsigned, Secret present", testSecrets, unsigned, false, http.StatusUnauthorized},
		{"unsigned, Secret present, at once", testSecrets, unsigned, true, http.StatusUnauthorized},
		{"unsigned, Secret missing", nil, unsigned, false, http.StatusUnauthorized},
		{"unsigned, Secret missing, at once", nil, unsigned, true, http.StatusUnauthorized},
		{"provider without a key", map[Provider]string{GitLab: "gl-token"}, unsigned, false, http.StatusUnauthorized},
		{"wrong GitLab token", testSecrets, func() delivery { return pushDelivery(GitLab, "guess", testRepoURL, "refs/heads/main") }, true, http.StatusUnauthorized},
		{"signed pushes", testSecrets, func() delivery { return pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main") }, true, http.StatusAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.secrets, nil)
			codes := make(chan int, n)
			var wg sync.WaitGroup
			for range n {
				if !tc.concurrent {
					codes <- e.serve(t, tc.d()).Code
					continue
				}
				wg.Go(func() { codes <- e.serve(t, tc.d()).Code })
			}
			wg.Wait()
			close(codes)
			for code := range codes {
				if code != tc.code {
					t.Fatalf("answered %d, want %d", code, tc.code)
				}
			}
			if got := e.secrets.reads.Load(); got != 1 {
				t.Fatalf("%d deliveries read the Secret %d times, want once", n, got)
			}
			e.clock.Add(DefaultSecretTTL - time.Nanosecond)
			e.serve(t, tc.d())
			if got := e.secrets.reads.Load(); got != 1 {
				t.Fatalf("within the TTL: %d Secret reads, want 1", got)
			}
			e.clock.Add(time.Nanosecond)
			for range n {
				e.serve(t, tc.d())
			}
			if got := e.secrets.reads.Load(); got != 2 {
				t.Fatalf("after the TTL: %d Secret reads, want 2", got)
			}
		})
	}
}

// TestCheapChecksFirst: deliveries refused by method, event header, content type or declared
// size read neither the Secret nor the body, and take no token from the rate limit.
func TestCheapChecksFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*delivery)
		code   int
	}{
		{"GET", func(d *delivery) { d.method = http.MethodGet }, http.StatusMethodNotAllowed},
		{"no event header", func(d *delivery) { d.header.Del("X-GitHub-Event") }, http.StatusBadRequest},
		{"form-encoded", func(d *delivery) { d.header.Set("Content-Type", "application/x-www-form-urlencoded") }, http.StatusUnsupportedMediaType},
		{"no content type", func(d *delivery) { d.header["Content-Type"] = nil }, http.StatusUnsupportedMediaType},
		{"declared too large", func(d *delivery) { d.body, d.length = neverRead{t}, maxBody+1 }, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, testSecrets, func(r *Receiver) { r.RateLimit, r.RateBurst = 0.001, 1 })
			for range 10 {
				d := pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main")
				tc.mutate(&d)
				if w := e.serve(t, d); w.Code != tc.code {
					t.Fatalf("%d %q, want %d", w.Code, w.Body.String(), tc.code)
				}
			}
			if got := e.secrets.reads.Load(); got != 0 {
				t.Errorf("%d Secret reads, want none", got)
			}
			// The one token is still there.
			if w := e.serve(t, pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main")); w.Code != http.StatusAccepted {
				t.Errorf("then a signed push: %d %q, want 202", w.Code, w.Body.String())
			}
		})
	}
}

// neverRead is a body that fails the test when read.
type neverRead struct{ t *testing.T }

func (n neverRead) Read([]byte) (int, error) {
	n.t.Error("the body was read")
	return 0, io.EOF
}

// TestSecretRotation: a rotated secret is used once the TTL has passed since the last read; a
// deleted Secret refuses deliveries from then on.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[Provider]string{GitHub: "old"}, func(r *Receiver) { r.SecretTTL = 30 * time.Second })
	rotate := func(t *testing.T) {
		s := webhookSecret(map[Provider]string{GitHub: "new"})
		if err := e.api.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(t *testing.T) {
		if err := e.api.Delete(t.Context(), webhookSecret(nil)); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name    string
		before  func(*testing.T)
		advance time.Duration
		secret  string
		code    int
		reads   int64
	}{
		{"old secret", nil, 0, "old", http.StatusAccepted, 1},
		{"new secret before the rotation", nil, 0, "new", http.StatusUnauthorized, 1},
		{"rotated: old secret still used within the TTL", rotate, 29 * time.Second, "old", http.StatusAccepted, 1},
		{"rotated: new secret refused within the TTL", nil, 0, "new", http.StatusUnauthorized, 1},
		{"rotated: new secret used after the TTL", nil, time.Second, "new", http.StatusAccepted, 2},
		{"rotated: old secret refused after the TTL", nil, 0, "old", http.StatusUnauthorized, 2},
		{"deleted: used within the TTL", remove, 29 * time.Second, "new", http.StatusAccepted, 2},
		{"deleted: refused after the TTL", nil, time.Second, "new", http.StatusUnauthorized, 3},
		{"deleted: not read again within the TTL", nil, 29 * time.Second, "new", http.StatusUnauthorized, 3},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.before != nil {
				step.before(t)
			}
			e.clock.Add(step.advance)
			if w := e.serve(t, pushDelivery(GitHub, step.secret, testRepoURL, "refs/heads/main")); w.Code != step.code {
				t.Errorf("%d %q, want %d", w.Code, w.Body.String(), step.code)
			}
			if got := e.secrets.reads.Load(); got != step.reads {
				t.Errorf("%d Secret reads in all, want %d", got, step.reads)
			}
		})
	}
}

// failingReader fails every read after the first ok ones.
type failingReader struct {
	client.Reader
	ok atomic.Int64
}

func (r *failingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r.ok.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestSecretReadFails: when reading the Secret fails, the Secret read before is used until the
// next read; without one, deliveries are refused. Either way the failure is kept for the TTL.
func TestSecretReadFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   int64
		code int
	}{
		{"read before", 1, http.StatusAccepted},
		{"never read", 0, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, testSecrets, nil)
			failing := &failingReader{Reader: e.api}
			failing.ok.Store(tc.ok)
			e.secrets.Reader = failing
			signed := func() delivery { return pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main") }
			if tc.ok > 0 {
				if w := e.serve(t, signed()); w.Code != http.StatusAccepted {
					t.Fatalf("first push: %d %q", w.Code, w.Body.String())
				}
				e.clock.Add(DefaultSecretTTL)
			}
			reads := e.secrets.reads.Load()
			for range 5 {
				if w := e.serve(t, signed()); w.Code != tc.code {
					t.Fatalf("%d %q, want %d", w.Code, w.Body.String(), tc.code)
				}
			}
			if got := e.secrets.reads.Load() - reads; got != 1 {
				t.Errorf("%d reads while failing, want 1", got)
			}
		})
	}
}

// TestRateLimit: deliveries beyond the token bucket are answered 429 with Retry-After, before
// the Secret is read and without requesting a fetch; tokens come back with time.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	type step struct {
		advance    time.Duration
		signed     bool
		code       int
		retryAfter string
	}
	for _, tc := range []struct {
		name           string
		limit          float64
		burst          int
		steps          []step
		reads, patches int64
	}{
		{"burst then refill", 1, 2, []step{
			{0, true, http.StatusAccepted, ""},
			{0, true, http.StatusAccepted, ""},
			{0, true, http.StatusTooManyRequests, "1"},
			{0, false, http.StatusTooManyRequests, "1"},
			{time.Second, true, http.StatusAccepted, ""},
			{0, true, http.StatusTooManyRequests, "1"},
		}, 1, 3},
		{"unsigned junk takes tokens too", 1, 3, []step{
			{0, false, http.StatusUnauthorized, ""},
			{0, false, http.StatusUnauthorized, ""},
			{0, false, http.StatusUnauthorized, ""},
			{0, true, http.StatusTooManyRequests, "1"},
			{time.Second, true, http.StatusAccepted, ""},
		}, 1, 1},
		{"refused: no Secret read", 0.05, 1, []step{
			{0, false, http.StatusUnauthorized, ""},
			{DefaultSecretTTL, false, http.StatusTooManyRequests, "20"},
			{0, true, http.StatusTooManyRequests, "20"},
			{11 * time.Second, true, http.StatusAccepted, ""},
		}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, testSecrets, func(r *Receiver) { r.RateLimit, r.RateBurst = tc.limit, tc.burst })
			var want429 int64
			for i, s := range tc.steps {
				e.clock.Add(s.advance)
				d := unsigned()
				if s.signed {
					d = pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main")
				}
				w := e.serve(t, d)
				if w.Code != s.code || w.Header().Get("Retry-After") != s.retryAfter {
					t.Errorf("delivery %d: %d, Retry-After %q, want %d, %q", i, w.Code, w.Header().Get("Retry-After"), s.code, s.retryAfter)
				}
				if s.code == http.StatusTooManyRequests {
					want429++
				}
			}
			if got := e.secrets.reads.Load(); got != tc.reads {
				t.Errorf("%d Secret reads, want %d", got, tc.reads)
			}
			if got := e.writes.patches.Load(); got != tc.patches {
				t.Errorf("%d fetch requests, want %d", got, tc.patches)
			}
			if got := e.rcv.throttled[limitRate].Load(); got != want429 {
				t.Errorf("%d deliveries counted as refused by the rate limit, want %d", got, want429)
			}
		})
	}
}

// gatedBody is a request body whose first Read reports on started and then waits for release.
type gatedBody struct {
	r       io.Reader
	once    sync.Once
	started chan struct{}
	release chan struct{}
}

func (b *gatedBody) Read(p []byte) (int, error) {
	b.once.Do(func() {
		close(b.started)
		<-b.release
	})
	return b.r.Read(p)
}

// TestConcurrencyLimit: while MaxInFlight deliveries are being processed, another is answered
// 429 with Retry-After at once (it waits for nothing, reads nothing and requests no fetch); when
// one finishes, the next is processed.
func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		inFlight int
		extra    delivery
	}{
		{"one at a time, signed push refused", 1, pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main")},
		{"one at a time, junk refused", 1, unsigned()},
		{"three at a time", 3, pushDelivery(GitLab, testSecrets[GitLab], testRepoURL, "refs/heads/main")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, testSecrets, func(r *Receiver) { r.MaxInFlight = tc.inFlight })
			release := make(chan struct{})
			results := make(chan int, tc.inFlight)
			for range tc.inFlight {
				d := pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main")
				body := &gatedBody{r: d.body, started: make(chan struct{}), release: release}
				d.body = body
				go func() { results <- e.serve(t, d).Code }()
				<-body.started // it holds a slot
			}
			// Answered at once: a delivery waiting for a slot would be a queue.
			answer := make(chan *httptest.ResponseRecorder, 1)
			go func() { answer <- e.serve(t, tc.extra) }()
			var w *httptest.ResponseRecorder
			select {
			case w = <-answer:
			case <-time.After(10 * time.Second): // a bound, not a synchronisation
				close(release)
				t.Fatal("a delivery over the limit got no answer: it waits for a slot")
			}
			if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
				t.Errorf("over the limit: %d, Retry-After %q, want 429, \"1\"", w.Code, w.Header().Get("Retry-After"))
			}
			if got := e.rcv.throttled[limitConcurrency].Load(); got != 1 {
				t.Errorf("%d deliveries counted as refused by the concurrency limit, want 1", got)
			}
			if got := e.secrets.reads.Load(); got != 0 {
				t.Errorf("%d Secret reads while the others wait in their body, want 0", got)
			}
			if got := e.writes.patches.Load(); got != 0 {
				t.Errorf("%d fetch requests before the others finished, want 0", got)
			}
			close(release)
			for range tc.inFlight {
				if code := <-results; code != http.StatusAccepted {
					t.Errorf("a delivery in flight: %d, want 202", code)
				}
			}
			if got := e.writes.patches.Load(); got != int64(tc.inFlight) {
				t.Errorf("%d fetch requests, want %d (none for the refused delivery)", got, tc.inFlight)
			}
			if w := e.serve(t, pushDelivery(GitHub, testSecrets[GitHub], testRepoURL, "refs/heads/main")); w.Code != http.StatusAccepted {
				t.Errorf("after the others finished: %d %q, want 202", w.Code, w.Body.String())
			}
		})
	}
}
