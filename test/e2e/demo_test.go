package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

// The demo's objects as its summary names them (internal/demo).
const (
	demoNS       = "demo"
	demoAdopted  = "shop-eks"
	demoConflict = "billing-eks"
	demoBundle   = "hello-web"
	// demoJoined is the hosted cluster that joins the fleet; demoEKSBundle targets every EKS
	// cluster of the fleet by the label the join gives it.
	demoJoined    = "shop-eks"
	demoEKSBundle = "eks-hello"
	// demoGitRepo deploys a ConfigMap from a repository git serves to every fleet cluster.
	demoGitRepo = "demo-apps"
)

var (
	demoHosted = map[string]string{"shop-eks": "eks", "billing-eks": "eks", "payments-aks": "aks", "analytics-gke": "gke"}
	demoFleet  = []string{"edge-1", "edge-2"}
	// demoFleetSize counts the fleet Clusters: the imported demoFleet and the hosted demoJoined,
	// which joins by itself.
	demoFleetSize = len(demoFleet) + 1
	// demoMigrations: edge-2's runs to Succeeded, edge-1's fails at SwitchProvider.
	demoMigrations = []string{demoMigrationOK, demoMigrationFails}
	// demoDashboardURL is the line drover server --demo prints for its dashboard.
	demoDashboardURL = regexp.MustCompile(`(?m)^Dashboard: (http://127\.0\.0\.1:\d+/login\?key=[A-Za-z0-9_-]+) `)
)

const (
	demoMigrationOK    = "edge-2-aws-ccm"
	demoMigrationFails = "edge-1-aws-ccm"
)

// TestDemo starts `drover server --demo` and checks that within 60 s of its start the state the
// demo promises is there: four hosted clusters active (shop-eks with the console's tag adopted
// into its config and an Adopted Event, billing-eks Conflict=True naming both values), two
// fleet clusters Ready with their agents checking in, the sample Bundle ready on both — its
// Deployment running on each downstream cluster's kwok nodes —, shop-eks joined to the fleet by
// itself (an EKS token its API server checks through the simulator) with the Bundle for every
// EKS cluster applied there, a GitRepo (a repository git serves) deployed to all three fleet
// clusters, both cloud-provider
// migrations under way, and the dashboard, opened with the URL the demo printed as a browser
// would, showing non-zero counts for the three systems on its overview. Then the migrations
// finish (edge-2's Succeeded through every step, edge-1's Failed at SwitchProvider with its
// message on the dashboard's Migrations page), the server's /metrics agree with the objects,
// and Ctrl-C stops every process and deletes the data dir.
func TestDemo(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "demo-data")
	metricsAddr := freeAddr(t)
	start := time.Now()
	s := startServer(t, dataDir, "--demo", "--metrics-bind-address", metricsAddr)

	kubeconfig := filepath.Join(dataDir, "kubeconfig")
	var c client.Client
	eventually(t, 60*time.Second, func() error {
		select {
		case err := <-s.done:
			t.Fatalf("drover server --demo exited (%v):\n%s", err, s.out)
		default:
		}
		if _, err := os.Stat(kubeconfig); err != nil {
			return err
		}
		if c == nil {
			c = kubeClient(t, kubeconfig)
		}
		if err := demoState(t, c, dataDir); err != nil {
			return err
		}
		return demoOverview(t, s.out.String())
	})
	ready := time.Since(start)
	t.Logf("demo state reached %s after drover server --demo started", ready.Round(100*time.Millisecond))
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(s.out.String(), "Demo ready in") {
			return errors.New("no 'Demo ready in' line yet")
		}
		return nil
	})
	out := s.out.String()
	if first, _, _ := strings.Cut(out, "\n"); first != "Using an embedded control plane in "+dataDir+" (--demo)" {
		t.Errorf("first line %q, want the cluster drover runs on", first)
	}
	for _, want := range []string{"export KUBECONFIG=" + kubeconfig, "drover cluster list -n demo", "drover migrate get " + demoMigrationFails + " -n demo", "curl -s http://" + metricsAddr + "/metrics", "deletes " + dataDir} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output does not say %q:\n%s", want, out)
		}
	}

	// The migrations finish: edge-2's through every step, edge-1's at SwitchProvider with what
	// to do, shown on the dashboard.
	eventually(t, 90*time.Second, func() error { return demoMigrationOutcome(t, c, s.out.String()) })
	t.Logf("migrations finished %s after drover server --demo started", time.Since(start).Round(100*time.Millisecond))

	// drover check, as the README tells a user to run it, sees the running server's lease and
	// settings, and the failed migration as the one thing needing attention.
	demoCheck(t, kubeconfig)

	// The domain metrics, scraped from the server's listener, agree with the objects.
	eventually(t, 30*time.Second, func() error { return demoMetrics(t, c, metricsAddr) })

	s.interrupt(t)
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data dir after Ctrl-C: %v, want it deleted", err)
	}
	if pids := processesUsing(dataDir); len(pids) > 0 {
		t.Errorf("processes %v still use the data dir after Ctrl-C", pids)
	}
}

// demoState returns nil once the demo's world is as promised.
func demoState(t *testing.T, c client.Client, dataDir string) error {
	ctx := t.Context()
	for name := range demoHosted {
		h := &v1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, h); err != nil {
			return err
		}
		if h.Status.Phase != v1.PhaseActive {
			return fmt.Errorf("hosted cluster %s is %q", name, h.Status.Phase)
		}
		switch name {
		case demoAdopted:
			if v := h.Spec.EKSConfig.Tags["cost-center"]; v != "console-4711" {
				return fmt.Errorf("%s: tag cost-center %q in the config, want the console's value adopted", name, v)
			}
			if err := hasEvent(t, c, name, "Adopted", "tags[cost-center]"); err != nil {
				return err
			}
		case demoConflict:
			cond := meta.FindStatusCondition(h.Status.Conditions, v1.ConditionConflict)
			if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, `"finance"`) || !strings.Contains(cond.Message, `"billing-platform"`) {
				return fmt.Errorf("%s: Conflict condition %+v, want True with both values", name, cond)
			}
		}
	}
	for _, name := range demoFleet {
		fc := &fleetv1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, fc); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(fc.Status.Conditions, fleetv1.ConditionReady) || fc.Status.Agent.LastSeen == nil {
			return fmt.Errorf("fleet cluster %s not Ready with an agent: %+v", name, fc.Status.Conditions)
		}
		// The Bundle's workload runs downstream (kwok's pods).
		down := kubeClient(t, filepath.Join(dataDir, "demo", name, "kubeconfig"))
		d := &appsv1.Deployment{}
		if err := down.Get(ctx, client.ObjectKey{Namespace: "hello", Name: "web"}, d); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if d.Status.ReadyReplicas != 2 {
			return fmt.Errorf("%s: hello/web has %d ready replicas", name, d.Status.ReadyReplicas)
		}
	}
	b := &fleetv1.Bundle{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: demoBundle}, b); err != nil {
		return err
	}
	if !meta.IsStatusConditionTrue(b.Status.Conditions, fleetv1.ConditionReady) || b.Status.Summary.Ready != len(demoFleet) {
		return fmt.Errorf("bundle %s: %d ready, conditions %+v", demoBundle, b.Status.Summary.Ready, b.Status.Conditions)
	}
	if err := demoJoinedState(t, c, dataDir); err != nil {
		return err
	}
	if err := demoGitState(t, c, dataDir); err != nil {
		return err
	}
	for _, name := range demoMigrations {
		m := &migrationv1alpha1.CloudProviderMigration{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, m); err != nil {
			return err
		}
		if m.Status.Phase == "" || m.Status.Phase == migrationv1alpha1.PhasePending {
			return fmt.Errorf("migration %s has not started", name)
		}
	}
	return nil
}

// demoJoinedState: the hosted cluster demoJoined joined the fleet by itself (its fleet Cluster
// labelled with its provider, its agent checked in) and the Bundle for every EKS cluster put its
// ConfigMap into the cluster's API server.
func demoJoinedState(t *testing.T, c client.Client, dataDir string) error {
	ctx := t.Context()
	h := &v1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: demoJoined}, h); err != nil {
		return err
	}
	if h.Status.Fleet == nil || !meta.IsStatusConditionTrue(h.Status.Fleet.Conditions, v1.ConditionJoined) ||
		!meta.IsStatusConditionTrue(h.Status.Fleet.Conditions, v1.ConditionAgentReady) {
		return fmt.Errorf("hosted cluster %s has not joined with its agent: %+v", demoJoined, h.Status.Fleet)
	}
	fc := &fleetv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: demoJoined}, fc); err != nil {
		return err
	}
	if fc.Labels["management.drover.io/provider"] != "eks" || fc.Labels["team"] != "shop" {
		return fmt.Errorf("fleet cluster %s labels %v, want the provider's and the hosted cluster's", demoJoined, fc.Labels)
	}
	down := kubeClient(t, filepath.Join(dataDir, "demo", demoJoined, "kubeconfig"))
	cm := &corev1.ConfigMap{}
	if err := down.Get(ctx, client.ObjectKey{Namespace: demoEKSBundle, Name: "greeting"}, cm); err != nil {
		return fmt.Errorf("%s: %w", demoJoined, err)
	}
	b := &fleetv1.Bundle{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: demoEKSBundle}, b); err != nil {
		return err
	}
	if !meta.IsStatusConditionTrue(b.Status.Conditions, fleetv1.ConditionReady) || b.Status.Summary.Ready != 1 {
		return fmt.Errorf("bundle %s: %d ready, conditions %+v", demoEKSBundle, b.Status.Summary.Ready, b.Status.Conditions)
	}
	return nil
}

// demoGitState: the GitRepo deployed its commit to every fleet cluster, the joined hosted one
// included.
func demoGitState(t *testing.T, c client.Client, dataDir string) error {
	ctx := t.Context()
	gr := &fleetv1.GitRepo{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: demoGitRepo}, gr); err != nil {
		return err
	}
	if len(gr.Status.Commit) != 40 || !meta.IsStatusConditionTrue(gr.Status.Conditions, fleetv1.ConditionReady) {
		return fmt.Errorf("GitRepo %s: commit %q, conditions %+v", demoGitRepo, gr.Status.Commit, gr.Status.Conditions)
	}
	for _, name := range append([]string{demoJoined}, demoFleet...) {
		down := kubeClient(t, filepath.Join(dataDir, "demo", name, "kubeconfig"))
		if err := down.Get(ctx, client.ObjectKey{Namespace: "hello-git", Name: "greeting"}, &corev1.ConfigMap{}); err != nil {
			return fmt.Errorf("%s: the GitRepo's ConfigMap: %w", name, err)
		}
	}
	return nil
}

// dashboardGet fetches path from the demo's dashboard as a browser that opened the printed URL
// (its access key traded for the session cookie).
func dashboardGet(out, path string) (string, error) {
	m := demoDashboardURL.FindStringSubmatch(out)
	if m == nil {
		return "", errors.New("drover server --demo printed no 'Dashboard: http://127.0.0.1:<port>/login?key=...' line")
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return "", err
	}
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	login, err := browser.Get(m[1])
	if err != nil {
		return "", fmt.Errorf("open the printed dashboard URL: %w", err)
	}
	_ = login.Body.Close()
	if login.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the printed dashboard URL: %s", login.Status)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		return "", err
	}
	resp, err := browser.Get(u.Scheme + "://" + u.Host + path)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != path {
		return "", fmt.Errorf("dashboard %s: %s at %s", path, resp.Status, resp.Request.URL)
	}
	return string(body), nil
}

// dashboardCounts reads the overview's counts: <... data-count="NAME">N ...
var dashboardCount = regexp.MustCompile(`data-count="([a-z-]+)"[^>]*>\s*(\d+)`)

func overviewCounts(page string) map[string]int {
	counts := map[string]int{}
	for _, m := range dashboardCount.FindAllStringSubmatch(page, -1) {
		n, _ := strconv.Atoi(m[2])
		counts[m[1]] = n
	}
	return counts
}

// demoOverview checks the dashboard's overview, opened with the printed URL, counts the three
// systems: the hosted clusters, the fleet clusters connected and the Bundles, the migrations.
func demoOverview(t *testing.T, out string) error {
	page, err := dashboardGet(out, "/")
	if err != nil {
		return err
	}
	got := overviewCounts(page)
	want := map[string]int{"hosted": len(demoHosted), "fleet": demoFleetSize, "connected": demoFleetSize, "gitrepos": 1, "migrations": len(demoMigrations)}
	for k, v := range want {
		if got[k] != v {
			return fmt.Errorf("dashboard overview: %s count %d, want %d (counts %v)", k, got[k], v, got)
		}
	}
	if got["bundles"] < 1 || got["bundles-ready"] < 1 {
		return fmt.Errorf("dashboard overview: no ready Bundle counted (counts %v)", got)
	}
	t.Logf("dashboard overview counts: %v", got)
	return nil
}

// demoMigrationOutcome: edge-2's migration succeeded with every step, edge-1's failed at
// SwitchProvider saying what to do; the dashboard shows both and the demo printed each outcome.
func demoMigrationOutcome(t *testing.T, c client.Client, out string) error {
	for _, name := range demoMigrations {
		m := &migrationv1alpha1.CloudProviderMigration{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: demoNS, Name: name}, m); err != nil {
			return err
		}
		switch name {
		case demoMigrationOK:
			if m.Status.Phase != migrationv1alpha1.PhaseSucceeded {
				return fmt.Errorf("migration %s is %s at step %d", name, m.Status.Phase, m.Status.CurrentStep)
			}
			for _, st := range m.Status.Steps {
				if st.Phase != migrationv1alpha1.StepSucceeded {
					t.Fatalf("migration %s succeeded with step %d %s %s", name, st.Index, st.Name, st.Phase)
				}
			}
		case demoMigrationFails:
			if m.Status.Phase != migrationv1alpha1.PhaseFailed {
				return fmt.Errorf("migration %s is %s at step %d", name, m.Status.Phase, m.Status.CurrentStep)
			}
			cond := meta.FindStatusCondition(m.Status.Conditions, "Failed")
			if cond == nil || cond.Reason != "SwitchProvider" || !strings.Contains(cond.Message, "SyncLoadBalancerFailed") || !strings.Contains(cond.Message, "IAM policy") {
				t.Fatalf("migration %s failed with %+v, want SwitchProvider with the load balancer's event and what to check", name, cond)
			}
		}
		if !strings.Contains(out, "Demo: migration "+name+" "+string(m.Status.Phase)+" after") {
			return fmt.Errorf("the demo did not print %s's outcome yet", name)
		}
	}
	page, err := dashboardGet(out, "/migrations")
	if err != nil {
		return err
	}
	page = html.UnescapeString(page)
	_, failed, ok := strings.Cut(page, `data-migration="demo/`+demoMigrationFails+`"`)
	failed, _, _ = strings.Cut(failed, "<section") // up to the next migration
	if !ok || !strings.Contains(failed, `data-phase="Failed"`) || !strings.Contains(failed, "SyncLoadBalancerFailed after the switch") || !strings.Contains(failed, "check the CCM's IAM policy") {
		return fmt.Errorf("the dashboard's Migrations page does not show %s failed with its message", demoMigrationFails)
	}
	if !strings.Contains(page, `data-migration="demo/`+demoMigrationOK+`"`) {
		return fmt.Errorf("the dashboard's Migrations page does not show %s", demoMigrationOK)
	}
	overview, err := dashboardGet(out, "/")
	if err != nil {
		return err
	}
	if got := overviewCounts(overview); got["migrations-failed"] != 1 || got["migrations-running"] != 0 {
		return fmt.Errorf("dashboard overview: migration counts %v, want 1 failed, none running", got)
	}
	return nil
}

func hasEvent(t *testing.T, c client.Client, name, reason, note string) error {
	var list eventsv1.EventList
	if err := c.List(t.Context(), &list, client.InNamespace(demoNS)); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, note) {
			return nil
		}
	}
	return fmt.Errorf("no %s Event about %s mentioning %s", reason, name, note)
}

// demoMetrics scrapes drover server's /metrics and compares the domain metrics with the objects.
func demoMetrics(t *testing.T, c client.Client, addr string) error {
	ctx := t.Context()
	m, err := scrape(addr)
	if err != nil {
		return err
	}
	var errs []error
	want := func(name string, labels map[string]string, cmp string, v float64) {
		got, ok := m.value(name, labels)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("no sample %s%v", name, labels))
		case cmp == "==" && got != v, cmp == ">=" && got < v, cmp == "<" && got >= v:
			errs = append(errs, fmt.Errorf("%s%v = %v, want %s %v", name, labels, got, cmp, v))
		}
	}

	// Hosted clusters by provider and phase: exactly the objects.
	var hosted v1.ClusterList
	if err := c.List(ctx, &hosted); err != nil {
		return err
	}
	byProviderPhase := map[[2]string]float64{}
	for _, h := range hosted.Items {
		p := "eks"
		switch {
		case h.Spec.AKSConfig != nil:
			p = "aks"
		case h.Spec.GKEConfig != nil:
			p = "gke"
		}
		byProviderPhase[[2]string{p, string(h.Status.Phase)}]++
	}
	if len(hosted.Items) != len(demoHosted) {
		errs = append(errs, fmt.Errorf("%d hosted clusters, want %d", len(hosted.Items), len(demoHosted)))
	}
	for k, n := range byProviderPhase {
		want("drover_hosted_clusters", map[string]string{"provider": k[0], "phase": k[1]}, "==", n)
	}
	if got := m.sum("drover_hosted_clusters", nil); got != float64(len(hosted.Items)) {
		errs = append(errs, fmt.Errorf("drover_hosted_clusters sums to %v, want %d", got, len(hosted.Items)))
	}
	// Hosted clusters in the fleet: shop-eks joined with its agent, the three others stay out.
	want("drover_hosted_fleet", map[string]string{"provider": "eks", "state": "agent_ready", "reason": "Joined"}, "==", 1)
	if got := m.sum("drover_hosted_fleet", map[string]string{"state": "out"}); got != float64(len(demoHosted)-1) {
		errs = append(errs, fmt.Errorf("drover_hosted_fleet{state=out} sums to %v, want %d", got, len(demoHosted)-1))
	}
	want("drover_hosted_changes_total", map[string]string{"provider": "eks", "kind": "adoption"}, ">=", 1)
	want("drover_hosted_changes_total", map[string]string{"provider": "eks", "kind": "conflict"}, "==", 1)
	// Cloud API calls by provider, operation and code: each cluster created once.
	want("drover_cloud_api_requests_total", map[string]string{"provider": "eks", "operation": "CreateCluster", "code": "200"}, "==", 2)
	want("drover_cloud_api_requests_total", map[string]string{"provider": "eks", "operation": "CreateNodegroup", "code": "200"}, "==", 2)
	want("drover_cloud_api_requests_total", map[string]string{"provider": "aks", "operation": "PUT /subscriptions/{}/resourceGroups/{}/providers/{}/managedClusters/{}", "code": "201"}, "==", 1)
	want("drover_cloud_api_requests_total", map[string]string{"provider": "gke", "operation": "POST /v1/projects/{}/locations/{}/clusters", "code": "200"}, "==", 1)
	want("drover_cloud_api_requests_total", map[string]string{"provider": "eks", "operation": "DescribeCluster", "code": "200"}, ">=", 2)
	if got := m.sum("drover_cloud_api_requests_total", map[string]string{"code": "429"}); got != 0 {
		errs = append(errs, fmt.Errorf("%v throttled requests, the demo's simulators do not throttle", got))
	}
	for _, p := range []string{"eks", "aks", "gke"} {
		want("drover_hosted_refresh_duration_seconds_count", map[string]string{"provider": p}, ">=", 1)
		want("drover_hosted_refresh_age_seconds", map[string]string{"provider": p}, "<", 120) // the demo refreshes every minute
	}

	// Registration and the fleet: one grant per fleet cluster, all connected.
	want("drover_registrations_total", map[string]string{"result": "granted", "reason": "Succeeded"}, "==", float64(demoFleetSize))
	want("drover_registration_grant_duration_seconds_count", nil, "==", float64(demoFleetSize))
	if got := m.sum("drover_registrations_total", map[string]string{"result": "denied"}); got != 0 {
		errs = append(errs, fmt.Errorf("%v registrations denied", got))
	}
	want("drover_fleet_clusters", map[string]string{"state": "connected"}, "==", float64(demoFleetSize))

	// Bundles: readiness and deployments by state agree with the Bundles' status.
	var bundles fleetv1.BundleList
	if err := c.List(ctx, &bundles); err != nil {
		return err
	}
	readyBundles, readyDeployments := 0.0, 0.0
	for _, b := range bundles.Items {
		if meta.IsStatusConditionTrue(b.Status.Conditions, fleetv1.ConditionReady) {
			readyBundles++
		}
		readyDeployments += float64(b.Status.Summary.Ready)
	}
	if readyBundles < 3 { // hello-web and the two agents' Bundles
		errs = append(errs, fmt.Errorf("%v Bundles ready, want at least 3", readyBundles))
	}
	want("drover_bundles", map[string]string{"state": "ready", "reason": "Succeeded"}, "==", readyBundles)
	want("drover_bundle_deployments", map[string]string{"state": "ready"}, "==", readyDeployments)
	if got := m.sum("drover_bundles", map[string]string{"state": "not_ready"}); got != 0 {
		errs = append(errs, fmt.Errorf("%v Bundles not ready", got))
	}

	// Migrations by phase and their steps by outcome agree with the finished migrations.
	var migrations migrationv1alpha1.CloudProviderMigrationList
	if err := c.List(ctx, &migrations); err != nil {
		return err
	}
	steps := map[string]float64{}
	for _, mig := range migrations.Items {
		for _, st := range mig.Status.Steps {
			steps[string(st.Phase)]++
		}
	}
	want("drover_migrations", map[string]string{"phase": "Succeeded"}, "==", 1)
	want("drover_migrations", map[string]string{"phase": "Failed"}, "==", 1)
	for outcome, n := range steps {
		want("drover_migration_steps", map[string]string{"outcome": outcome}, "==", n)
	}
	if steps["Succeeded"] != 7+4 || steps["Failed"] != 1 {
		errs = append(errs, fmt.Errorf("migration steps by outcome %v, want 11 Succeeded (7 of edge-2, 4 of edge-1) and 1 Failed", steps))
	}
	return errors.Join(errs...)
}

// metricSamples are the samples of a Prometheus text exposition.
type metricSamples []metricSample

type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape GETs http://addr/metrics and parses the text format.
func scrape(addr string) (metricSamples, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics parses the Prometheus text format: name{label="value",...} value [timestamp].
func parseMetrics(r io.Reader) (metricSamples, error) {
	var out metricSamples
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := metricSample{labels: map[string]string{}}
		i := strings.IndexAny(line, "{ ")
		if i < 0 {
			return nil, fmt.Errorf("bad line %q", line)
		}
		s.name, line = line[:i], line[i:]
		if line[0] == '{' {
			line = line[1:]
			for line[0] != '}' {
				eq := strings.Index(line, `="`)
				if eq < 0 {
					return nil, fmt.Errorf("bad labels in %q", sc.Text())
				}
				key := strings.TrimPrefix(line[:eq], ",")
				line = line[eq+2:]
				var v strings.Builder
				for line[0] != '"' {
					if line[0] == '\\' && len(line) > 1 {
						switch line[1] {
						case 'n':
							v.WriteByte('\n')
						default:
							v.WriteByte(line[1])
						}
						line = line[2:]
						continue
					}
					v.WriteByte(line[0])
					line = line[1:]
				}
				s.labels[key] = v.String()
				line = strings.TrimPrefix(line[1:], ",")
			}
			line = line[1:]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return nil, fmt.Errorf("no value in %q", sc.Text())
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("value in %q: %w", sc.Text(), err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

func (m metricSamples) matching(name string, labels map[string]string) []metricSample {
	var out []metricSample
	for _, s := range m {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range labels {
			ok = ok && s.labels[k] == v
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// value is the one sample of name with exactly these labels' values (others may be present).
func (m metricSamples) value(name string, labels map[string]string) (float64, bool) {
	ss := m.matching(name, labels)
	if len(ss) != 1 {
		return 0, false
	}
	return ss[0].value, true
}

func (m metricSamples) sum(name string, labels map[string]string) float64 {
	total := 0.0
	for _, s := range m.matching(name, labels) {
		total += s.value
	}
	return total
}

// TestParseMetrics: the scrape parser reads labels with braces, commas, quotes and slashes.
func TestParseMetrics(t *testing.T) {
	t.Parallel()
	in := `# HELP x help
# TYPE x counter
x{code="200",operation="GET /v1/projects/{}/locations/{}",provider="gke"} 3
y 1.5e+00
z{a="q\"uo,te}"} 7 1700000000
`
	m, err := parseMetrics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"x", map[string]string{"operation": "GET /v1/projects/{}/locations/{}", "provider": "gke"}, 3},
		{"y", nil, 1.5},
		{"z", map[string]string{"a": `q"uo,te}`}, 7},
	} {
		if got, ok := m.value(tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v, %v; want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
}

// demoCheck runs drover check on the demo: drover is healthy (exit 0; CRDs, the server's leader
// Lease ok), the registration URL is a warning (the embedded API server's loopback address, which
// only this machine's agents reach), the fleet and its Bundle are fine, and the migration
// failing on purpose is a warning naming it.
func demoCheck(t *testing.T, kubeconfig string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), droverBin, "check", "--kubeconfig", kubeconfig, "-n", demoNS, "-o", "json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("drover check: %v\n%s", err, out)
	}
	var results []struct{ Check, Result, Detail string }
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("drover check -o json: %v\n%s", err, out)
	}
	want := map[string]string{"api-server": "ok", "crds": "ok", "admission-policy": "ok", "server": "ok", "registration": "warn", "fleet": "ok",
		"bundles": "ok", "gitrepos": "ok", "hosted-clusters": "ok", "migrations": "warn"}
	for _, r := range results {
		if want[r.Check] != r.Result {
			t.Errorf("drover check %s: %s (%s), want %s", r.Check, r.Result, r.Detail, want[r.Check])
		}
		delete(want, r.Check)
		if r.Check == "registration" && !strings.Contains(r.Detail, "a loopback address") {
			t.Errorf("drover check registration: %q does not say why it warns", r.Detail)
		}
		if r.Check == "migrations" && !strings.Contains(r.Detail, demoMigrationFails) {
			t.Errorf("drover check migrations: %q does not name %s", r.Detail, demoMigrationFails)
		}
	}
	if len(want) > 0 {
		t.Errorf("drover check did not run %v", want)
	}
}
