package dashboard_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/dashboard"
	"github.com/droverhq/drover/internal/migration/controller"
	"github.com/droverhq/drover/test/envtest"
)

// TestFleetNotReady: a fleet Cluster whose agent checks in but whose Ready condition is False
// is never shown as connected: DownstreamUnreachable (the agent cannot reach its own API
// server) is "unreachable", any other reason "not ready", each with its reason and message on
// the row; the overview counts them apart from the connected ones, as drover check does.
func TestFleetNotReady(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	seen := metav1.NewTime(time.Now().Add(-10 * time.Second))
	clusters := map[string]fleetv1alpha1.ClusterStatus{
		"ok": {Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen},
			Conditions: []metav1.Condition{cond("Ready", "True", "Succeeded", "Agent checked in")}},
		"cut-off": {Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen, DownstreamError: "dial tcp 10.0.0.9:6443: connect: connection refused"},
			Conditions: []metav1.Condition{cond("Ready", "False", fleetv1alpha1.ReasonDownstreamUnreachable, "The agent cannot reach its cluster's API server: connection refused")}},
		"broken": {Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen},
			Conditions: []metav1.Condition{cond("Ready", "False", fleetv1alpha1.ReasonDeployFailed, "The agent's Deployment cannot be applied")}},
		"gone": {Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen},
			Conditions: []metav1.Condition{cond("Ready", "False", fleetv1alpha1.ReasonAgentDisconnected, "The agent last checked in 10 minutes ago")}},
	}
	for name, st := range clusters {
		c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		createAll(t, c)
		c.Status = st
		setStatus(t, c)
	}
	b := newBrowser(t, serverDashboard(t))
	b.signIn(clusterViewer(t, ns, "viewer"), "")
	q := "?namespace=" + ns

	page := b.page("/fleet" + q)
	mustContain(t, page, `data-cluster="`+ns+`/ok" data-state="connected"`, `data-cluster="`+ns+`/cut-off" data-state="unreachable"`,
		`data-cluster="`+ns+`/broken" data-state="notready"`, `data-cluster="`+ns+`/gone" data-state="disconnected"`)
	for name, reason := range map[string]string{"cut-off": fleetv1alpha1.ReasonDownstreamUnreachable, "broken": fleetv1alpha1.ReasonDeployFailed} {
		// Inline, in the row, not only in a hover title.
		re := regexp.MustCompile(`data-cluster="` + ns + `/` + name + `"[^>]*>\s*<td>[^<]*</td>\s*<td><span class="badge bad"[^>]*>[^<]+</span><div class="reason" data-reason="` + reason + `"><b>` + reason + `</b>: [^<]+</div>`)
		if !re.MatchString(page) {
			t.Errorf("%s: no bad badge with its reason %s inline", name, reason)
		}
	}
	mustContain(t, page, "connection refused", "cannot be applied")
	mustNotContain(t, page, `data-cluster="`+ns+`/cut-off" data-state="connected"`)

	overview := b.page("/" + q)
	mustContain(t, overview, `data-count="fleet">4<`, `data-count="connected">1 connected<`, `data-count="disconnected">1 disconnected<`,
		`data-count="unreachable">1 cannot reach their API server<`, `data-count="fleet-not-ready">1 not ready<`)
	if t.Failed() {
		t.Logf("fleet page:\n%s\noverview:\n%s", page, overview)
	}
}

// TestHostedNotReady: a hosted cluster whose Ready condition is False (its credentials Secret
// is missing) is counted on the overview's card, not only as "pending" in the phase table,
// and the hosted clusters page shows the reason and message.
func TestHostedNotReady(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	c := eksCluster(ns, "nocreds")
	fine := eksCluster(ns, "fine")
	createAll(t, c, fine)
	c.Status = managementv1alpha1.ClusterStatus{Conditions: []metav1.Condition{
		cond("Ready", "False", "SecretNotFound", "Secret aws in "+ns+" not found: create it with the provider's credentials")}}
	setStatus(t, c)
	fine.Status = managementv1alpha1.ClusterStatus{Phase: managementv1alpha1.PhaseActive, Conditions: []metav1.Condition{cond("Ready", "True", "Active", "The cluster is active.")}}
	setStatus(t, fine)
	b := newBrowser(t, serverDashboard(t))
	b.signIn(clusterViewer(t, ns, "viewer"), "")
	q := "?namespace=" + ns

	overview := b.page("/" + q)
	mustContain(t, overview, `data-count="hosted">2<`, `data-count="hosted-not-ready">1 not ready<`)
	if !regexp.MustCompile(`<div class="card" id="card-hosted">\s*<h2><a href="/hosted` + regexp.QuoteMeta(q) + `">(?s:[^d]|d[^i]|di[^v])*` +
		`<a class="badge bad" href="/hosted\?namespace=` + ns + `&amp;state=notready" data-count="hosted-not-ready">`).MatchString(overview) {
		t.Errorf("the not-ready count is not on the hosted card, linking to the hosted clusters not ready")
	}
	page := b.page("/hosted" + q)
	mustContain(t, page, `data-ready-reason="SecretNotFound"`, "Secret aws in "+ns+" not found: create it")
	mustNotContain(t, page, `data-ready-reason="Active"`)
	if t.Failed() {
		t.Logf("overview:\n%s\nhosted:\n%s", overview, page)
	}
}

// bypasses are redirect targets that leave the dashboard in some browser.
var bypasses = []string{
	"/\t/evil.example/x", "/\n/evil.example", "/\r/evil.example", "\t//evil.example", "/\\evil.example", "/\\/evil.example",
	"//evil.example", "///evil.example", "/%2F/evil.example", "/%2f/evil.example", "/%5Cevil.example", "/%09/evil.example",
	"/%0a/evil.example", "/x/%0d%0aSet-Cookie:a=b", "https://evil.example", "https:evil.example", "javascript:alert(1)",
	"/x\\y", "/x\x7f", "", "evil.example", ".//evil.example", "/%", "/\u0000/evil.example",
}

// TestSafeNext: only a path of the dashboard's own origin is kept as the target after sign-in.
func TestSafeNext(t *testing.T) {
	t.Parallel()
	for _, next := range bypasses {
		if got := dashboard.SafeNext(next); got != "/" {
			t.Errorf("SafeNext(%q) = %q, want /", next, got)
		}
	}
	for _, next := range []string{"/", "/hosted", "/hosted/team-a/web?namespace=team-a", "/fleet?namespace=a%20b", "/bundles#x"} {
		if got := dashboard.SafeNext(next); got != next {
			t.Errorf("SafeNext(%q) = %q, want it kept", next, got)
		}
	}
}

// TestSignInRedirectStaysOnDashboard: the sign-in's redirect never leaves the dashboard, in
// local mode (the access key's URL) and server mode (the login form).
func TestSignInRedirectStaysOnDashboard(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	local := localDashboard(t, ns, "me", "k3y", nil)
	srv := serverDashboard(t)
	tok := clusterViewer(t, ns, "viewer")
	for _, next := range bypasses {
		status, loc := redirect(t, local, http.MethodGet, "/login?"+url.Values{"key": {"k3y"}, "next": {next}}.Encode(), nil)
		if status != http.StatusSeeOther || loc != "/" {
			t.Errorf("local mode, next %q: status %d, to %q, want / ", next, status, loc)
		}
		b := newBrowser(t, srv)
		status, loc = redirect(t, b, http.MethodPost, "/login", url.Values{"token": {tok}, "next": {next}})
		if status != http.StatusSeeOther || loc != "/" {
			t.Errorf("server mode, next %q: status %d, to %q, want /", next, status, loc)
		}
	}
	if status, loc := redirect(t, local, http.MethodGet, "/login?key=k3y&next=%2Ffleet%3Fnamespace%3D"+ns, nil); status != http.StatusSeeOther || loc != "/fleet?namespace="+ns {
		t.Errorf("a dashboard path: status %d, to %q", status, loc)
	}
}

// redirect makes a request as b (a form when set) and returns the status and Location.
func redirect(t *testing.T, b *browser, method, path string, form url.Values) (int, string) {
	t.Helper()
	if method == http.MethodPost {
		status, _, hdr := b.post(path, form, true)
		return status, hdr.Get("Location")
	}
	// A bare round trip: a client would refuse to parse a Location with a control character,
	// which a browser reads leniently.
	req, err := http.NewRequest(method, b.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// downDashboard serves a server-mode dashboard whose management API server does not answer (a
// closed port).
func downDashboard(t *testing.T) *browser {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cfg := rest.CopyConfig(mgmt.Config)
	cfg.Host = "https://" + addr
	h, err := dashboard.New(dashboard.Options{APIServer: cfg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newBrowser(t, srv)
}

// TestSignInAPIServerDown: a token the API server could not check does not sign in: the
// sign-in page says to try again (503) and sets no cookie. A page asked for with a token is
// answered plainly that the API server cannot be reached.
func TestSignInAPIServerDown(t *testing.T) {
	t.Parallel()
	b := downDashboard(t)
	status, body, hdr := b.post("/login", url.Values{"token": {"any-token-at-all"}, "next": {"/"}}, true)
	if status != http.StatusServiceUnavailable {
		t.Errorf("sign in while the API server is down: status %d, want 503", status)
	}
	mustContain(t, body, "annot reach the management API server to check this token: try again", `id="token"`, "connection refused")
	for _, c := range hdr.Values("Set-Cookie") {
		if strings.HasPrefix(c, "drover_session=") {
			t.Errorf("a session cookie was set: %s", c)
		}
	}
	req, err := http.NewRequest(http.MethodGet, b.base+"/hosted", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer any-token-at-all")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a page while the API server is down: status %d, want 503", resp.StatusCode)
	}
	mustContain(t, string(page), "The management API server cannot be reached", `id="error-detail"`)
}

// TestMigrationNextSteps: a failed migration's section says what to do next, with the
// commands drover migrate get prints, and shows its conditions and the steps' ages.
func TestMigrationNextSteps(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	m := &migrationv1alpha1.CloudProviderMigration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stuck"},
		Spec: migrationv1alpha1.CloudProviderMigrationSpec{Distribution: "rke2", KubeconfigSecretRef: migrationv1alpha1.SecretKeyReference{Name: "kc"}}}
	createAll(t, m)
	started := metav1.NewTime(time.Now().Add(-5 * time.Minute))
	finished := metav1.NewTime(time.Now().Add(-3 * time.Minute))
	m.Status = migrationv1alpha1.CloudProviderMigrationStatus{Phase: migrationv1alpha1.PhaseFailed, CurrentStep: 1,
		Steps: []migrationv1alpha1.StepStatus{
			{Index: 0, Name: "Preflight", Phase: migrationv1alpha1.StepSucceeded, StartedAt: &started, FinishedAt: &finished},
			{Index: 1, Name: "EnableLeaderMigration", Phase: migrationv1alpha1.StepFailed, StartedAt: &finished, FinishedAt: &finished, Message: "kube-controller-manager did not restart"},
		},
		Conditions: []metav1.Condition{cond("Ready", "False", "EnableLeaderMigration", "Step EnableLeaderMigration failed: kube-controller-manager did not restart")}}
	setStatus(t, m)
	b := newBrowser(t, serverDashboard(t))
	b.signIn(clusterViewer(t, ns, "viewer"), "")
	page := b.page("/migrations?namespace=" + ns)
	mustContain(t, page, `data-next="`+ns+`/stuck"`,
		fmt.Sprintf("kubectl -n %s annotate cloudprovidermigration stuck %s=$(date &#43;%%s) --overwrite", ns, controller.RetryAnnotation),
		fmt.Sprintf("kubectl -n %s annotate cloudprovidermigration stuck %s=true", ns, controller.RollbackAnnotation),
		`data-condition="Ready"`, "Step EnableLeaderMigration failed: kube-controller-manager did not restart",
		"(3m", "ago)")
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
}

// downTransport fails every new request once down, as a stopped API server would, and ends
// the responses open then (the watches).
type downTransport struct {
	mu     sync.Mutex
	down   bool
	bodies []*io.PipeWriter
}

func (d *downTransport) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		d.mu.Lock()
		down := d.down
		d.mu.Unlock()
		if down {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		// Through a pipe: closing it ends a read in progress at once (closing an HTTP/1 body
		// does not), as a dropped connection would.
		pr, pw := io.Pipe()
		body := resp.Body
		go func() {
			_, err := io.Copy(pw, body)
			_ = body.Close()
			_ = pw.CloseWithError(err)
		}()
		resp.Body = pr
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.down { // it went down while the response was on its way
			_ = pw.CloseWithError(io.ErrUnexpectedEOF)
		}
		d.bodies = append(d.bodies, pw)
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (d *downTransport) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = true
	for _, b := range d.bodies {
		_ = b.CloseWithError(io.ErrUnexpectedEOF)
	}
}

// TestAPIServerGone: when the management API server stops answering, a page served from the
// viewer's cache says since when its data may be stale, and a page that must be listed says
// plainly that the API server cannot be reached (503), the error in small print.
func TestAPIServerGone(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	createAll(t, eksCluster(ns, "cached"))
	var tr downTransport
	// A viewer of every namespace: one who may not list them would list namespaces for each
	// page (not cached), which fails at once.
	cfg := rest.AnonymousClientConfig(mgmt.Config)
	cfg.BearerToken = clusterViewer(t, ns, "me")
	cfg.WrapTransport = tr.wrap
	h, err := dashboard.New(dashboard.Options{Local: cfg, AccessKey: "k3y"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := newBrowser(t, srv)
	if status, _ := b.get("/login?key=k3y"); status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", status)
	}
	q := "?namespace=" + ns
	page := b.page("/hosted" + q)
	mustContain(t, page, `data-cluster="`+ns+`/cached"`)
	mustNotContain(t, page, `id="stale"`)

	tr.stop()
	// Within the session's 30 s, after which the access key is checked again (and fails).
	envtest.Eventually(t, 20*time.Second, func() error {
		page = b.page("/hosted" + q)
		if !strings.Contains(page, `id="stale"`) {
			return errors.New("no stale notice yet")
		}
		return nil
	})
	mustContain(t, page, `data-cluster="`+ns+`/cached"`, "data may be stale since")

	status, body := b.get("/migrations" + q)
	if status != http.StatusServiceUnavailable {
		t.Errorf("a page not cached while the API server is down: status %d, want 503", status)
	}
	mustContain(t, body, "The management API server cannot be reached", `id="error-detail"`, "connection refused")
}
