package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/dashboard"
)

// parallel runs f(0..n-1), 16 at a time, failing b on the first error.
func parallel(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// bigFleet creates n hosted clusters (EKS, AKS, GKE in turn, with status as the reconciler
// writes it), n fleet clusters (one in ten disconnected), bundles Bundles targeting every
// cluster with a BundleDeployment each (a mix of states), and 100 Warning events, in a fresh
// namespace; the BundleDeployments live in 10 cluster namespaces.
func bigFleet(b *testing.B, n, bundles int) string {
	b.Helper()
	ctx := context.Background()
	ns := mgmt.Namespace(b)
	bdNS := make([]string, 10)
	for i := range bdNS {
		bdNS[i] = mgmt.Namespace(b)
	}
	now := metav1.Now()
	c := mgmt.Client
	parallel(b, n, func(i int) error {
		name := fmt.Sprintf("hosted-%04d", i)
		hc := &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		upstream := &managementv1alpha1.EKSClusterConfig{DisplayName: name, Region: "us-west-2", CredentialSecret: "aws",
			KubernetesVersion: ptr.To("1.32"), Tags: map[string]string{"team": "platform", "env": "prod"}, PublicAccess: ptr.To(true),
			PrivateAccess: ptr.To(false), LoggingTypes: []string{"api"}, Subnets: []string{"subnet-a", "subnet-b"},
			NodeGroups: []managementv1alpha1.EKSNodeGroup{{Name: "ng-1", DesiredSize: ptr.To[int32](3), MinSize: ptr.To[int32](1), MaxSize: ptr.To[int32](5)}}}
		switch i % 3 {
		case 0:
			hc.Spec.EKSConfig = &managementv1alpha1.EKSClusterConfig{DisplayName: name, Region: "us-west-2", CredentialSecret: "aws", Tags: map[string]string{"team": "platform"}}
		case 1:
			hc.Spec.AKSConfig = &managementv1alpha1.AKSClusterConfig{ClusterName: name, ResourceGroup: "rg", ResourceLocation: "westeurope", CredentialSecret: "azure"}
		default:
			hc.Spec.GKEConfig = &managementv1alpha1.GKEClusterConfig{ClusterName: name, ProjectID: "acme", Region: "europe-west1", CredentialSecret: "gcp"}
		}
		if err := c.Create(ctx, hc); err != nil {
			return err
		}
		hc.Status = managementv1alpha1.ClusterStatus{Phase: managementv1alpha1.PhaseActive, LastRefreshTime: &now,
			Conditions: []metav1.Condition{cond("Ready", "True", "Active", "The cluster is active."), cond("Synced", "True", "InSync", "Every managed field matches the provider.")}}
		if i%3 == 0 {
			hc.Status.EKSStatus = &managementv1alpha1.EKSStatus{UpstreamSpec: upstream, AppliedSpec: hc.Spec.EKSConfig.DeepCopy(), Status: "ACTIVE"}
		}
		return c.Status().Update(ctx, hc)
	})
	clusters := make([]*fleetv1alpha1.Cluster, n)
	parallel(b, n, func(i int) error {
		fc := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("edge-%04d", i), Labels: map[string]string{"env": "prod", "region": "eu"}}}
		if err := c.Create(ctx, fc); err != nil {
			return err
		}
		seen := now
		ready := cond("Ready", "True", "Succeeded", "Agent checked in")
		if i%10 == 0 {
			seen = metav1.NewTime(now.Add(-time.Hour))
			ready = cond("Ready", "False", fleetv1alpha1.ReasonAgentDisconnected, "The agent has missed its heartbeats")
		}
		fc.Status = fleetv1alpha1.ClusterStatus{Namespace: bdNS[i%len(bdNS)], Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen}, Conditions: []metav1.Condition{ready}}
		clusters[i] = fc
		return c.Status().Update(ctx, fc)
	})
	bs := make([]*fleetv1alpha1.Bundle, bundles)
	for j := range bundles {
		bs[j] = &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("bundle-%d", j)},
			Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{}}}}}
		createAll(b, bs[j])
		bs[j].Status = fleetv1alpha1.BundleStatus{DeploymentID: "d1", Summary: fleetv1alpha1.BundleSummary{DesiredReady: n, Ready: n * 9 / 10},
			Conditions: []metav1.Condition{cond("Ready", "False", "Pending", "not all ready")}}
		setStatus(b, bs[j])
	}
	parallel(b, n*bundles, func(k int) error {
		fc, bu := clusters[k%n], bs[k/n]
		bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: fc.Status.Namespace, Name: bu.Name + "-" + fc.Name,
			Labels: map[string]string{bundle.BundleNameLabel: bu.Name, bundle.BundleNamespaceLabel: ns, fleetv1alpha1.ClusterLabel: fc.Name, fleetv1alpha1.ClusterNamespaceLabel: ns}},
			Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "d1"}}
		if err := c.Create(ctx, bd); err != nil {
			return err
		}
		bd.Status = fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "d1", Ready: k%10 != 0, NonModified: k%7 != 0,
			Resources: []fleetv1alpha1.ResourceState{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "web", State: "Applied"}}}
		bd.Status.Display = bundle.Display(bd) // as the agent writes it with the status
		return c.Status().Update(ctx, bd)
	})
	// An import token per fleet cluster (manager-initiated import) and 50 GitRepos of 10 paths.
	expires := metav1.NewTime(now.Add(time.Hour))
	parallel(b, n, func(i int) error {
		tok := &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("import-edge-%04d", i),
			Labels: map[string]string{fleetv1alpha1.ClusterLabel: fmt.Sprintf("edge-%04d", i), fleetv1alpha1.ClusterUIDLabel: fmt.Sprint(i)}},
			Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}}}
		if err := c.Create(ctx, tok); err != nil {
			return err
		}
		tok.Status = fleetv1alpha1.ClusterRegistrationTokenStatus{Expires: &expires, SecretName: tok.Name + "-values",
			Conditions: []metav1.Condition{cond("Ready", "True", "Issued", "The import identity is issued")}}
		return c.Status().Update(ctx, tok)
	})
	parallel(b, 50, func(i int) error {
		gr := &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%02d", i)},
			Spec: fleetv1alpha1.GitRepoSpec{Repo: "https://git.example.com/org/apps.git", Branch: "main", Paths: []string{"apps/*"}}}
		if err := c.Create(ctx, gr); err != nil {
			return err
		}
		gr.Status = fleetv1alpha1.GitRepoStatus{Commit: "0123456789abcdef0123456789abcdef01234567", Summary: fleetv1alpha1.GitRepoSummary{Bundles: 10, ReadyBundles: 9}}
		for p := range 10 {
			gr.Status.Bundles = append(gr.Status.Bundles, fleetv1alpha1.GitRepoBundle{Name: fmt.Sprintf("repo-%02d-app-%d", i, p), Path: fmt.Sprintf("apps/app-%d", p),
				Ready: n - p/9, DesiredReady: n})
		}
		gr.Status.Conditions = []metav1.Condition{gen(cond("Synced", "True", "Succeeded", "rendered"), gr.Generation),
			gen(cond("Ready", "False", "BundlesNotReady", "9/10 Bundles ready"), gr.Generation)}
		return c.Status().Update(ctx, gr)
	})
	parallel(b, 100, func(i int) error {
		return c.Create(ctx, warningEvent(ns, fmt.Sprintf("warn-%d", i), corev1.ObjectReference{APIVersion: "management.drover.io/v1alpha1", Kind: "Cluster",
			Namespace: ns, Name: fmt.Sprintf("hosted-%04d", i)}, "ProviderError", "The provider answered 500"))
	})
	return ns
}

// BenchmarkPages: the server time of each page over a 1,000-cluster fleet (1,000 hosted
// clusters, 1,000 fleet clusters, 3 Bundles with 3,000 BundleDeployments, 1,000 import tokens,
// 50 GitRepos), reads included:
// every request lists through the real API server with the viewer's token, as in production.
func BenchmarkPages(b *testing.B) {
	const n, bundles = 1000, 3
	ns := bigFleet(b, n, bundles)
	h, err := dashboard.New(dashboard.Options{APIServer: mgmt.Config})
	if err != nil {
		b.Fatal(err)
	}
	viewer := clusterViewer(b, ns, "bench")
	pages := []struct{ name, path string }{
		{"overview", "/"},
		{"hosted", "/hosted"},
		{"cluster", "/hosted/" + ns + "/hosted-0000"},
		{"fleet", "/fleet"},
		{"bundles", "/bundles"},
		{"gitrepos", "/gitrepos"},
		{"tokens", "/tokens"},
		{"migrations", "/migrations"},
	}
	for _, page := range pages {
		// A viewer's first view of a page: its lists are not cached yet (a fresh dashboard each
		// time), so every list goes to the API server.
		b.Run("first/"+page.name, func(b *testing.B) {
			api := apiserverPID(b)
			cpu0, api0 := selfCPU(), procCPU(api)
			var times []time.Duration
			for b.Loop() {
				fresh, err := dashboard.New(dashboard.Options{APIServer: mgmt.Config})
				if err != nil {
					b.Fatal(err)
				}
				req := httptest.NewRequest(http.MethodGet, page.path, nil)
				req.Header.Set("Authorization", "Bearer "+viewer)
				rec := httptest.NewRecorder()
				start := time.Now()
				fresh.ServeHTTP(rec, req)
				times = append(times, time.Since(start))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: status %d", page.path, rec.Code)
				}
			}
			perPage := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(len(times)) }
			b.ReportMetric(perPage(selfCPU()-cpu0), "ms-cpu-drover")
			b.ReportMetric(perPage(procCPU(api)-api0), "ms-cpu-apiserver")
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
		})
	}
	for _, page := range pages {
		// The pages as a viewer uses them: lists cached and kept current by the viewer's watches.
		b.Run(page.name, func(b *testing.B) {
			var times []time.Duration
			var first time.Duration // the viewer's first request: its lists are not cached yet
			var reads, renders []float64
			api := apiserverPID(b)
			cpu0, api0 := selfCPU(), procCPU(api)
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, page.path, nil)
				req.Header.Set("Authorization", "Bearer "+viewer)
				rec := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(rec, req)
				if len(times) == 0 {
					first = time.Since(start)
				}
				times = append(times, time.Since(start))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: status %d: %s", page.path, rec.Code, rec.Body.String())
				}
				var read, render float64
				for _, v := range rec.Result().Header.Values("Server-Timing") {
					_, _ = fmt.Sscanf(v, "read;dur=%g", &read)
					_, _ = fmt.Sscanf(v, "render;dur=%g", &render)
				}
				reads, renders = append(reads, read), append(renders, render)
			}
			perPage := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(len(times)) }
			b.ReportMetric(perPage(selfCPU()-cpu0), "ms-cpu-drover")
			b.ReportMetric(perPage(procCPU(api)-api0), "ms-cpu-apiserver")
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			sort.Float64s(reads)
			sort.Float64s(renders)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
			b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, "ms-max")
			b.ReportMetric(reads[len(reads)/2], "ms-read-median")
			b.ReportMetric(float64(first.Microseconds())/1000, "ms-first")
			b.ReportMetric(renders[len(renders)/2], "ms-render-median")
		})
	}
}

// selfCPU is this process's CPU time (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// apiserverPID finds the test API server's process by its port.
func apiserverPID(b *testing.B) int {
	b.Helper()
	u, err := url.Parse(mgmt.Config.Host)
	if err != nil {
		b.Fatal(err)
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), "kube-apiserver") && strings.Contains(string(cmd), "--secure-port="+u.Port()+"\x00") {
			return pid
		}
	}
	b.Log("the API server's process was not found: its CPU is not reported")
	return 0
}

// procCPU is a process's CPU time (utime + stime from /proc/PID/stat).
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // clock ticks (USER_HZ = 100)
}

// gen sets the generation a condition was written for.
func gen(c metav1.Condition, g int64) metav1.Condition { c.ObservedGeneration = g; return c }
