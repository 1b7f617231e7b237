package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestPauseGitRepoFromDashboard: a viewer who may patch GitRepos pauses and resumes a GitRepo's
// fetching from the GitRepos page with their own identity; a read-only viewer gets no button
// and a pause they post anyway is refused by the API server and changes nothing.
func TestPauseGitRepoFromDashboard(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	newFleet(t, ns)
	srv := serverDashboard(t)
	patch := rbacv1.PolicyRule{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"gitrepos"}, Verbs: []string{"patch"}}
	operator := newBrowser(t, srv)
	operator.signIn(namespaceViewer(t, ns, "git-operator", ns, patch), ns)
	reader := newBrowser(t, srv)
	reader.signIn(namespaceViewer(t, ns, "git-reader", ns), ns)
	apps := ns + "/apps"
	paused := func() bool {
		t.Helper()
		return must(t, &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"}}).Spec.Paused
	}
	pausePath := "/gitrepos/" + ns + "/apps/pause"

	page := reader.page("/gitrepos")
	mustContain(t, page, `data-gitrepo="`+apps+`"`)
	mustNotContain(t, page, `data-pause="`+apps+`"`)
	if status, body, _ := reader.post(pausePath, url.Values{"csrf": {csrf(t, page)}}, true); status != http.StatusForbidden || !strings.Contains(body, "the API server refused") {
		t.Errorf("pause by a read-only viewer: status %d (%s), want the API server's 403", status, body)
	}
	if paused() {
		t.Fatal("the refused pause paused the GitRepo")
	}

	page = operator.page("/gitrepos")
	mustContain(t, page, `data-pause="`+apps+`"`)
	if status, _, _ := operator.post(pausePath, url.Values{}, true); status != http.StatusForbidden || paused() {
		t.Fatalf("pause without the form token: status %d, paused %t", status, paused())
	}
	status, _, hdr := operator.post(pausePath, url.Values{"csrf": {csrf(t, page)}}, true)
	if status != http.StatusSeeOther || hdr.Get("Location") != "/gitrepos" || !paused() {
		t.Fatalf("pause: status %d, location %q, paused %t", status, hdr.Get("Location"), paused())
	}
	mustContain(t, operator.page("/gitrepos"), `data-paused="`+apps+`"`)
	status, _, _ = operator.post("/gitrepos/"+ns+"/apps/resume", url.Values{"csrf": {csrf(t, page)}}, true)
	if status != http.StatusSeeOther || paused() {
		t.Fatalf("resume: status %d, paused %t", status, paused())
	}
	mustNotContain(t, operator.page("/gitrepos"), `data-paused="`+apps+`"`)
}

// TestPausedGitRepoIsNoError: a paused GitRepo (Synced=False, reason Paused, as the GitRepo
// controller writes it) shows a neutral note, not an error box, naming the commit that stays
// deployed, or saying that nothing was fetched yet.
func TestPausedGitRepoIsNoError(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	newFleet(t, ns) // infra: paused, with a deployed commit
	fresh := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/org/fresh.git", Branch: "main", Paused: true}}
	createAll(t, fresh)
	fresh.Status.Conditions = []metav1.Condition{gen(cond(fleetv1alpha1.ConditionSynced, "False", fleetv1alpha1.ReasonPaused,
		"spec.paused is set: nothing is fetched; the Bundles of commit (none) stay deployed"), fresh.Generation)}
	setStatus(t, fresh)
	b := newBrowser(t, serverDashboard(t))
	b.signIn(clusterViewer(t, ns, "viewer"), "")
	sections := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<section class="gitrepo" data-gitrepo="([^"]+)".*?</section>`).FindAllStringSubmatch(b.page("/gitrepos?namespace="+ns), -1) {
		sections[m[1]] = m[0]
	}
	for name, want := range map[string]string{
		"fresh": "and nothing was fetched yet.",
		"infra": `the Bundles of commit <code title="fedcba9876543210fedcba9876543210fedcba98">fedcba987654</code> stay deployed.`,
	} {
		s := sections[ns+"/"+name]
		mustContain(t, s, "data-paused-note", want)
		mustNotContain(t, s, "notice bad", "(none)")
	}
	// A GitRepo that fails to sync still shows its error.
	mustContain(t, sections[ns+"/apps"], `class="notice bad msg" data-condition="Synced"`)
}
