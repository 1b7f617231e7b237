package dashboard_test

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
)

// TestPages: every page, read through a real API server with a viewer's token, shows the
// objects the test created in the states they are in.
func TestPages(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	newFleet(t, ns)
	b := newBrowser(t, serverDashboard(t))
	b.signIn(clusterViewer(t, ns, "viewer"), "")
	q := "?namespace=" + ns
	for _, tc := range []struct {
		name, path string
		want       []string
		match      []string
	}{
		{"overview", "/" + q, []string{`data-count="hosted">3<`, `data-count="fleet">3<`, `data-count="connected">1 connected<`,
			`data-count="disconnected">1 disconnected<`, `data-count="bundles">2<`, `data-count="bundles-not-ready">2 not ready<`,
			`data-count="migrations-running">1 running<`, `data-count="gitrepos">2<`, `data-count="hosted-not-joined">1 cannot join the fleet<`, `data-count="gitrepos-error">1 not syncing<`, `data-count="gitrepos-paused">1 paused<`, `hosted cluster ` + ns + `/data`, "Conflict", "1 with a conflict",
			`<a href="/migrations?namespace=` + ns + `">migration ` + ns + `/move-prod</a>`, "StepSlow"},
			[]string{`<tr data-provider="eks"><th>eks</th><td[^>]*>1</td>`, `<tr data-provider="gke"><th>gke</th>(<td[^>]*>0</td>){5}<td[^>]*>1</td>`}},
		{"hosted clusters", "/hosted" + q, []string{`data-cluster="` + ns + `/web"`, "us-west-2", "1.32", `data-phase="active"`,
			`data-cluster="` + ns + `/api"`, "westeurope", `data-phase="updating"`, `data-cluster="` + ns + `/data"`, "europe-west1-b", ">conflict<",
			`href="/hosted/` + ns + `/web?namespace=` + ns + `"`, `data-fleet="agent ready"`, `data-fleet="CredentialsRejected"`, "refused drover&#39;s token (401)"}, nil},
		{"hosted cluster", "/hosted/" + ns + "/web", []string{"us-west-2", `data-field="eksConfig.tags[team]"`, `data-condition="Ready"`,
			"Every managed field matches the provider.", `id="refresh-not-allowed"`}, nil},
		{"fleet clusters", "/fleet" + q, []string{`data-cluster="` + ns + `/edge-1" data-state="connected"`, `data-cluster="` + ns + `/edge-2" data-state="disconnected"`,
			`data-cluster="` + ns + `/edge-3" data-state="waiting"`, "v9.8.7", "env=prod", "app: ready", "monitoring: drift", "app: pending", "monitoring: apply failed"}, nil},
		{"bundles", "/bundles" + q, []string{`data-bundle="` + ns + `/app"`, `data-bundle="` + ns + `/monitoring"`, "1/2 ready", "0/2 ready",
			"Deployment monitoring/prometheus Modified: spec.replicas", `namespaces &#34;monitoring&#34; is forbidden`},
			[]string{`data-cluster="` + ns + `/edge-1">\s*<th>[^<]*</th>\s*<td class="cell cell-ready" data-bundle="app" data-state="ready"`,
				`data-cluster="` + ns + `/edge-2">\s*<th>[^<]*<span[^>]*>disconnected</span>\s*</th>\s*<td class="cell cell-pending" data-bundle="app"`,
				`data-bundle="monitoring" data-state="errapplied"`, `data-bundle="monitoring" data-state="modified"`,
				`data-cluster="` + ns + `/edge-3">\s*<th>[^<]*<span[^>]*>waiting</span>\s*</th>\s*<td class="cell cell-none"`}},
		{"gitrepos", "/gitrepos" + q, []string{`data-gitrepo="` + ns + `/apps" data-state="error"`, `data-error="RenderFailed"`,
			"apps/db/drover.yaml: unknown key helm.vaules", "https://git.example.com/org/apps.git", "branch main", "paths apps/*",
			"credentials from Secret git-auth", `data-commit="0123456789abcdef0123456789abcdef01234567">0123456789ab<`, "1 of 2 Bundles ready",
			`data-bundle="apps-db" data-ready="false"`, "edge-2: pending", `data-bundle="apps-web" data-ready="true"`,
			`data-gitrepo="` + ns + `/infra" data-state="paused"`, "tag v1.2.0", "fetching paused", `href="/bundles?namespace=` + ns + `"`}, nil},
		{"tokens", "/tokens" + q, []string{`data-token="` + ns + `/edge"`, `data-clusters="2/2"`, ">full<", "edge-values",
			`data-token="` + ns + `/open"`, `data-clusters="any"`, "no limit", "in 89m", "import for edge-1"},
			[]string{`data-token="` + ns + `/open">(?s:.)*data-token="` + ns + `/import-edge-1"`, `data-token="` + ns + `/import-edge-1" class="muted">(?s:.)*data-clusters="cluster edge-1 only">cluster edge-1 only</td>`}},
		{"migrations", "/migrations" + q, []string{`data-migration="` + ns + `/move-prod"`, "2 of 7 steps done", `data-step="2" data-phase="Running"`,
			"waiting for node cp-1 to be unschedulable", "every control-plane node is unschedulable", `data-step="6" data-phase="Pending"`,
			`class="seg seg-running current"`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := b.page(tc.path)
			mustContain(t, page, tc.want...)
			for _, re := range tc.match {
				if !regexp.MustCompile(re).MatchString(page) {
					t.Errorf("page does not match %s", re)
				}
			}
			if t.Failed() {
				t.Logf("page:\n%s", page)
			}
		})
	}
}

// TestSignIn: without a token the dashboard asks for one and never reads with its own
// identity; a token the API server refuses does not sign in.
func TestSignIn(t *testing.T) {
	t.Parallel()
	srv := serverDashboard(t)
	b := newBrowser(t, srv)
	for _, path := range []string{"/", "/hosted", "/fleet", "/bundles", "/gitrepos", "/migrations", "/tokens", "/hosted/default/x"} {
		status, _ := b.get(path)
		if status != http.StatusSeeOther {
			t.Errorf("GET %s without a token: status %d, want a redirect to the sign-in page", path, status)
		}
	}
	resp, err := b.c.Get(srv.URL + "/hosted")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/login?") {
		t.Errorf("redirect to %q, want /login", loc)
	}
	if status, _ := b.get("/watch?s=x"); status != http.StatusUnauthorized {
		t.Errorf("event stream without a token: %d, want 401", status)
	}
	status, body, _ := b.post("/login", url.Values{"token": {"not-a-token"}}, true)
	if status != http.StatusUnauthorized || !strings.Contains(body, "did not accept this token") {
		t.Errorf("sign in with a bad token: %d %s", status, body)
	}
	// A token in the Authorization header works without signing in.
	ns := mgmt.Namespace(t)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/hosted?namespace="+ns, nil)
	req.Header.Set("Authorization", "Bearer "+clusterViewer(t, ns, "header"))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Authorization header: status %d", resp.StatusCode)
	}
	// A client that sends a token the API server refuses is told so, not sent to a sign-in page.
	for auth, want := range map[string]string{"Bearer xyz": "did not accept the bearer token", "Basic eDp5": "Bearer TOKEN"} {
		req, _ = http.NewRequest(http.MethodGet, srv.URL+"/hosted", nil)
		req.Header.Set("Authorization", auth)
		resp, err = b.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), want) {
			t.Errorf("Authorization: %s: status %d (%s), want 401", auth, resp.StatusCode, body)
		}
	}
	// The session cookie is HttpOnly and SameSite=Strict.
	b.signIn(clusterViewer(t, ns, "cookie"), "")
	u, _ := url.Parse(srv.URL)
	found := false
	for _, c := range b.c.Jar.Cookies(u) {
		found = found || c.Name == "drover_session"
	}
	if !found {
		t.Fatal("no session cookie after sign-in")
	}
	status, _, hdr := b.post("/login", url.Values{"token": {clusterViewer(t, ns, "cookie2")}, "next": {"/"}}, true)
	if status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", status)
	}
	for _, sc := range hdr.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "drover_session=") && (!strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict")) {
			t.Errorf("session cookie %q is not HttpOnly and SameSite=Strict", sc)
		}
	}
}

// TestLocalMode: drover dashboard's mode reads with the given identity (here a viewer of one
// namespace, its kubeconfig context's), and only for a browser that brought the access key.
func TestLocalMode(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	createAll(t, eksCluster(ns, "mine"))
	b := localDashboard(t, ns, "me", "s3cret-key", nil)
	for _, path := range []string{"/", "/hosted", "/login?key=wrong"} {
		status, body := b.get(path)
		if status != http.StatusUnauthorized || !strings.Contains(body, "access key") {
			t.Errorf("GET %s without the access key: status %d", path, status)
		}
		// Where the URL was printed, in either way of running it, as code (not Markdown).
		mustContain(t, body, "<code>drover dashboard</code>", "<code>drover server --demo</code>", "<code>Dashboard:</code>")
		mustNotContain(t, body, "`")
	}
	if status, _ := b.get("/login?key=s3cret-key&next=/hosted"); status != http.StatusSeeOther {
		t.Fatalf("the access key was not taken: %d", status)
	}
	page := b.page("/hosted")
	mustContain(t, page, `data-cluster="`+ns+`/mine"`, "showing those in "+ns)
	if status, _, _ := b.post("/login", url.Values{"token": {"x"}}, true); status != http.StatusForbidden {
		t.Errorf("token sign-in in local mode: %d, want 403", status)
	}
}

var linkRE = regexp.MustCompile(`(?:href|action)="(/[^"]*)"`)

// TestNamespaceKeptOnLinks: with a namespace chosen, every link of every page keeps it — the
// navigation, a hosted cluster's page and its own links, the overview's events — and so do the
// pages the actions return to.
func TestNamespaceKeptOnLinks(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	newFleet(t, ns)
	patch := rbacv1.PolicyRule{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"bundles", "gitrepos"}, Verbs: []string{"patch"}}
	b := newBrowser(t, serverDashboard(t))
	b.signIn(clusterViewer(t, ns, "viewer", patchRule, patch), "")
	q := "?namespace=" + ns
	pages := []string{"/", "/hosted", "/hosted/" + ns + "/web", "/fleet", "/bundles", "/gitrepos", "/migrations", "/tokens"}
	for _, path := range pages {
		page := b.page(path + q)
		links := 0
		for _, m := range linkRE.FindAllStringSubmatch(page, -1) {
			link := html.UnescapeString(m[1])
			if strings.HasPrefix(link, "/static/") || link == "/logout" || link == path {
				continue // assets, signing out, the namespace selector's own form
			}
			links++
			if u, err := url.Parse(link); err != nil || u.Query().Get("namespace") != ns {
				t.Errorf("%s: link %s drops the namespace", path, link)
			}
		}
		if links < 8 {
			t.Errorf("%s: only %d links checked", path, links)
		}
	}
	mustContain(t, b.page("/hosted"+q), `href="/hosted/`+ns+`/web?namespace=`+ns+`"`)

	page := b.page("/hosted/" + ns + "/web" + q)
	status, _, hdr := b.post("/hosted/"+ns+"/web/refresh"+q, url.Values{"csrf": {csrf(t, page)}}, true)
	if loc, _ := url.Parse(hdr.Get("Location")); status != http.StatusSeeOther || loc == nil || loc.Query().Get("namespace") != ns || loc.Query().Get("refreshed") == "" {
		t.Errorf("refresh now: status %d, back to %q", status, hdr.Get("Location"))
	}
	for _, action := range []string{"/bundles/" + ns + "/app/pause", "/gitrepos/" + ns + "/apps/pause"} {
		status, _, hdr := b.post(action+q, url.Values{"csrf": {csrf(t, page)}}, true)
		if want := "/" + strings.Split(action, "/")[1] + q; status != http.StatusSeeOther || hdr.Get("Location") != want {
			t.Errorf("%s: status %d, back to %q, want %s", action, status, hdr.Get("Location"), want)
		}
	}
}

// TestConditionStyles: a hosted cluster's conditions are red only when their status is a
// problem for their type: not Updating=False (Idle), Joined=False because the cluster does not
// join by choice (JoinDisabled) or Conflict=False.
func TestConditionStyles(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	c := eksCluster(ns, "calm")
	createAll(t, c)
	c.Status = managementv1alpha1.ClusterStatus{Phase: managementv1alpha1.PhaseActive, Conditions: []metav1.Condition{
		cond("Ready", "True", "Active", "The cluster is active."),
		cond("Synced", "False", "ProviderError", "EKS answered 500"),
		cond("Updating", "False", "Idle", "No update is running."),
		cond("Conflict", "False", "NoConflict", "No field changed on both sides."),
	}, Fleet: &managementv1alpha1.FleetStatus{Conditions: []metav1.Condition{
		cond(managementv1alpha1.ConditionJoined, "False", managementv1alpha1.ReasonJoinDisabled, "spec.fleet.join is false"),
	}}}
	setStatus(t, c)
	b := newBrowser(t, serverDashboard(t))
	b.signIn(clusterViewer(t, ns, "viewer"), "")
	page := b.page("/hosted/" + ns + "/calm")
	for typ, class := range map[string]string{"Ready": "cond-good", "Synced": "cond-bad", "Updating": "cond-neutral", "Conflict": "cond-good", "Joined": "cond-neutral"} {
		re := regexp.MustCompile(`<tr data-condition="` + typ + `"><td>` + typ + `[^<]*(<span[^>]*>[^<]*</span>)?</td><td class="([^"]*)">`)
		m := re.FindStringSubmatch(page)
		if m == nil {
			t.Errorf("no %s condition on the page", typ)
			continue
		}
		if m[2] != class {
			t.Errorf("%s styled %q, want %q", typ, m[2], class)
		}
	}
}
