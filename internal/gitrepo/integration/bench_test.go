package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	rpprof "runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/gitrepo/webhook"
	"github.com/droverhq/drover/internal/memlimit"
	"github.com/droverhq/drover/internal/registration"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/test/envtest"
)

// BenchmarkGitOps1000Clusters runs drover's registration, bundle (with agent Bundles), GitRepo
// controllers and push webhook receiver in a child process (this test binary, re-executed, so
// that their CPU time and peak RSS are theirs alone) against a management API server of its
// own, with 1,000 registered fleet Clusters (created directly; each checks in once, so each
// also has its agent Bundle; no agents run: nothing here needs one) and a repository of 50
// paths, one ConfigMap of about 10 KiB each, served by git http-backend.
//
// Sub-benchmarks, run in this order:
//   - create-1-gitrepo-50-bundle (Fleet's experiment of that name): the GitRepo is created;
//     seconds until its 50 Bundles exist (Fleet's measure), and until all 50,000
//     BundleDeployments exist.
//   - commit-1-path, commit-50-paths: a commit changes one path, then all 50; the push webhook
//     (GitHub's push payload, signed) is sent to the receiver and the clock starts there. A
//     BundleDeployment is updated when its spec.deploymentID changed (seen by a watch, as an
//     agent sees it). Reported: seconds until every BundleDeployment of the changed Bundles is
//     updated; the controllers' writes to the management API server per cluster, split by
//     changed and unchanged Bundle, until they are quiet again; their CPU seconds and peak RSS.
//   - create-50-bundle (Fleet's): 50 Bundles of one 10 KiB ConfigMap created directly, each
//     targeting every cluster; seconds until all 50,000 BundleDeployments exist.
//
// Run with (about 15 minutes):
//
//	go test ./internal/gitrepo/integration -run '^$' -bench GitOps1000Clusters -benchtime 1x -timeout 60m
func BenchmarkGitOps1000Clusters(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("DROVER_GITOPS_BENCH_CLUSTERS")); err == nil && v > 0 {
		n = v // a smaller fleet, to try the benchmark out quickly
	}
	e := startGitOpsBench(b, n, 50)
	b.Run("create-1-gitrepo-50-bundle", func(b *testing.B) { e.createGitRepo(b) })
	b.Run("commit-1-path", func(b *testing.B) { e.commit(b, 1) })
	b.Run("commit-50-paths", func(b *testing.B) { e.commit(b, e.paths) })
	b.Run("create-50-bundle", func(b *testing.B) { e.createBundles(b, 50) })
}

// The child process: the environment variable names the management kubeconfig.
const (
	gitopsBenchKubeconfigEnv = "DROVER_GITOPS_BENCH_KUBECONFIG"
	gitopsBenchAddrsEnv      = "DROVER_GITOPS_BENCH_ADDRS"
)

func init() {
	if kc := os.Getenv(gitopsBenchKubeconfigEnv); kc != "" {
		os.Exit(runGitOpsBenchController(kc, os.Getenv(gitopsBenchAddrsEnv)))
	}
}

// runGitOpsBenchController runs the controllers as drover server sets them up, with a client
// that counts its writes; it writes the webhook receiver's URL and the write counts' URL to
// addrsFile.
func runGitOpsBenchController(kubeconfig, addrsFile string) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "bench controllers:", err); return 1 }
	ctrl.SetLogger(logr.Discard())
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fail(err)
	}
	server.WithManagementRate(cfg) // drover server's client rate
	writes := &writeLog{n: map[string]int{}}
	cfg.WrapTransport = writes.wrap
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: server.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: benchCacheOptions()}) // as drover server
	if err != nil {
		return fail(err)
	}
	// No agents heartbeat here: a day before any Cluster counts as disconnected.
	if err := registration.Setup(ctx, mgr, mgr.GetClient(), registration.Options{AgentDisconnectAfter: 24 * time.Hour}); err != nil {
		return fail(err)
	}
	if err := bundle.Setup(mgr, bundle.Options{ManageAgents: true}); err != nil {
		return fail(err)
	}
	if err := gitrepo.Controllers()(mgr); err != nil {
		return fail(err)
	}
	wl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	if err := webhook.Setup(mgr, webhook.Options{Listener: wl, SecretNamespace: config.DefaultNamespace}); err != nil {
		return fail(err)
	}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", writes)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile) // DROVER_BENCH_PROFILE_DIR
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	// A container's memory limit as drover server applies it (internal/memlimit: the Go soft
	// limit at memlimit.Ratio of it), for the controllers only, not the API server.
	if mb, err := strconv.Atoi(os.Getenv("DROVER_BENCH_CONTAINER_LIMIT_MB")); err == nil && mb > 0 {
		debug.SetMemoryLimit(int64(float64(mb<<20) * memlimit.Ratio))
	}
	if dir := os.Getenv("DROVER_BENCH_HEAP_DIR"); dir != "" {
		goruntime.MemProfileRate = 64 << 10 // finer than the default 512 KiB, for the profile's sites
		go heapWatch(ctx, dir)
	}
	go func() { _ = http.Serve(cl, mux) }()
	addrs := "http://" + wl.Addr().String() + "/\nhttp://" + cl.Addr().String() + "/\n"
	if err := os.WriteFile(addrsFile, []byte(addrs), 0o600); err != nil {
		return fail(err)
	}
	if err := mgr.Start(ctx); err != nil {
		return fail(err)
	}
	return 0
}

// benchCacheOptions is drover server's cache (server.CacheOptions), or with
// DROVER_BENCH_CACHE=strip-managed-fields the one before it (managedFields stripped only), to
// compare.
func benchCacheOptions() cache.Options {
	if os.Getenv("DROVER_BENCH_CACHE") == "strip-managed-fields" {
		return cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	}
	return server.CacheOptions()
}

// heapWatch writes a heap profile to dir/heap-max.pprof whenever the live heap (as of the last
// garbage collection) is 5% above the largest seen so far, and every 5 s logs the process's
// memory to dir/mem.log and writes the latest heap profile to dir/heap-last.pprof (DROVER_BENCH_HEAP_DIR: a measurement of the controllers' memory).
func heapWatch(ctx context.Context, dir string) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	logf, err := os.Create(filepath.Join(dir, "mem.log"))
	if err != nil {
		return
	}
	defer func() { _ = logf.Close() }()
	var maxLive uint64
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(samples)
		live := samples[0].Value.Uint64()
		if i%5 == 0 {
			_, _ = fmt.Fprintf(logf, "%s live=%dMB runtime-total=%dMB heap-objects=%dMB goal=%dMB %s\n",
				time.Now().Format(time.TimeOnly), live>>20, samples[1].Value.Uint64()>>20, samples[2].Value.Uint64()>>20,
				samples[3].Value.Uint64()>>20, selfRSS())
			// The latest heap (as of the last collection), for the state once quiet.
			if f, err := os.Create(filepath.Join(dir, "heap-last.pprof.tmp")); err == nil {
				_ = rpprof.Lookup("heap").WriteTo(f, 0)
				_ = f.Close()
				_ = os.Rename(filepath.Join(dir, "heap-last.pprof.tmp"), filepath.Join(dir, "heap-last.pprof"))
			}
		}
		if live > maxLive+maxLive/20 {
			maxLive = live
			f, err := os.Create(filepath.Join(dir, "heap-max.pprof.tmp"))
			if err != nil {
				continue
			}
			_ = rpprof.Lookup("heap").WriteTo(f, 0)
			_ = f.Close()
			_ = os.Rename(filepath.Join(dir, "heap-max.pprof.tmp"), filepath.Join(dir, "heap-max.pprof"))
			_, _ = fmt.Fprintf(logf, "%s heap-max.pprof written at live=%dMB\n", time.Now().Format(time.TimeOnly), live>>20)
		}
	}
}

// selfRSS is this process's VmRSS and VmHWM lines of /proc/self/status.
func selfRSS() string {
	data, _ := os.ReadFile("/proc/self/status")
	var out []string
	for l := range strings.Lines(string(data)) {
		if strings.HasPrefix(l, "VmRSS") || strings.HasPrefix(l, "VmHWM") {
			out = append(out, strings.Join(strings.Fields(l), ""))
		}
	}
	return strings.Join(out, " ")
}

// writeLog counts the write requests (POST, PUT, PATCH, DELETE) a client sends, by method,
// resource, namespace/name and response status, and serves the counts as JSON.
type writeLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *writeLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			k := writeKey{Method: r.Method, Code: code}
			k.Resource, k.Namespace, k.Name = splitAPIPath(r.URL.Path)
			w.mu.Lock()
			w.n[k.String()]++
			w.mu.Unlock()
		}
		return resp, err
	})
}

func (w *writeLog) ServeHTTP(rw http.ResponseWriter, _ *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = json.NewEncoder(rw).Encode(w.n)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// writeKey is one kind of write: "PATCH bundledeployments c-ns/app-07 200".
type writeKey struct {
	Method, Resource, Namespace, Name string
	Code                              int
}

func (k writeKey) String() string {
	return fmt.Sprintf("%s %s %s/%s %d", k.Method, k.Resource, k.Namespace, k.Name, k.Code)
}

func parseWriteKey(s string) writeKey {
	var k writeKey
	var nn string
	_, _ = fmt.Sscanf(s, "%s %s %s %d", &k.Method, &k.Resource, &nn, &k.Code)
	k.Namespace, k.Name, _ = strings.Cut(nn, "/")
	return k
}

// splitAPIPath splits /api/v1/namespaces/NS/RESOURCE/NAME/SUB (or /apis/GROUP/VERSION/...)
// into "RESOURCE[/SUB]", NS and NAME.
func splitAPIPath(p string) (resource, ns, name string) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		ns, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 0:
		return "?", ns, ""
	case 1:
		return parts[0], ns, ""
	case 2:
		return parts[0], ns, parts[1]
	default:
		return parts[0] + "/" + parts[2], ns, parts[1]
	}
}

// gitopsBench is the benchmark's fleet: a management API server of its own, the controllers
// in a child process, n registered Clusters, and a repository of paths.
type gitopsBench struct {
	m          *envtest.Cluster
	c          client.Client
	child      *envtest.Child
	webhookURL string
	countsURL  string
	n          int
	paths      int
	repo       *repo
	gr         *fleetv1alpha1.GitRepo
	versions   []int // of each path's content
	bds        *bdTracker
}

func startGitOpsBench(b *testing.B, n, paths int) *gitopsBench {
	ctx := b.Context()
	m, err := startManagement()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Stop() })
	e := &gitopsBench{m: m, c: m.Client, n: n, paths: paths, versions: make([]int, paths)}
	if err := m.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: config.DefaultNamespace}}); err != nil {
		b.Fatal(err)
	}
	if err := createWebhookSecret(ctx, m.Client); err != nil {
		b.Fatal(err)
	}
	kc, err := local.Kubeconfig(m.Config)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	kcPath, addrsPath := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "addrs")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		b.Fatal(err)
	}
	e.child = envtest.StartChild(b, gitopsBenchKubeconfigEnv+"="+kcPath, gitopsBenchAddrsEnv+"="+addrsPath)
	eventually(b, 60*time.Second, func() error {
		data, err := os.ReadFile(addrsPath)
		if err != nil {
			return err
		}
		lines := strings.Fields(string(data))
		if len(lines) != 2 {
			return fmt.Errorf("addresses file: %q", data)
		}
		e.webhookURL, e.countsURL = lines[0], lines[1]
		return nil
	})
	if e.bds, err = trackBundleDeployments(ctx, m); err != nil {
		b.Fatal(err)
	}

	// Not timed: n registered Clusters (the cluster controller creates their namespaces), each
	// checking in once, so each gets its agent Bundle too.
	start := time.Now()
	envtest.RegisterBenchClusters(b, m.Client, n)
	eventually(b, 300*time.Second, func() error {
		if got := e.bds.count(func(string) bool { return true }); got < n {
			return fmt.Errorf("%d/%d agent BundleDeployments", got, n)
		}
		return nil
	})
	b.Logf("setup: %d Clusters registered, checked in, with their agent BundleDeployments in %s", n, time.Since(start).Round(time.Second))

	e.repo = newRepo(b, "bench-gitops", false)
	e.repo.commit("50 paths", e.files())
	return e
}

// files is the repository content: every path at its version.
func (e *gitopsBench) files() map[string]string {
	payload := strings.Repeat("0123456789abcdef", 640) // 10 KiB, like Fleet's benchmark ConfigMaps
	out := map[string]string{}
	for i, v := range e.versions {
		out[fmt.Sprintf("app-%02d/cm.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench-%02d\n  namespace: default\ndata:\n  version: v%d\n  payload: %s\n", i, v, payload)
	}
	return out
}

// createGitRepo creates the GitRepo (webhook-driven: it polls once an hour) and waits for its
// Bundles and their BundleDeployments on every cluster; once.
func (e *gitopsBench) createGitRepo(b *testing.B) {
	if e.gr != nil {
		return
	}
	ctx := b.Context()
	e.gr = &fleetv1alpha1.GitRepo{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "bench"},
		Spec: fleetv1alpha1.GitRepoSpec{Repo: e.repo.url, Branch: "main", Paths: []string{"app-*"},
			PollingInterval: &metav1.Duration{Duration: time.Hour},
			Targets:         []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: envtest.BenchClusterLabels()}}}}}
	e.waitQuiet(b)
	writes0 := e.writes(b)
	cpu0 := e.child.CPUSeconds()
	start := time.Now()
	if err := e.c.Create(ctx, e.gr); err != nil {
		b.Fatal(err)
	}
	var bundlesExist time.Duration
	eventually(b, 120*time.Second, func() error {
		var list fleetv1alpha1.BundleList
		if err := e.c.List(ctx, &list, client.InNamespace(ws), client.MatchingLabels{fleetv1alpha1.GitRepoNameLabel: e.gr.Name}); err != nil {
			return err
		}
		if len(list.Items) < e.paths {
			return fmt.Errorf("%d/%d Bundles", len(list.Items), e.paths)
		}
		bundlesExist = time.Since(start)
		return nil
	})
	want := e.paths * e.n
	allExist := e.waitBundleDeployments(b, start, 900*time.Second, want, func(name string) bool { return strings.HasPrefix(name, e.gr.Name+"-") })
	cpu := e.child.CPUSeconds() - cpu0
	e.logWrites(b, writes0)
	b.ReportMetric(bundlesExist.Seconds(), "s-bundles-exist")
	b.ReportMetric(allExist.Seconds(), "s-all-bd-exist")
	b.ReportMetric(cpu, "controller-cpu-s")
	b.ReportMetric(e.child.PeakRSSMB(), "MB-controller-peak-rss")
	b.Logf("GitRepo of %d paths, %d clusters: %d Bundles exist after %s, all %d BundleDeployments after %s; controllers %.1f CPU s, peak RSS %.0f MB",
		e.paths, e.n, e.paths, bundlesExist.Round(time.Millisecond), want, allExist.Round(time.Millisecond), cpu, e.child.PeakRSSMB())
}

// waitBundleDeployments waits until want BundleDeployments of Bundles matching name exist and
// returns when the last of them appeared (as the watch saw it), since start.
func (e *gitopsBench) waitBundleDeployments(b *testing.B, start time.Time, timeout time.Duration, want int, name func(string) bool) time.Duration {
	deadline := time.Now().Add(timeout)
	for {
		got, last := e.bds.appeared(name)
		if got >= want {
			return last.Sub(start)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d/%d BundleDeployments after %s", got, want, timeout)
		}
		time.Sleep(time.Second) // the watch records the times; this only looks
	}
}

// bundles maps the GitRepo's paths to their Bundles' names and deployment IDs.
func (e *gitopsBench) bundles(b *testing.B) map[string]*fleetv1alpha1.Bundle {
	var list fleetv1alpha1.BundleList
	if err := e.c.List(b.Context(), &list, client.InNamespace(ws), client.MatchingLabels{fleetv1alpha1.GitRepoNameLabel: e.gr.Name}); err != nil {
		b.Fatal(err)
	}
	out := map[string]*fleetv1alpha1.Bundle{}
	for i := range list.Items {
		out[list.Items[i].Annotations[fleetv1alpha1.GitRepoPathAnnotation]] = &list.Items[i]
	}
	return out
}

// commit pushes a commit changing the first k paths, sends the push webhook and measures.
func (e *gitopsBench) commit(b *testing.B, k int) {
	e.createGitRepo(b)
	before := e.bundles(b)
	changed := map[string]bool{} // Bundle names
	for i := range k {
		bn := before[fmt.Sprintf("app-%02d", i)]
		if bn == nil {
			b.Fatalf("no Bundle for path app-%02d", i)
		}
		changed[bn.Name] = true
	}
	e.waitQuiet(b) // not timed: what earlier phases started is finished
	ids := e.bds.snapshot()
	writes0 := e.writes(b)
	for i := range k {
		e.versions[i]++
	}
	e.repo.commit(fmt.Sprintf("change %d paths", k), e.files())
	cpu0, procs0 := e.child.CPUSeconds(), e.processCPU()
	stopProfiles := e.profile(b, fmt.Sprintf("commit-%d", k))
	defer stopProfiles()

	start := time.Now()
	d := signed(webhook.GitHub, "refs/heads/main", e.repo.url)
	if code, body := postTo(b, e.webhookURL, d); code/100 != 2 {
		b.Fatalf("webhook: %d %s", code, body)
	}
	// Updated: every BundleDeployment of a changed Bundle has a new spec.deploymentID.
	want := k * e.n
	var took time.Duration
	deadline := time.Now().Add(600 * time.Second)
	for {
		got, last := e.bds.updated(ids, func(name string) bool { return changed[name] })
		if got >= want {
			took = last.Sub(start)
			break
		}
		if time.Now().After(deadline) {
			// Not done: say how far it got, at what rate, and with how many writes so far.
			total := 0
			for _, c := range diffWrites(writes0, e.writes(b)) {
				total += c
			}
			rate := float64(got) / time.Since(start).Seconds()
			b.ReportMetric(rate, "bd-updated/s")
			b.Errorf("%d/%d BundleDeployments updated after 600s (%.0f/s), %d writes so far; controllers %.1f CPU s", got, want, rate, total, e.child.CPUSeconds()-cpu0)
			return
		}
		// The watch records when each update arrived, and the time is taken from that: polling
		// more often would not change it, only add the count's cost (O(BundleDeployments)) to
		// the CPU being measured.
		time.Sleep(time.Second)
	}
	procs := e.processCPU()
	quiet := e.waitQuiet(b)
	cpu := e.child.CPUSeconds() - cpu0
	// Where the CPU went until every BundleDeployment was updated: per update, by process.
	for _, name := range slices.Sorted(maps.Keys(procs)) {
		if d := procs[name] - procs0[name]; d > 0 {
			b.Logf("CPU until all updated, %s: %.1f s (%.2f ms per BundleDeployment update)", name, d, d*1000/float64(want))
		}
	}
	rss := e.child.PeakRSSMB()
	w := diffWrites(writes0, e.writes(b))

	// Every BundleDeployment of a changed Bundle is at its Bundle's new deployment ID; the
	// others did not move.
	after := e.bundles(b)
	final := e.bds.snapshot()
	for key, id := range final {
		ns, name, _ := strings.Cut(key, "/")
		bn := after[pathOf(before, name)]
		switch {
		case bn == nil:
		case changed[name] && id != bn.Status.DeploymentID:
			b.Errorf("BundleDeployment %s/%s at %s, its Bundle at %s", ns, name, id, bn.Status.DeploymentID)
		case !changed[name] && id != ids[key]:
			b.Errorf("BundleDeployment %s/%s of unchanged Bundle moved from %s to %s", ns, name, ids[key], id)
		}
	}

	// Writes: per (Bundle, cluster) BundleDeployment writes, and everything else by kind.
	perPair := map[string]int{}
	var bdChanged, bdUnchanged, unchangedBundleWrites, failed, total int
	byKind := map[string]int{}
	for key, c := range w {
		wk := parseWriteKey(key)
		total += c
		if wk.Code/100 != 2 {
			failed += c
		}
		kind := wk.Method + " " + wk.Resource
		switch {
		case wk.Method == http.MethodPost:
			kind += " (create)"
		case wk.Resource == "bundledeployments" && changed[wk.Name]:
			bdChanged += c
			perPair[wk.Namespace+"/"+wk.Name] += c
			kind += " (changed Bundle)"
		case wk.Resource == "bundledeployments":
			bdUnchanged += c
			kind += " (unchanged Bundle)"
		case strings.HasPrefix(wk.Resource, "bundles") && wk.Namespace == ws && !changed[wk.Name]:
			unchangedBundleWrites += c
			kind += " (unchanged Bundle)"
		case strings.HasPrefix(wk.Resource, "bundles") && wk.Namespace == ws:
			kind += " (changed Bundle)"
		}
		if wk.Code/100 != 2 {
			kind += fmt.Sprintf(" [%d]", wk.Code)
		}
		byKind[kind] += c
	}
	hist := map[int]int{} // writes per (changed Bundle, cluster) → pairs
	for ns := range e.bds.namespaces() {
		for name := range changed {
			hist[perPair[ns+"/"+name]]++
		}
	}
	kinds := make([]string, 0, len(byKind))
	for kd := range byKind {
		kinds = append(kinds, kd)
	}
	sort.Slice(kinds, func(i, j int) bool { return byKind[kinds[i]] > byKind[kinds[j]] })
	for _, kd := range kinds {
		b.Logf("writes %-55s %7d (%.2f per cluster)", kd, byKind[kd], float64(byKind[kd])/float64(e.n))
	}
	b.Logf("BundleDeployment writes per (changed Bundle, cluster) pair: %v (writes → pairs)", hist)
	b.Logf("commit changing %d/%d paths: push webhook → every BundleDeployment of the changed Bundles updated in %s; quiet after %s; controllers %.1f CPU s, peak RSS %.0f MB; %d writes (%.2f per cluster), %d not 2xx",
		k, e.paths, took.Round(time.Millisecond), quiet.Round(time.Millisecond), cpu, rss, total, float64(total)/float64(e.n), failed)
	b.ReportMetric(took.Seconds(), "s-push-to-all-updated")
	b.ReportMetric(float64(bdChanged)/float64(k*e.n), "bd-writes/changed-bundle/cluster")
	b.ReportMetric(float64(bdUnchanged+unchangedBundleWrites), "writes-unchanged-bundles")
	b.ReportMetric(float64(total)/float64(e.n), "mgmt-writes/cluster")
	b.ReportMetric(cpu, "controller-cpu-s")
	b.ReportMetric(rss, "MB-controller-peak-rss")
	if len(hist) != 1 || hist[1] != k*e.n {
		b.Errorf("not exactly one BundleDeployment write per changed Bundle per cluster: %v", hist)
	}
	if bdUnchanged+unchangedBundleWrites != 0 {
		b.Errorf("%d writes to unchanged Bundles or their BundleDeployments", bdUnchanged+unchangedBundleWrites)
	}
	target := 10 * time.Second
	if k > 1 {
		target = 120 * time.Second
	}
	if took > target {
		b.Errorf("push to all updated took %s, target %s", took, target)
	}
}

// profile writes CPU profiles of the controllers and the management API server to
// $DROVER_BENCH_PROFILE_DIR (unset: none), $DROVER_BENCH_PROFILE_SECONDS (default 60) from now.
func (e *gitopsBench) profile(b *testing.B, name string) (wait func()) {
	dir := os.Getenv("DROVER_BENCH_PROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	secs := os.Getenv("DROVER_BENCH_PROFILE_SECONDS")
	if secs == "" {
		secs = "60"
	}
	get := func(client *http.Client, url, file string) {
		resp, err := client.Get(url + "?seconds=" + secs)
		if err != nil {
			b.Logf("profile %s: %v", file, err)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		raw, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode == http.StatusOK {
			err = os.WriteFile(filepath.Join(dir, file), raw, 0o600)
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Logf("profile %s: %d %v", file, resp.StatusCode, err)
		}
	}
	api, err := rest.HTTPClientFor(e.m.Config)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { get(http.DefaultClient, e.countsURL+"debug/pprof/profile", name+"-controllers.pprof") })
	wg.Go(func() {
		get(api, strings.TrimSuffix(e.m.Config.Host, "/")+"/debug/pprof/profile", name+"-apiserver.pprof")
	})
	return wg.Wait
}

// processCPU is the CPU seconds so far of the management API server and etcd, the controllers'
// process ("integration.test") and this one (envtest.ProcessCPU).
func (e *gitopsBench) processCPU() map[string]float64 {
	return envtest.ProcessCPU(map[string]string{"management": e.m.Config.Host})
}

func pathOf(bundles map[string]*fleetv1alpha1.Bundle, name string) string {
	for p, bn := range bundles {
		if bn.Name == name {
			return p
		}
	}
	return ""
}

// createBundles creates k Bundles of one 10 KiB ConfigMap each (Fleet's create-50-bundle),
// targeting every cluster, and waits for their BundleDeployments.
func (e *gitopsBench) createBundles(b *testing.B, k int) {
	ctx := b.Context()
	payload := strings.Repeat("0123456789abcdef", 640)
	e.waitQuiet(b)
	writes0 := e.writes(b)
	cpu0 := e.child.CPUSeconds()
	start := time.Now()
	envtest.Parallel(k, 8, func(i int) {
		cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"test-config-10kb-%d"},"data":{"payload":%q}}`, i, payload)
		bn := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: fmt.Sprintf("create-%d-bundle", i)},
			Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: "default", Resources: []runtime.RawExtension{{Raw: []byte(cm)}},
				Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: envtest.BenchClusterLabels()}}}}}
		if err := e.c.Create(ctx, bn); err != nil {
			b.Error(err)
		}
	})
	allExist := e.waitBundleDeployments(b, start, 900*time.Second, k*e.n, func(name string) bool {
		return strings.HasPrefix(name, "create-") && strings.HasSuffix(name, "-bundle")
	})
	cpu := e.child.CPUSeconds() - cpu0
	e.logWrites(b, writes0)
	b.ReportMetric(allExist.Seconds(), "s-all-bd-exist")
	b.ReportMetric(cpu, "controller-cpu-s")
	b.ReportMetric(e.child.PeakRSSMB(), "MB-controller-peak-rss")
	b.Logf("%d Bundles × %d clusters: all %d BundleDeployments exist after %s; controllers %.1f CPU s, peak RSS %.0f MB",
		k, e.n, k*e.n, allExist.Round(time.Millisecond), cpu, e.child.PeakRSSMB())
}

// logWrites waits until the controllers are quiet and logs their writes since writes0 by
// method, resource and status.
func (e *gitopsBench) logWrites(b *testing.B, writes0 map[string]int) {
	e.waitQuiet(b)
	byKind := map[string]int{}
	total := 0
	var refused []string // a few refused writes by object, to see which objects they hit
	for key, c := range diffWrites(writes0, e.writes(b)) {
		wk := parseWriteKey(key)
		kind := wk.Method + " " + wk.Resource
		if wk.Code/100 != 2 {
			kind += fmt.Sprintf(" [%d]", wk.Code)
			refused = append(refused, fmt.Sprintf("%s ×%d", key, c))
		}
		byKind[kind] += c
		total += c
	}
	for kd, c := range byKind {
		b.Logf("writes %-45s %7d (%.2f per cluster)", kd, c, float64(c)/float64(e.n))
	}
	slices.Sort(refused)
	if len(refused) > 0 {
		b.Logf("refused writes, first of %d objects: %v", len(refused), refused[:min(len(refused), 8)])
	}
	b.ReportMetric(float64(total)/float64(e.n), "mgmt-writes/cluster")
}

// writes reads the controllers' write counts.
func (e *gitopsBench) writes(b *testing.B) map[string]int {
	resp, err := http.Get(e.countsURL)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]int{}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		b.Fatal(err)
	}
	return out
}

func diffWrites(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// waitQuiet waits until the controllers have written nothing for 5 s (at most 5 min) and
// returns how long it waited.
func (e *gitopsBench) waitQuiet(b *testing.B) time.Duration {
	start := time.Now()
	sum := func() int {
		n := 0
		for _, v := range e.writes(b) {
			n += v
		}
		return n
	}
	last, since := sum(), time.Now()
	for time.Since(since) < 5*time.Second {
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("controllers still writing after 5 min")
		}
		time.Sleep(500 * time.Millisecond)
		if n := sum(); n != last {
			last, since = n, time.Now()
		}
	}
	return since.Sub(start)
}

// bdTracker follows every BundleDeployment of a management API server through a watch
// (an informer keeping only names, labels and deployment IDs) and records when each appeared
// and when its spec.deploymentID last changed.
type bdTracker struct {
	mu      sync.Mutex
	id      map[string]string // namespace/name → spec.deploymentID
	created map[string]time.Time
	changed map[string]time.Time
}

func trackBundleDeployments(ctx context.Context, m *envtest.Cluster) (*bdTracker, error) {
	t := &bdTracker{id: map[string]string{}, created: map[string]time.Time{}, changed: map[string]time.Time{}}
	trim := func(o any) (any, error) {
		bd, ok := o.(*fleetv1alpha1.BundleDeployment)
		if !ok {
			return o, nil
		}
		return &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: bd.Namespace, Name: bd.Name, ResourceVersion: bd.ResourceVersion},
			Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: bd.Spec.DeploymentID}}, nil
	}
	c, err := cache.New(m.Config, cache.Options{Scheme: server.Scheme(), DefaultTransform: trim})
	if err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &fleetv1alpha1.BundleDeployment{})
	if err != nil {
		return nil, err
	}
	key := func(o any) (string, string) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		bd := o.(*fleetv1alpha1.BundleDeployment)
		return bd.Namespace + "/" + bd.Name, bd.Spec.DeploymentID
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			k, id := key(o)
			now := time.Now()
			t.mu.Lock()
			t.id[k], t.created[k], t.changed[k] = id, now, now
			t.mu.Unlock()
		},
		UpdateFunc: func(_, o any) {
			k, id := key(o)
			t.mu.Lock()
			if t.id[k] != id {
				t.id[k], t.changed[k] = id, time.Now()
			}
			t.mu.Unlock()
		},
		DeleteFunc: func(o any) {
			k, _ := key(o)
			t.mu.Lock()
			delete(t.id, k)
			delete(t.created, k)
			delete(t.changed, k)
			t.mu.Unlock()
		},
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("BundleDeployment watch did not sync")
	}
	return t, nil
}

func bdName(key string) string { _, name, _ := strings.Cut(key, "/"); return name }

// count is the number of BundleDeployments of Bundles whose name matches.
func (t *bdTracker) count(match func(name string) bool) int {
	n, _ := t.appeared(match)
	return n
}

// appeared is the number of BundleDeployments of Bundles whose name matches, and when the last
// of them appeared.
func (t *bdTracker) appeared(match func(name string) bool) (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, last := 0, time.Time{}
	for k, at := range t.created {
		if match(bdName(k)) {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, last
}

// updated is the number of BundleDeployments of matching Bundles whose deployment ID is not the
// one in before, and when the last of them changed.
func (t *bdTracker) updated(before map[string]string, match func(name string) bool) (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, last := 0, time.Time{}
	for k, id := range t.id {
		if match(bdName(k)) && id != before[k] {
			n++
			if at := t.changed[k]; at.After(last) {
				last = at
			}
		}
	}
	return n, last
}

func (t *bdTracker) snapshot() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]string, len(t.id))
	for k, v := range t.id {
		out[k] = v
	}
	return out
}

// namespaces are the namespaces holding BundleDeployments (one per cluster).
func (t *bdTracker) namespaces() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]bool{}
	for k := range t.id {
		ns, _, _ := strings.Cut(k, "/")
		out[ns] = true
	}
	return out
}

// BenchmarkGitOpsDeploy runs Fleet's deployment experiments on this package's downstream
// cluster, whose real agent applies the Bundles (Fleet runs them on however many clusters are
// labelled for its benchmark; one here): create-1-bundledeployment-10-resources (one Bundle
// of 10 ConfigMaps of about 12 KiB) and create-50-bundledeployment-500-resources (50 such
// Bundles), each timed from the Bundles' creation until every one is Ready with its resources
// applied downstream. Fleet creates its Bundles paused and times the unpausing; drover has no
// paused-before-first-deploy state, so creating the one BundleDeployment per Bundle is in the
// time here (milliseconds for one cluster). Run with:
//
//	go test ./internal/gitrepo/integration -run '^$' -bench GitOpsDeploy -benchtime 1x
func BenchmarkGitOpsDeploy(b *testing.B) {
	for _, tc := range []struct {
		name    string
		bundles int
	}{
		{"create-1-bundledeployment-10-resources", 1},
		{"create-50-bundledeployment-500-resources", 50},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := range b.N {
				deployBundles(b, fmt.Sprintf("bm-%d-%d", tc.bundles, i), tc.bundles, 10)
			}
		})
	}
}

// deployBundles creates k Bundles of n ConfigMaps for the downstream cluster and waits until
// all are Ready.
func deployBundles(b *testing.B, prefix string, k, n int) {
	ctx := b.Context()
	payload := strings.Repeat("0123456789ab", 1024) // about 12 KiB, as Fleet's hadoop ConfigMaps
	var bundles []*fleetv1alpha1.Bundle
	for i := range k {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if err := plain.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			b.Fatal(err)
		}
		bn := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
			Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: name, Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
		for j := range n {
			cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bm-%d"},"data":{"payload":%q}}`, j, payload)
			bn.Spec.Resources = append(bn.Spec.Resources, runtime.RawExtension{Raw: []byte(cm)})
		}
		bundles = append(bundles, bn)
		b.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), bn) })
	}
	start := time.Now()
	envtest.Parallel(k, 8, func(i int) {
		if err := mgmt.Client.Create(ctx, bundles[i]); err != nil {
			b.Error(err)
		}
	})
	eventually(b, 300*time.Second, func() error {
		ready := 0
		for _, want := range bundles {
			bn := &fleetv1alpha1.Bundle{}
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(want), bn); err != nil {
				return err
			}
			if bn.Status.ObservedGeneration == bn.Generation && bn.Status.Summary.Ready == 1 &&
				meta.IsStatusConditionTrue(bn.Status.Conditions, fleetv1alpha1.ConditionReady) {
				ready++
			}
		}
		if ready < k {
			return fmt.Errorf("%d/%d Bundles ready", ready, k)
		}
		return nil
	})
	took := time.Since(start)
	applied := 0
	for _, bn := range bundles {
		var cms corev1.ConfigMapList
		if err := plain.Client.List(ctx, &cms, client.InNamespace(bn.Name)); err != nil {
			b.Fatal(err)
		}
		for _, cm := range cms.Items {
			if strings.HasPrefix(cm.Name, "bm-") {
				applied++
			}
		}
	}
	if applied != k*n {
		b.Errorf("%d/%d ConfigMaps downstream", applied, k*n)
	}
	b.ReportMetric(took.Seconds(), "s-all-ready")
	b.Logf("%d Bundle(s) of %d ConfigMaps (%d resources) on 1 cluster with its agent: all Ready after %s", k, n, k*n, took.Round(time.Millisecond))
}
