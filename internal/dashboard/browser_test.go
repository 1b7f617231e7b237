package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/test/envtest"
)

// chromium finds headless Chromium, or skips the test (fails it under
// DROVER_BROWSER_TESTS=required, as .ci/run sets).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "headless Chromium not found: apt-get install chromium to run the dashboard's browser tests"
	if os.Getenv("DROVER_BROWSER_TESTS") == "required" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// screenshotDir is where the browser tests write their screenshots: $DROVER_SCREENSHOT_DIR,
// else _output/screenshots in the repository (ignored by git).
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DROVER_SCREENSHOT_DIR")
	if dir == "" {
		dir = filepath.Join(envtest.RepoRoot(), "_output", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tab is a browser tab in its own browser context (its own cookies), with its console.
type tab struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func newTab(t *testing.T, browser context.Context) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // open the tab, so its console is there to follow
		t.Fatal(err)
	}
	tb := &tab{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.msgs = append(tb.msgs, m)
			tb.mu.Unlock()
		}
	}()
	return tb
}

func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatal(err)
	}
}

func (tb *tab) eval(js string) string {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitFor polls a JavaScript condition in the page until it holds.
func (tb *tab) waitFor(js string) {
	tb.t.Helper()
	if _, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		tb.t.Fatalf("waiting for %s: %v", js, err)
	}
}

// problems are the console errors and exceptions since the last call.
func (tb *tab) problems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var out []string
	for _, m := range tb.msgs {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			out = append(out, fmt.Sprintf("%s (%s:%d)", m.String(), m.URL, m.Line))
		}
	}
	tb.msgs = nil
	return out
}

// open loads a page, waits for its live updates to be on and for ready, checks that the
// console stayed clean, writes a screenshot and returns the content region's HTML.
func (tb *tab) open(url, ready, shot string) string {
	tb.t.Helper()
	tb.problems()
	tb.do(chromedp.Navigate(url), chromedp.WaitVisible("#content .view"), chromedp.WaitVisible(ready))
	tb.waitFor(`document.querySelector(".view").dataset.watch === "" || document.body.dataset.live === "on"`)
	html, err := chromedp.Run(tb.ctx, chromedp.OuterHTML("#content"))
	if err != nil {
		tb.t.Fatal(err)
	}
	if shot != "" {
		tb.screenshot(shot)
	}
	if p := tb.problems(); len(p) > 0 {
		tb.t.Errorf("%s: console errors:\n  %s", url, strings.Join(p, "\n  "))
	}
	return html
}

func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatal(err)
	}
	path := filepath.Join(screenshotDir(tb.t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

// signIn uses the login form.
func (tb *tab) signIn(base, token, namespace string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(base+"/"), chromedp.WaitVisible("#token"), chromedp.SendKeys("#token", token))
	if namespace != "" {
		tb.do(chromedp.SendKeys("#namespace", namespace))
	}
	tb.do(chromedp.Click("#sign-in"), chromedp.WaitVisible("#card-hosted"))
}

// markedCluster is an EKS cluster whose status and Events record a managed field
// (tags[owner]), unmanaged ones (kubernetesVersion, nodeGroups), one adopted from the console
// (loggingTypes) and one in conflict (tags[env]), as the hosted reconciler writes them.
func markedCluster(t *testing.T, ns string) *managementv1alpha1.Cluster {
	t.Helper()
	config := managementv1alpha1.EKSClusterConfig{DisplayName: "shop", Region: "us-west-2", CredentialSecret: "aws",
		Tags: map[string]string{"owner": "terraform", "env": "qa"}, LoggingTypes: []string{"api", "audit"}, PrivateAccess: ptr.To(false),
		// Values as long as real ones, without a place to break: the page must fit them.
		ServiceRole: ptr.To("arn:aws:iam::123456789012:role/EksClusterServiceRoleForShop")}
	c := &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: managementv1alpha1.ClusterSpec{SyncPolicy: managementv1alpha1.SyncPolicyAdopt, EKSConfig: config.DeepCopy()}}
	createAll(t, c)
	upstream := config.DeepCopy()
	upstream.KubernetesVersion, upstream.PublicAccess = ptr.To("1.32"), ptr.To(true)
	upstream.Subnets = []string{"subnet-0a1b2c3d4e5f60718", "subnet-0b2c3d4e5f6071829", "subnet-0c3d4e5f607182930"}
	upstream.NodeGroups = []managementv1alpha1.EKSNodeGroup{{Name: "ng-1", DesiredSize: ptr.To[int32](3), MinSize: ptr.To[int32](1),
		MaxSize: ptr.To[int32](5), InstanceType: ptr.To("m5.large")}}
	now := metav1.Now()
	c.Status = managementv1alpha1.ClusterStatus{Phase: managementv1alpha1.PhaseActive, LastRefreshTime: &now, ObservedGeneration: c.Generation,
		EKSStatus: &managementv1alpha1.EKSStatus{UpstreamSpec: upstream, AppliedSpec: config.DeepCopy(), Status: "ACTIVE",
			ARN: "arn:aws:eks:us-west-2:123456789012:cluster/shop"},
		Conditions: []metav1.Condition{cond("Ready", "True", "Active", "The cluster is active."),
			cond("Synced", "True", "InSync", "Every managed field matches the provider."),
			cond("Conflict", "True", "ChangedOnBothSides", hosted.ConflictMessagePrefix+`eksConfig.tags[env]: drover "qa", provider "staging"`)}}
	setStatus(t, c)
	ref := corev1.ObjectReference{APIVersion: "management.drover.io/v1alpha1", Kind: "Cluster", Namespace: ns, Name: "shop", UID: c.UID}
	adopted := warningEvent(ns, "shop-adopted", ref, hosted.EventAdopted, hosted.AdoptedNote("eksConfig.loggingTypes", `["api","audit"]`))
	adopted.Type = corev1.EventTypeNormal
	createAll(t, adopted, warningEvent(ns, "shop-conflict", ref, hosted.EventConflict, hosted.ConflictNote("eksConfig.tags[env]", `"qa"`, `"staging"`)))
	return c
}

// TestBrowser drives the dashboard in headless Chromium: every page loads without a console
// error and shows the test's objects, the hosted clusters page follows a Cluster change
// without reloading, the cluster page marks its fields, the operator refreshes, and the
// restricted viewer sees only its namespace and is refused a refresh (403). Screenshots of
// each page are written for people to look at.
func TestBrowser(t *testing.T) {
	t.Parallel()
	exe := chromium(t)
	ns, other := mgmt.Namespace(t), mgmt.Namespace(t)
	newFleet(t, ns)
	markedCluster(t, ns)
	createAll(t, eksCluster(other, "secret-project"))
	operatorToken := clusterViewer(t, ns, "operator", patchRule)
	restrictedToken := namespaceViewer(t, ns, "restricted", ns)
	srv := serverDashboard(t)

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1360, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}

	op := newTab(t, browser)
	op.do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#token"))
	op.screenshot("login")
	op.signIn(srv.URL, operatorToken, "")
	q := "?namespace=" + ns

	t.Run("pages", func(t *testing.T) {
		op.t = t
		page := op.open(srv.URL+"/"+q, "#card-hosted", "overview")
		mustContain(t, page, `data-count="hosted">4<`, `data-count="fleet">3<`, "1 connected", "1 disconnected", "1 running")
		page = op.open(srv.URL+"/hosted"+q, "#hosted", "hosted-clusters")
		mustContain(t, page, ns+"/web", ns+"/api", ns+"/data", ns+"/shop", "westeurope")
		page = op.open(srv.URL+"/fleet"+q, "#fleet", "fleet")
		mustContain(t, page, ns+"/edge-1", "disconnected", "v9.8.7", "env=prod")
		page = op.open(srv.URL+"/bundles"+q, "#matrix", "bundles")
		mustContain(t, page, ns+"/app", ns+"/monitoring", "apply failed", "drift")
		page = op.open(srv.URL+"/migrations"+q, ".migration", "migrations")
		mustContain(t, page, ns+"/move-prod", "waiting for node cp-1 to be unschedulable")
	})

	t.Run("cluster page marks", func(t *testing.T) {
		op.t = t
		op.open(srv.URL+"/hosted/"+ns+"/shop", "#fields", "hosted-cluster")
		if got := op.eval(`(() => { const e = document.documentElement; return e.scrollWidth > e.clientWidth ? e.scrollWidth + " > " + e.clientWidth : "" })()`); got != "" {
			t.Errorf("the hosted cluster page scrolls sideways: %s px", got)
		}
		for field, marks := range map[string]string{
			"eksConfig.tags[owner]":              "managed",
			"eksConfig.tags[env]":                "managed conflict",
			"eksConfig.loggingTypes":             "managed adopted",
			"eksConfig.kubernetesVersion":        "unmanaged",
			"eksConfig.nodeGroups[ng-1].maxSize": "unmanaged",
		} {
			if got := op.eval(fmt.Sprintf(`document.querySelector('tr[data-field=%q]').dataset.marks`, field)); got != marks {
				t.Errorf("%s marked %q, want %q", field, got, marks)
			}
		}
		if got := op.eval(`document.querySelector('tr[data-field="eksConfig.tags[env]"] .conflict-values').textContent`); !strings.Contains(got, `drover "qa"`) || !strings.Contains(got, `provider "staging"`) {
			t.Errorf("conflict values: %q", got)
		}
	})

	t.Run("live update without reload", func(t *testing.T) {
		op.t = t
		op.open(srv.URL+"/hosted"+q, "#hosted", "")
		op.eval(`window.droverTestMarker = "still here"; "ok"`)
		web := must(t, &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
		web.Status.Phase = managementv1alpha1.PhaseUpdating
		setStatus(t, web)
		op.waitFor(fmt.Sprintf(`document.querySelector('tr[data-cluster=%q] [data-phase]').dataset.phase === "updating"`, ns+"/web"))
		if got := op.eval(`window.droverTestMarker || "reloaded"`); got != "still here" {
			t.Errorf("the page reloaded instead of updating in place (%s)", got)
		}
		if p := op.problems(); len(p) > 0 {
			t.Errorf("console errors during the update:\n  %s", strings.Join(p, "\n  "))
		}
	})

	t.Run("filtered fleet stays filtered on a live update", func(t *testing.T) {
		op.t = t
		// edge-2 (disconnected) and edge-3 (never checked in) are problems; edge-1 is connected.
		page := op.open(srv.URL+"/fleet"+q+"&state=problem", "#fleet", "fleet-filtered")
		mustContain(t, page, `data-cluster="`+ns+`/edge-2"`, `data-cluster="`+ns+`/edge-3"`, `data-shown="2" data-total="3"`)
		mustNotContain(t, page, `data-cluster="`+ns+`/edge-1"`)
		before := op.eval(`document.body.dataset.updates || "0"`)
		// What is being typed in the filter form survives the update.
		op.do(chromedp.SendKeys("#filter-q", "edge"))
		edge3 := must(t, &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-3"}})
		edge3.Labels = map[string]string{"shift": "night"}
		if err := mgmt.Client.Update(t.Context(), edge3); err != nil {
			t.Fatal(err)
		}
		row := fmt.Sprintf(`document.querySelector('tr[data-cluster=%q]')`, ns+"/edge-3")
		op.waitFor(row + ` !== null && ` + row + `.textContent.includes("shift=night")`)
		if got := op.eval(`document.body.dataset.updates || "0"`); got == before {
			t.Errorf("the page was not updated in place (data-updates %s)", got)
		}
		if got := op.eval(`Array.from(document.querySelectorAll("#fleet tr[data-cluster]")).map(r => r.dataset.cluster + ":" + r.dataset.state).join(" ")`); got != ns+"/edge-2:disconnected "+ns+"/edge-3:waiting" {
			t.Errorf("after the update the page shows %q, want the filtered rows only", got)
		}
		if got := op.eval(`document.getElementById("filtered").textContent.replace(/\s+/g, " ")`); !strings.Contains(got, "2 of 3 fleet clusters shown") {
			t.Errorf("after the update: %q", got)
		}
		if got := op.eval(`document.getElementById("filter-q").value + "|" + document.getElementById("filter-state").value`); got != "edge|problem" {
			t.Errorf("the filter form after the update: %q, want edge|problem", got)
		}
		if p := op.problems(); len(p) > 0 {
			t.Errorf("console errors during the update:\n  %s", strings.Join(p, "\n  "))
		}
	})

	t.Run("operator refreshes now", func(t *testing.T) {
		op.t = t
		op.open(srv.URL+"/hosted/"+ns+"/shop", "#refresh-now", "")
		op.do(chromedp.Click("#refresh-now"), chromedp.WaitVisible("#refresh-requested"))
		if got := must(t, &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}).Annotations[hosted.RefreshAnnotation]; got == "" {
			t.Error("refresh now did not set the refresh annotation")
		}
	})

	t.Run("restricted viewer", func(t *testing.T) {
		rs := newTab(t, browser)
		rs.signIn(srv.URL, restrictedToken, "")
		page := rs.open(srv.URL+"/hosted", "#content .view", "restricted-hosted")
		mustContain(t, page, "You may not list hosted clusters in all namespaces")
		mustNotContain(t, page, "secret-project")
		page = rs.open(srv.URL+"/hosted"+q, "#hosted", "")
		mustContain(t, page, ns+"/web")
		mustNotContain(t, page, "secret-project")
		// The BundleDeployments live in the clusters' namespaces, which this viewer may not read.
		page = rs.open(srv.URL+"/bundles"+q, "#matrix", "restricted-bundles")
		mustContain(t, page, `id="unreadable"`, `data-state="unknown"`)
		page = rs.open(srv.URL+"/hosted/"+ns+"/web", "#refresh-not-allowed", "restricted-cluster")
		mustNotContain(t, page, `id="refresh-now"`)
		// Posting the refresh anyway, from the page with its form token: the API server refuses
		// the viewer's patch, the dashboard answers 403, nothing changes.
		before := must(t, &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}).ResourceVersion
		status, err := chromedp.Run(rs.ctx, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%q, {method: "POST", body: new URLSearchParams({csrf: document.querySelector('meta[name="drover-csrf"]').content})}).then(r => r.status)`,
			"/hosted/"+ns+"/web/refresh"), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if status != 403 {
			t.Errorf("refresh posted by the restricted viewer: status %d, want 403", status)
		}
		after := must(t, &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
		if after.ResourceVersion != before || after.Annotations[hosted.RefreshAnnotation] != "" {
			t.Errorf("the refused refresh changed the cluster")
		}
	})
	t.Logf("screenshots in %s", screenshotDir(t))
}
