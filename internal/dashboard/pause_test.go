package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestPauseRolloutFromDashboard: a viewer who may patch Bundles pauses and resumes a Bundle's
// rollout from the Bundles page, with their own identity; the page shows the pause. A read-only
// viewer gets no button, and a pause they post anyway is refused by the API server (403) and
// changes nothing; a post without the form token is refused too.
func TestPauseRolloutFromDashboard(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	f := newFleet(t, ns)
	srv := serverDashboard(t)
	bundlePatch := rbacv1.PolicyRule{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"bundles"}, Verbs: []string{"patch"}}
	operator := newBrowser(t, srv)
	operator.signIn(namespaceViewer(t, ns, "rollout-operator", ns, bundlePatch), ns)
	reader := newBrowser(t, srv)
	reader.signIn(namespaceViewer(t, ns, "rollout-reader", ns), ns)
	app := ns + "/app"
	paused := func() bool {
		t.Helper()
		return must(t, &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}).Spec.Rollout.Paused
	}
	pausePath := "/bundles/" + ns + "/" + f.app.Name + "/pause"

	page := reader.page("/bundles")
	mustContain(t, page, `data-bundle="`+app+`"`)
	mustNotContain(t, page, `data-pause="`+app+`"`)
	if status, body, _ := reader.post(pausePath, url.Values{"csrf": {csrf(t, page)}}, true); status != http.StatusForbidden || !strings.Contains(body, "the API server refused") {
		t.Errorf("pause by a read-only viewer: status %d (%s), want the API server's 403", status, body)
	}
	if paused() {
		t.Fatal("the refused pause paused the rollout")
	}

	page = operator.page("/bundles")
	mustContain(t, page, `data-pause="`+app+`"`, "pause rollout")
	if status, _, _ := operator.post(pausePath, url.Values{}, true); status != http.StatusForbidden || paused() {
		t.Fatalf("pause without the form token: status %d, paused %t", status, paused())
	}
	status, _, hdr := operator.post(pausePath, url.Values{"csrf": {csrf(t, page)}}, true)
	if status != http.StatusSeeOther || hdr.Get("Location") != "/bundles" || !paused() {
		t.Fatalf("pause: status %d, location %q, paused %t", status, hdr.Get("Location"), paused())
	}
	page = operator.page("/bundles")
	mustContain(t, page, `data-paused="`+app+`"`, "resume rollout")
	status, _, _ = operator.post("/bundles/"+ns+"/"+f.app.Name+"/resume", url.Values{"csrf": {csrf(t, page)}}, true)
	if status != http.StatusSeeOther || paused() {
		t.Fatalf("resume: status %d, paused %t", status, paused())
	}
	mustNotContain(t, operator.page("/bundles"), `data-paused="`+app+`"`)
	if status, _, _ := operator.post("/bundles/"+ns+"/"+f.app.Name+"/delete", url.Values{"csrf": {csrf(t, page)}}, true); status != http.StatusNotFound {
		t.Errorf("an unknown action: status %d, want 404", status)
	}
}

// TestBundlesWithoutFleetClusters: a namespace with Bundles but no fleet Clusters (yet) shows
// its Bundles, their summaries and pause buttons, and says there is no cluster.
func TestBundlesWithoutFleetClusters(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	web := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{}}}}}
	createAll(t, web)
	web.Status = fleetv1alpha1.BundleStatus{DeploymentID: "web-1", Conditions: []metav1.Condition{cond("Ready", "True", "Ready", "0/0 clusters ready")}}
	setStatus(t, web)
	bundlePatch := rbacv1.PolicyRule{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"bundles"}, Verbs: []string{"patch"}}
	b := newBrowser(t, serverDashboard(t))
	b.signIn(namespaceViewer(t, ns, "team-a", ns, bundlePatch), ns)
	page := b.page("/bundles?namespace=" + ns)
	mustContain(t, page, `data-bundle="`+ns+`/web"`, "0/0 ready", `data-pause="`+ns+`/web"`, `id="no-clusters"`)
	mustNotContain(t, page, "No Bundles here")
}
