package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// shownRE finds what a list page shows, by page: table rows, Bundle columns, GitRepo sections.
var shownRE = map[string]*regexp.Regexp{
	"fleet":    regexp.MustCompile(`<tr data-cluster="([^"]+)"`),
	"hosted":   regexp.MustCompile(`<tr data-cluster="([^"]+)"`),
	"bundles":  regexp.MustCompile(`<th title="[^"]*" data-bundle="([^"]+)"`),
	"gitrepos": regexp.MustCompile(`<section class="gitrepo" data-gitrepo="([^"]+)"`),
}

// shown are the objects a list page shows, sorted, without the namespace prefix ns/.
func shown(page, path, ns string) []string {
	kind := strings.TrimPrefix(strings.SplitN(path, "?", 2)[0], "/")
	var out []string
	for _, m := range shownRE[kind].FindAllStringSubmatch(page, -1) {
		out = append(out, strings.TrimPrefix(m[1], ns+"/"))
	}
	slices.Sort(out)
	return out
}

var filteredRE = regexp.MustCompile(`id="filtered" data-shown="(\d+)" data-total="(\d+)"`)

// filterFleet adds, to newFleet's, fleet clusters whose agent cannot reach their API server
// (cut-off, env=prod) and not ready for another reason (broken, no labels), and a ready Bundle
// (ok, tier=base).
func filterFleet(t *testing.T, ns string) {
	t.Helper()
	newFleet(t, ns)
	seen := metav1.NewTime(time.Now().Add(-10 * time.Second))
	cutOff := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cut-off", Labels: map[string]string{"env": "prod", "Zone": "North-1"}}}
	broken := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"}}
	ok := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok", Labels: map[string]string{"tier": "base"}}}
	createAll(t, cutOff, broken, ok)
	cutOff.Status = fleetv1alpha1.ClusterStatus{Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen, DownstreamError: "connection refused"},
		Conditions: []metav1.Condition{cond("Ready", "False", fleetv1alpha1.ReasonDownstreamUnreachable, "The agent cannot reach its cluster's API server")}}
	broken.Status = fleetv1alpha1.ClusterStatus{Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen},
		Conditions: []metav1.Condition{cond("Ready", "False", fleetv1alpha1.ReasonDeployFailed, "The agent's Deployment cannot be applied")}}
	ok.Status = fleetv1alpha1.BundleStatus{Conditions: []metav1.Condition{cond("Ready", "True", "Ready", "every cluster ready")}}
	setStatus(t, cutOff)
	setStatus(t, broken)
	setStatus(t, ok)
}

// TestFilters: the list pages' filters (q, selector, state) select exactly the rows expected;
// each count of the overview links to a filtered list showing exactly the rows it counts; an
// invalid selector or state is an inline error with no rows; filter values are escaped; a
// filter never shows what the viewer may not read; an action returns to the filtered page.
func TestFilters(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	filterFleet(t, ns)
	srv := serverDashboard(t)
	bundlePatch := rbacv1.PolicyRule{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"bundles"}, Verbs: []string{"patch"}}
	b := newBrowser(t, srv)
	b.signIn(clusterViewer(t, ns, "filterer", bundlePatch), "")
	in := "namespace=" + ns + "&"

	t.Run("selects", func(t *testing.T) {
		for _, tc := range []struct {
			name, path string
			want       []string
			total      int
		}{
			{"fleet connected", "/fleet?" + in + "state=connected", []string{"edge-1"}, 5},
			{"fleet disconnected", "/fleet?" + in + "state=disconnected", []string{"edge-2"}, 5},
			{"fleet unreachable", "/fleet?" + in + "state=unreachable", []string{"cut-off"}, 5},
			{"fleet not ready", "/fleet?" + in + "state=notready", []string{"broken"}, 5},
			{"fleet waiting", "/fleet?" + in + "state=waiting", []string{"edge-3"}, 5},
			{"fleet problem", "/fleet?" + in + "state=problem", []string{"broken", "cut-off", "edge-2", "edge-3"}, 5},
			{"fleet text any case", "/fleet?" + in + "q=EDGE-", []string{"edge-1", "edge-2", "edge-3"}, 5},
			{"fleet text namespace/name", "/fleet?" + in + "q=" + url.QueryEscape(ns+"/edge-2"), []string{"edge-2"}, 5},
			{"fleet text label key=value", "/fleet?" + in + "q=zone%3Dnorth", []string{"cut-off"}, 5},
			{"fleet text label value", "/fleet?" + in + "q=staging", []string{"edge-2"}, 5},
			{"fleet text no match", "/fleet?" + in + "q=nothing-like-it", nil, 5},
			{"fleet selector", "/fleet?" + in + "selector=" + url.QueryEscape("env=prod"), []string{"cut-off", "edge-1"}, 5},
			{"fleet selector set", "/fleet?" + in + "selector=" + url.QueryEscape("env in (prod,staging)"), []string{"cut-off", "edge-1", "edge-2"}, 5},
			{"fleet selector without label", "/fleet?" + in + "selector=" + url.QueryEscape("!env"), []string{"broken", "edge-3"}, 5},
			{"fleet selector and state", "/fleet?" + in + "selector=env&state=problem", []string{"cut-off", "edge-2"}, 5},
			{"fleet all three", "/fleet?" + in + "selector=env&state=problem&q=edge", []string{"edge-2"}, 5},
			{"hosted active", "/hosted?" + in + "state=active", []string{"web"}, 3},
			{"hosted failed", "/hosted?" + in + "state=failed", []string{"data"}, 3},
			{"hosted conflict", "/hosted?" + in + "state=conflict", []string{"data"}, 3},
			{"hosted not ready", "/hosted?" + in + "state=notready", []string{"data"}, 3},
			{"hosted cannot join", "/hosted?" + in + "state=notjoined", []string{"api"}, 3},
			{"hosted problem", "/hosted?" + in + "state=problem", []string{"api", "data"}, 3},
			{"hosted text", "/hosted?" + in + "q=Web", []string{"web"}, 3},
			{"bundles ready", "/bundles?" + in + "state=ready", []string{"ok"}, 3},
			{"bundles not ready", "/bundles?" + in + "state=notready", []string{"app", "monitoring"}, 3},
			{"bundles problem", "/bundles?" + in + "state=problem", []string{"app", "monitoring"}, 3},
			{"bundles text", "/bundles?" + in + "q=MONI", []string{"monitoring"}, 3},
			{"bundles selector", "/bundles?" + in + "selector=tier%3Dbase", []string{"ok"}, 3},
			{"gitrepos error", "/gitrepos?" + in + "state=error", []string{"apps"}, 2},
			{"gitrepos paused", "/gitrepos?" + in + "state=paused", []string{"infra"}, 2},
			{"gitrepos problem", "/gitrepos?" + in + "state=problem", []string{"apps"}, 2},
			{"gitrepos text", "/gitrepos?" + in + "q=INFRA", []string{"infra"}, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				page := b.page(tc.path)
				if got := shown(page, tc.path, ns); !slices.Equal(got, tc.want) {
					t.Errorf("shows %q, want %q", got, tc.want)
				}
				m := filteredRE.FindStringSubmatch(page)
				if m == nil || m[1] != strconv.Itoa(len(tc.want)) || m[2] != strconv.Itoa(tc.total) {
					t.Errorf("shown of total: %q, want %d of %d", m, len(tc.want), tc.total)
				}
				if len(tc.want) == 0 {
					mustContain(t, page, `id="no-match"`)
				}
				// The form keeps the values, the page links to the unfiltered list.
				mustContain(t, page, `<form class="filter" id="filter" method="get"`, `id="filter-reset"`,
					`href="`+strings.SplitN(tc.path, "?", 2)[0]+`?namespace=`+ns+`"`)
				q, _ := url.ParseQuery(strings.SplitN(tc.path, "?", 2)[1])
				if v := q.Get("q"); v != "" {
					mustContain(t, page, `id="filter-q" value="`+html.EscapeString(v)+`"`)
				}
				if v := q.Get("state"); v != "" {
					mustContain(t, page, `<option value="`+v+`" selected>`)
				}
				if t.Failed() {
					t.Logf("page:\n%s", page)
				}
			})
		}
	})

	t.Run("unfiltered", func(t *testing.T) {
		page := b.page("/fleet?namespace=" + ns)
		if got := shown(page, "/fleet", ns); len(got) != 5 {
			t.Errorf("shows %q, want the 5 fleet clusters", got)
		}
		mustContain(t, page, `id="filter"`)
		mustNotContain(t, page, `id="filtered"`, `id="filter-error"`)
	})

	t.Run("overview counts lead to their rows", func(t *testing.T) {
		overview := b.page("/?namespace=" + ns)
		counts := regexp.MustCompile(`<a class="badge [a-z]+" href="([^"]+)" data-count="([a-z-]+)">(\d+) `).FindAllStringSubmatch(overview, -1)
		if len(counts) < 12 {
			t.Fatalf("%d counts link to filtered lists, want every one of hosted, fleet, Bundles and GitRepos:\n%s", len(counts), overview)
		}
		for _, m := range counts {
			link, name, n := html.UnescapeString(m[1]), m[2], m[3]
			t.Run(name, func(t *testing.T) {
				if !strings.Contains(link, "namespace="+ns) || !strings.Contains(link, "state=") {
					t.Errorf("%s links to %s: not a filtered list in the namespace", name, link)
				}
				page := b.page(link)
				if got := shown(page, link, ns); strconv.Itoa(len(got)) != n {
					t.Errorf("%s counts %s, its link %s shows %d: %q", name, n, link, len(got), got)
				}
				if fm := filteredRE.FindStringSubmatch(page); fm == nil || fm[1] != n {
					t.Errorf("%s counts %s, its link %s says %q", name, n, link, fm)
				}
			})
		}
		// The phase table's columns: each links to its phase, showing the column's total.
		for _, phase := range []string{"active", "updating", "failed", "pending"} {
			t.Run("phase "+phase, func(t *testing.T) {
				link := regexp.MustCompile(`<a href="([^"]+)" data-phase-link="` + phase + `">`).FindStringSubmatch(overview)
				if link == nil {
					t.Fatalf("no link on the %s column", phase)
				}
				want := map[string]int{"active": 1, "updating": 1, "failed": 1}[phase]
				if got := shown(b.page(html.UnescapeString(link[1])), "/hosted", ns); len(got) != want {
					t.Errorf("phase %s: %q, want %d", phase, got, want)
				}
			})
		}
	})

	t.Run("invalid", func(t *testing.T) {
		parserSays := func(sel string) string {
			_, err := labels.Parse(sel)
			if err == nil {
				t.Fatalf("%q parses", sel)
			}
			return html.EscapeString(err.Error())
		}
		for _, tc := range []struct{ name, path, param, msg string }{
			{"selector", "/fleet?" + in + "selector=" + url.QueryEscape("env in (prod"), "selector", parserSays("env in (prod")},
			{"selector on hosted", "/hosted?" + in + "selector=" + url.QueryEscape("a=b=c"), "selector", parserSays("a=b=c")},
			{"selector on bundles", "/bundles?" + in + "selector=" + url.QueryEscape("=base"), "selector", parserSays("=base")},
			{"state", "/gitrepos?" + in + "state=sideways", "state", "unknown state &#34;sideways&#34;"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				status, page := b.get(tc.path)
				if status != http.StatusBadRequest {
					t.Errorf("status %d, want 400", status)
				}
				mustContain(t, page, `id="filter-error" data-param="`+tc.param+`"`, "Invalid filter: <code>"+tc.param+"</code>", tc.msg)
				if got := shown(page, tc.path, ns); len(got) != 0 {
					t.Errorf("an invalid filter shows rows: %q", got)
				}
				mustNotContain(t, page, `id="filtered"`, "No fleet clusters here", "No GitRepos here")
				if t.Failed() {
					t.Logf("page:\n%s", page)
				}
			})
		}
	})

	t.Run("escaped", func(t *testing.T) {
		for _, tc := range []struct{ name, param string }{{"q", "q"}, {"selector", "selector"}, {"state", "state"}} {
			t.Run(tc.name, func(t *testing.T) {
				evil := `"><script>alert(1)</script><img src=x onerror=alert(2)>`
				_, page := b.get("/fleet?" + in + tc.param + "=" + url.QueryEscape(evil))
				mustNotContain(t, page, "<script>alert", "<img src=x")
				mustContain(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
			})
		}
	})

	t.Run("never widens what the viewer may read", func(t *testing.T) {
		other := mgmt.Namespace(t)
		createAll(t, eksCluster(other, "secret-project"), &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "secret-edge",
			Labels: map[string]string{"env": "prod"}}})
		r := newBrowser(t, srv)
		r.signIn(namespaceViewer(t, ns, "filter-restricted", ns), ns)
		for _, path := range []string{"/hosted?q=secret", "/hosted?namespace=" + other + "&q=secret", "/fleet?selector=env%3Dprod",
			"/fleet?state=waiting", "/fleet?namespace=" + other + "&state=problem"} {
			page := r.page(path)
			mustNotContain(t, page, "secret-project", "secret-edge")
		}
		page := r.page("/fleet?selector=env%3Dprod")
		if got := shown(page, "/fleet", ns); !slices.Equal(got, []string{"cut-off", "edge-1"}) {
			t.Errorf("the restricted viewer's filtered fleet: %q", got)
		}
	})

	t.Run("an action returns to the filtered page", func(t *testing.T) {
		path := "/bundles?" + in + "state=notready"
		page := b.page(path)
		action := html.UnescapeString(regexp.MustCompile(`<form method="post" action="(/bundles/` + ns + `/app/pause[^"]*)"`).FindStringSubmatch(page)[1])
		status, _, hdr := b.post(action, url.Values{"csrf": {csrf(t, page)}}, true)
		if status != http.StatusSeeOther {
			t.Fatalf("pause: status %d", status)
		}
		loc, _ := url.Parse(hdr.Get("Location"))
		if loc.Path != "/bundles" || loc.Query().Get("state") != "notready" || loc.Query().Get("namespace") != ns {
			t.Errorf("pause returned to %s, want %s", hdr.Get("Location"), path)
		}
	})
}
