package dashboard_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/dashboard"
)

// requestLog records the requests a dashboard makes to the API server.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.reqs = append(l.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("Accept"))
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

// matching are the requests whose line contains s.
func (l *requestLog) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.reqs {
		if strings.Contains(r, s) {
			out = append(out, r)
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var appCellRE = regexp.MustCompile(`<td class="cell[^"]*" data-bundle="app"[^>]*>.*?</td>`)

// TestDeploymentsListedAsTable: the Bundles page lists BundleDeployments as a Table without the
// objects (never as a JSON list), and a BundleDeployment read from the Table and the same one
// delivered whole by the watch render the same cell: state, message (a Secret's drift by path
// only) and drift correction, all from the status.display the agent wrote.
func TestDeploymentsListedAsTable(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	// A cluster whose BundleDeployments live in the fleet's namespace: the viewer, who may read
	// that namespace only, lists them there.
	edge := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}}
	app := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "edge"}}}}
	bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-edge",
		Labels: map[string]string{bundle.BundleNameLabel: "app", bundle.BundleNamespaceLabel: ns, fleetv1alpha1.ClusterLabel: "edge",
			fleetv1alpha1.ClusterNamespaceLabel: ns}},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "app-1"}}
	createAll(t, edge, app, bd)
	seen := metav1.Now()
	edge.Status = fleetv1alpha1.ClusterStatus{Namespace: ns, Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen}}
	setStatus(t, edge)
	app.Status = fleetv1alpha1.BundleStatus{DeploymentID: "app-1"}
	setStatus(t, app)
	applied := cond(fleetv1alpha1.ConditionApplied, "True", fleetv1alpha1.ReasonSucceeded, "Applied 2 resources")
	applied.ObservedGeneration = bd.Generation
	bd.Status = fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "app-1", Ready: true, NonModified: false,
		Resources: []fleetv1alpha1.ResourceState{{APIVersion: "v1", Kind: "Secret", Namespace: "web", Name: "db", State: "Modified",
			Message: `data.password: want "hunter2", have "x"`}},
		Conditions: []metav1.Condition{applied, cond(fleetv1alpha1.ConditionDriftCorrected, "True", fleetv1alpha1.EventDriftCorrected,
			"Re-applied after changes downstream: ConfigMap web/settings")}}
	bd.Status.Display = bundle.Display(bd) // as the agent writes it
	setStatus(t, bd)

	requests := &requestLog{}
	b := localDashboard(t, ns, "viewer", "key", requests.wrap)
	if status, _ := b.get("/login?key=key&next=/bundles"); status != http.StatusSeeOther {
		t.Fatalf("the access key was not taken: %d", status)
	}

	path := "/bundles?namespace=" + ns
	page := b.page(path)
	listed := appCellRE.FindString(page)
	mustContain(t, listed, `data-state="modified"`, "drift", "Secret web/db Modified: data.password",
		"drift corrected "+bd.Status.Display.DriftCorrected[:len("2006-01-02T15:04:05Z")]+": Re-applied after changes downstream: ConfigMap web/settings")
	mustNotContain(t, page, "hunter2")
	// Every request for BundleDeployments is a Table list or a watch.
	tableLists := func() int {
		t.Helper()
		n := 0
		for _, r := range requests.matching("/bundledeployments?") {
			switch {
			case strings.Contains(r, "watch=true"):
			case strings.Contains(r, "includeObject=None") && strings.HasSuffix(r, " "+dashboard.TableAccept):
				n++
			default:
				t.Errorf("BundleDeployments listed otherwise than as a Table: %s", r)
			}
		}
		return n
	}
	if n := tableLists(); n == 0 {
		t.Errorf("BundleDeployments not listed as a Table; requests: %q", requests.matching("/bundledeployments?"))
	}

	// The watch delivers the whole object on a change the cell does not show.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := b.stream(ctx, page)
	next(t, events, "ready", 15*time.Second)
	if err := mgmt.Client.Patch(ctx, bd, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/touched":"1"}}}`))); err != nil {
		t.Fatal(err)
	}
	next(t, events, "change", 15*time.Second)
	watched := appCellRE.FindString(b.fragment(path))
	if watched != listed {
		t.Errorf("the cell differs once the watch delivered the BundleDeployment:\nlisted  %s\nwatched %s", listed, watched)
	}
	tableLists()
}
