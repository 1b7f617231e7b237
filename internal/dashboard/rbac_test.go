package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/dashboard"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/test/envtest"
)

func eksCluster(ns, name string) *managementv1alpha1.Cluster {
	c := &managementv1alpha1.Cluster{Spec: managementv1alpha1.ClusterSpec{EKSConfig: &managementv1alpha1.EKSClusterConfig{
		DisplayName: name, Region: "eu-north-1", CredentialSecret: "aws", KubernetesVersion: ptr.To("1.33")}}}
	c.Namespace, c.Name = ns, name
	return c
}

// TestTwoViewers: what each viewer sees and may do is what RBAC gives their own token. The
// restricted viewer (read-only in namespace a) never sees namespace b's clusters, whichever way
// they ask, gets notices rather than error pages, has no "refresh now" button, and a refresh
// they post anyway is refused with 403 and changes nothing. The other viewer (read everywhere,
// patch clusters) refreshes.
func TestTwoViewers(t *testing.T) {
	t.Parallel()
	nsA, nsB := mgmt.Namespace(t), mgmt.Namespace(t)
	createAll(t, eksCluster(nsA, "alpha"), eksCluster(nsB, "bravo"))
	srv := serverDashboard(t)

	restricted := newBrowser(t, srv)
	restricted.signIn(namespaceViewer(t, nsA, "restricted", nsA), "")
	operator := newBrowser(t, srv)
	operator.signIn(clusterViewer(t, nsB, "operator", patchRule), "")

	t.Run("restricted viewer sees only namespace a", func(t *testing.T) {
		// Cluster-wide lists are forbidden and the viewer named no namespace: a notice, no
		// error page, and nothing of b.
		page := restricted.page("/hosted")
		mustContain(t, page, "You may not list hosted clusters in all namespaces")
		mustNotContain(t, page, "bravo", nsB+"/")
		page = restricted.page("/hosted?namespace=" + nsA)
		mustContain(t, page, `data-cluster="`+nsA+`/alpha"`)
		mustNotContain(t, page, "bravo")
		page = restricted.page("/hosted?namespace=" + nsB)
		mustContain(t, page, "You may not list hosted clusters in namespace "+nsB)
		mustNotContain(t, page, "bravo")
		for _, path := range []string{"/", "/fleet", "/bundles", "/migrations"} {
			page := restricted.page(path)
			mustNotContain(t, page, "bravo", nsB)
		}
		if status, body := restricted.get("/hosted/" + nsB + "/bravo"); status != http.StatusNotFound || strings.Contains(body, "eu-north-1") {
			t.Errorf("restricted viewer's page of b's cluster: status %d", status)
		}
	})

	t.Run("the namespace given at sign-in is where a restricted viewer looks", func(t *testing.T) {
		b := newBrowser(t, srv)
		b.signIn(namespaceViewer(t, nsA, "restricted2", nsA), nsA)
		page := b.page("/hosted")
		mustContain(t, page, `data-cluster="`+nsA+`/alpha"`, "showing those in "+nsA)
		mustNotContain(t, page, "bravo")
	})

	t.Run("operator sees both namespaces", func(t *testing.T) {
		page := operator.page("/hosted")
		mustContain(t, page, `data-cluster="`+nsA+`/alpha"`, `data-cluster="`+nsB+`/bravo"`)
		mustNotContain(t, page, "You may not list")
	})

	t.Run("restricted viewer cannot refresh", func(t *testing.T) {
		page := restricted.page("/hosted/" + nsA + "/alpha")
		mustContain(t, page, `id="refresh-not-allowed"`)
		mustNotContain(t, page, `id="refresh-now"`)
		before := must(t, eksCluster(nsA, "alpha"))
		status, body, _ := restricted.post("/hosted/"+nsA+"/alpha/refresh", url.Values{"csrf": {csrf(t, page)}}, true)
		if status != http.StatusForbidden {
			t.Fatalf("refresh by the restricted viewer: status %d (%s), want 403", status, body)
		}
		if !strings.Contains(body, "the API server refused") {
			t.Fatalf("the 403 is not the API server's: %s", body)
		}
		after := must(t, eksCluster(nsA, "alpha"))
		if after.ResourceVersion != before.ResourceVersion || after.Annotations[hosted.RefreshAnnotation] != "" {
			t.Fatalf("the refused refresh changed the cluster: annotations %v", after.Annotations)
		}
	})

	t.Run("operator refreshes", func(t *testing.T) {
		page := operator.page("/hosted/" + nsA + "/alpha")
		mustContain(t, page, `id="refresh-now"`)
		token := csrf(t, page)
		// Without the form token, or from another site: refused, nothing changes.
		for _, bad := range []struct {
			name       string
			form       url.Values
			sameOrigin bool
		}{
			{"no form token", url.Values{}, true},
			{"wrong form token", url.Values{"csrf": {"x" + token}}, true},
			{"cross-site", url.Values{"csrf": {token}}, false},
		} {
			if status, _, _ := operator.post("/hosted/"+nsA+"/alpha/refresh", bad.form, bad.sameOrigin); status != http.StatusForbidden {
				t.Errorf("%s: status %d, want 403", bad.name, status)
			}
		}
		if got := must(t, eksCluster(nsA, "alpha")).Annotations[hosted.RefreshAnnotation]; got != "" {
			t.Fatalf("a refused refresh set the annotation to %q", got)
		}
		status, _, hdr := operator.post("/hosted/"+nsA+"/alpha/refresh", url.Values{"csrf": {token}}, true)
		if status != http.StatusSeeOther || !strings.Contains(hdr.Get("Location"), "refreshed=1") {
			t.Fatalf("refresh: status %d, location %q", status, hdr.Get("Location"))
		}
		if got := must(t, eksCluster(nsA, "alpha")).Annotations[hosted.RefreshAnnotation]; got == "" {
			t.Fatal("refresh now did not set the refresh annotation")
		}
		mustContain(t, operator.page("/hosted/"+nsA+"/alpha?refreshed=1"), `id="refresh-requested"`)
	})
}

// TestRevokedRights: the dashboard keeps a viewer's lists current with the viewer's own watches;
// once their rights are taken away, the next lists (at most twice ListMaxAge later) are refused
// and the page stops showing the objects.
func TestRevokedRights(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	createAll(t, eksCluster(ns, "visible"))
	h, err := dashboard.New(dashboard.Options{APIServer: mgmt.Config, ListMaxAge: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := newBrowser(t, srv)
	b.signIn(clusterViewer(t, ns, "leaver"), "")
	mustContain(t, b.page("/hosted?namespace="+ns), `data-cluster="`+ns+`/visible"`)
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-leaver"}}
	if err := mgmt.Client.Delete(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		page := b.page("/hosted?namespace=" + ns)
		if strings.Contains(page, `data-cluster="`+ns+`/visible"`) {
			return errors.New("the cluster still shows after the viewer's rights were taken away")
		}
		if !strings.Contains(page, "You may not list hosted clusters in namespace "+ns) {
			return errors.New("no notice that the list is refused")
		}
		return nil
	})
}

// droverViewInNamespace returns the token of a ServiceAccount bound, in namespace ns only, to
// drover's shipped drover-view rules (config/rbac/user_roles.yaml, as `view` aggregates them)
// and to reading Events there: a team member who may read their namespace and no other.
func droverViewInNamespace(t testing.TB, ns, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "config", "rbac", "user_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	view := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---")[0]), view); err != nil || view.Name != "drover-view" {
		t.Fatalf("drover-view in user_roles.yaml: %v (read %q)", err, view.Name)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Rules: append(view.Rules,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}})}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	createAll(t, role, binding)
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), role) })
	return token(t, ns, name)
}

// TestBundlesWithoutBundleDeployments: a viewer bound to drover-view in the fleet's namespace
// reads its Bundles and Clusters but not the BundleDeployments in the clusters' own
// namespaces. The Bundles and fleet pages then show what each Bundle's summary says (the
// clusters it lists as not ready, with their state) and "unknown" for the others, never "not
// targeted", and say what right per-cluster detail needs.
func TestBundlesWithoutBundleDeployments(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	f := newFleet(t, ns)
	// The summaries as the Bundle controller writes them: every cluster not ready, by name.
	f.app.Status.Summary.NonReadyClusters = []fleetv1alpha1.NonReadyCluster{{Name: "edge-2", State: bundle.StatePending}}
	f.monitoring.Status.Summary.NonReadyClusters = []fleetv1alpha1.NonReadyCluster{
		{Name: "edge-1", State: bundle.StateModified, Message: "Deployment monitoring/prometheus Modified: spec.replicas"},
		{Name: "edge-2", State: bundle.StateErrApplied, Message: `namespaces "monitoring" is forbidden`}}
	setStatus(t, f.app)
	setStatus(t, f.monitoring)
	b := newBrowser(t, serverDashboard(t))
	b.signIn(droverViewInNamespace(t, ns, "team-member"), ns)
	page := b.page("/bundles?namespace=" + ns)
	rows := rowsOf(page)
	for _, c := range []struct{ cluster, bundle, state string }{
		{"edge-1", "app", "unknown"}, {"edge-1", "monitoring", "modified"}, {"edge-2", "app", "pending"}, {"edge-2", "monitoring", "errapplied"},
		// edge-3 has no namespace yet, so no BundleDeployment anywhere: not targeted.
		{"edge-3", "app", "none"},
	} {
		if want := `data-bundle="` + c.bundle + `" data-state="` + c.state + `"`; !strings.Contains(rows[ns+"/"+c.cluster], want) {
			t.Errorf("%s's %s cell is not %s", c.cluster, c.bundle, c.state)
		}
	}
	for _, c := range []string{"edge-1", "edge-2"} {
		if strings.Contains(rows[ns+"/"+c], `data-state="none"`) {
			t.Errorf(`a cell of %s, whose BundleDeployments are not readable, says "not targeted"`, c)
		}
	}
	mustContain(t, page, `id="unreadable" data-unreadable="2"`, "bundledeployments.fleet.drover.io", "unknown: not readable with your rights",
		"ready or not targeted", "Deployment monitoring/prometheus Modified: spec.replicas")
	mustNotContain(t, page, "choose a namespace you may read above", "You may not list BundleDeployments")
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}

	page = b.page("/fleet?namespace=" + ns)
	mustContain(t, page, `id="unreadable" data-unreadable="2"`, "app: pending", "monitoring: apply failed", "monitoring: drift", `data-unknown="1"`)
	rows = rowsOf(page)
	mustContain(t, rows[ns+"/edge-1"], "monitoring: drift", `data-unknown="1"`)
	mustContain(t, rows[ns+"/edge-2"], "app: pending", "monitoring: apply failed")
	mustContain(t, page, `id="unreadable" data-unreadable="2"`)
	mustNotContain(t, page, "choose a namespace you may read above")
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
}

var rowRE = regexp.MustCompile(`(?s)<tr data-cluster="([^"]+)".*?</tr>`)

// rowsOf are a page's table rows by their data-cluster.
func rowsOf(page string) map[string]string {
	out := map[string]string{}
	for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
		out[m[1]] = m[0]
	}
	return out
}
