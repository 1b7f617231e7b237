package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/droverhq/drover/internal/dashboard"
	"github.com/droverhq/drover/test/envtest"
)

// mgmt is the package's API server (RBAC on, drover's CRDs installed).
var mgmt *envtest.Cluster

func TestMain(m *testing.M) {
	if os.Getenv("DROVER_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if mgmt, err = envtest.Start("dashboard", envtest.Options{InstallCRDs: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = mgmt.Stop() }()
	return m.Run()
}

// readRules read everything the dashboard shows.
var readRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"management.drover.io"}, Resources: []string{"clusters"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"fleet.drover.io"}, Resources: []string{"clusters", "bundles", "bundledeployments", "gitrepos", "clusterregistrationtokens"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"migration.drover.io"}, Resources: []string{"cloudprovidermigrations"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}},
}

// patchRule lets a viewer use "refresh now".
var patchRule = rbacv1.PolicyRule{APIGroups: []string{"management.drover.io"}, Resources: []string{"clusters"}, Verbs: []string{"patch"}}

// clusterViewer returns the token of a ServiceAccount in ns that may read the dashboard's kinds
// (and list namespaces) in every namespace, plus extra rules.
func clusterViewer(t testing.TB, ns, name string, extra ...rbacv1.PolicyRule) string {
	t.Helper()
	ctx := t.Context()
	rules := append(append([]rbacv1.PolicyRule{}, readRules...), rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}})
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Rules: append(rules, extra...)}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	for _, o := range []client.Object{role, binding} {
		if err := mgmt.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), o) })
	}
	return token(t, ns, name)
}

// namespaceViewer returns the token of a ServiceAccount that may read the dashboard's kinds in
// the namespace readable only (no cluster-wide right at all), plus extra rules there.
func namespaceViewer(t testing.TB, saNS, name, readable string, extra ...rbacv1.PolicyRule) string {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: readable, Name: name}, Rules: append(append([]rbacv1.PolicyRule{}, readRules...), extra...)}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: readable, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: saNS, Name: name}}}
	for _, o := range []client.Object{role, binding} {
		if err := mgmt.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return token(t, saNS, name)
}

func token(t testing.TB, ns, name string) string {
	t.Helper()
	cfg, err := mgmt.ServiceAccountConfig(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.BearerToken
}

// serverDashboard serves a server-mode dashboard of mgmt for the test. Its config is the admin
// one: the dashboard must use only its address and CA.
func serverDashboard(t testing.TB) *httptest.Server {
	t.Helper()
	h, err := dashboard.New(dashboard.Options{APIServer: mgmt.Config})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// browser is an HTTP client with cookies, signed in to a dashboard.
type browser struct {
	t    testing.TB
	base string
	c    *http.Client
}

// localDashboard serves drover dashboard's local mode as a viewer of namespace ns (user, with
// the access key), its API requests through wrap when set, and returns a browser for it (not
// signed in yet).
func localDashboard(t testing.TB, ns, user, key string, wrap func(http.RoundTripper) http.RoundTripper) *browser {
	t.Helper()
	cfg := rest.AnonymousClientConfig(mgmt.Config)
	cfg.BearerToken = namespaceViewer(t, ns, user, ns)
	cfg.WrapTransport = wrap
	h, err := dashboard.New(dashboard.Options{Local: cfg, AccessKey: key, Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newBrowser(t, srv)
}

func newBrowser(t testing.TB, srv *httptest.Server) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, base: srv.URL, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signIn posts the login form, as the page would.
func (b *browser) signIn(token, namespace string) {
	b.t.Helper()
	status, body, _ := b.post("/login", url.Values{"token": {token}, "namespace": {namespace}, "next": {"/"}}, true)
	if status != http.StatusSeeOther {
		b.t.Fatalf("sign in: status %d: %s", status, body)
	}
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// page GETs a page that must answer 200.
func (b *browser) page(path string) string {
	b.t.Helper()
	status, body := b.get(path)
	if status != http.StatusOK {
		b.t.Fatalf("GET %s: status %d: %s", path, status, body)
	}
	return body
}

// post sends a form; sameOrigin sets the Origin header a dashboard page would send.
func (b *browser) post(path string, form url.Values, sameOrigin bool) (int, string, http.Header) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sameOrigin {
		req.Header.Set("Origin", b.base)
	} else {
		req.Header.Set("Origin", "http://evil.example")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

var csrfRE = regexp.MustCompile(`name="drover-csrf" content="([^"]+)"`)

// csrf is the form token of a page (every page carries it, with or without a form).
func csrf(t testing.TB, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page")
	}
	return m[1]
}

func mustContain(t testing.TB, page string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

func mustNotContain(t testing.TB, page string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(page, w) {
			t.Errorf("page shows %q", w)
		}
	}
}

func createAll(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := mgmt.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// setStatus writes an object's status (the status subresource) as admin.
func setStatus(t testing.TB, o client.Object) {
	t.Helper()
	if err := mgmt.Client.Status().Update(context.Background(), o); err != nil {
		t.Fatalf("status of %T %s: %v", o, o.GetName(), err)
	}
}

func warningEvent(ns, name string, regarding corev1.ObjectReference, reason, msg string) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, InvolvedObject: regarding, Type: corev1.EventTypeWarning,
		Reason: reason, Message: msg, FirstTimestamp: now, LastTimestamp: now, Count: 1, Source: corev1.EventSource{Component: "test"}}
}
