package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/test/envtest"
)

// The benchmark runs the controllers in a child process (this test binary, re-executed) so
// that their peak RSS is measured alone.
const (
	benchControllerEnv = "DROVER_BENCH_CONTROLLER"
	benchKubeconfigEnv = "DROVER_BENCH_KUBECONFIG"
)

func runBenchController() int {
	if os.Getenv("DROVER_BENCH_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(benchKubeconfigEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if path := os.Getenv("DROVER_BENCH_CONTROLLER_PROFILE"); path != "" { // the controllers' CPU profile, whole run
		if f, err := os.Create(path); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
		}
	}
	metrics := os.Getenv("DROVER_BENCH_METRICS")
	if metrics == "" {
		metrics = "0"
	}
	done, err := startControllers(ctx, cfg, false, metrics)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-done
	return 0
}

// BenchmarkRegistration registers N agents (distinct clientIDs) at once against one management
// API server and reports: seconds until all registered, p50/p99 per agent, objects per cluster
// and the controllers' peak RSS. Run with:
//
//	go test ./internal/registration/integration -run '^$' -bench Registration -benchtime 1x
func BenchmarkRegistration(b *testing.B) {
	for _, n := range []int{100, 500, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				benchRegistration(b, n)
			}
		})
	}
}

func benchRegistration(b *testing.B, n int) {
	ctx := b.Context()
	// A management cluster of its own, with only the child's controllers on it.
	m, err := startManagement("bench-management")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = m.Stop() }()
	if err := writeConfig(ctx, m.Client, m.Config.Host, m.Config.CAData); err != nil {
		b.Fatal(err)
	}
	kc, err := local.Kubeconfig(controllerConfig(b, m))
	if err != nil {
		b.Fatal(err)
	}
	kcPath := filepath.Join(b.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		b.Fatal(err)
	}
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), benchControllerEnv+"=1", benchKubeconfigEnv+"="+kcPath)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = child.Process.Signal(syscall.SIGTERM); _ = child.Wait() }()

	ws := fleetv1alpha1.DefaultWorkspaceNamespace
	eventually(b, 30*time.Second, func() error { return m.Client.Get(ctx, client.ObjectKey{Name: ws}, &corev1.Namespace{}) })
	tok := &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "bench"},
		Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}}}
	if err := m.Client.Create(ctx, tok); err != nil {
		b.Fatal(err)
	}
	values := &corev1.Secret{}
	eventually(b, 30*time.Second, func() error { return m.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "bench"}, values) })

	// Downstream: one agent namespace with a bootstrap secret per agent (not timed).
	prefix := fmt.Sprintf("bench-%d-%d-", n, time.Now().UnixNano()%100000)
	nss := make([]string, n)
	envtest.Parallel(n, 32, func(i int) {
		nss[i] = prefix + strconv.Itoa(i)
		if err := downstream.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nss[i]}}); err != nil {
			b.Error(err)
			return
		}
		if err := downstream.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nss[i], Name: manifests.BootstrapSecret}, Data: values.Data}); err != nil {
			b.Error(err)
		}
	})
	if b.Failed() {
		return
	}

	if path := os.Getenv("DROVER_BENCH_PROFILE"); path != "" {
		// A CPU profile of the management API server while the agents register.
		go func() {
			body, err := m.Clientset.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "20").DoRaw(context.Background())
			if err == nil {
				err = os.WriteFile(path, body, 0o600)
			}
			if err != nil {
				b.Log("profile:", err)
			}
		}()
	}
	childCPU0, selfCPU0 := envtest.CPUSeconds(child.Process.Pid), selfCPU()
	// Each agent has a downstream cluster of its own in reality: no shared client-side rate limit.
	dcfg := rest.CopyConfig(downstream.Config)
	dcfg.QPS = -1
	down, err := client.New(dcfg, client.Options{Scheme: register.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	durations := make([]time.Duration, n)
	envtest.Parallel(n, n, func(i int) {
		t0 := time.Now()
		if _, err := register.Ensure(ctx, register.Options{Downstream: down, Namespace: nss[i], ClientID: prefix + strconv.Itoa(i), WaitTimeout: 5 * time.Minute}); err != nil {
			b.Errorf("agent %d: %v", i, err)
		}
		durations[i] = time.Since(t0)
	})
	total := time.Since(start)
	b.StopTimer()
	// The grant finishes its bookkeeping (statuses, superseded registrations) behind the other
	// registrations: wait for it before counting objects, and report when it was done.
	eventually(b, 5*time.Minute, func() error {
		var regs fleetv1alpha1.ClusterRegistrationList
		if err := m.Client.List(ctx, &regs); err != nil {
			return err
		}
		granted := 0
		for _, cr := range regs.Items {
			if cr.Status.Granted {
				granted++
			}
		}
		if granted < n {
			return fmt.Errorf("%d/%d registrations granted", granted, n)
		}
		return nil
	})
	bookkeeping := time.Since(start)
	if addr := os.Getenv("DROVER_BENCH_METRICS"); addr != "" {
		logControllerMetrics(b, addr)
	}
	rss := envtest.PeakRSSMB(child.Process.Pid)
	b.Logf("CPU seconds during the run: controllers %.1f, this process (agents, downstream clients) %.1f", envtest.CPUSeconds(child.Process.Pid)-childCPU0, selfCPU()-selfCPU0)
	slices.Sort(durations)
	p := func(q float64) float64 { return durations[min(n-1, int(q*float64(n)))].Seconds() }

	// Where the time goes: agent start → ClusterRegistration created → granted (1 s resolution).
	var regs fleetv1alpha1.ClusterRegistrationList
	if err := m.Client.List(ctx, &regs); err == nil && len(regs.Items) > 0 {
		var created, granted []float64
		for _, cr := range regs.Items {
			created = append(created, cr.CreationTimestamp.Sub(start.Truncate(time.Second)).Seconds())
			if c := meta.FindStatusCondition(cr.Status.Conditions, fleetv1alpha1.ConditionGranted); c != nil {
				granted = append(granted, c.LastTransitionTime.Sub(cr.CreationTimestamp.Time).Seconds())
			}
		}
		slices.Sort(created)
		slices.Sort(granted)
		q := func(v []float64, f float64) float64 { return v[min(len(v)-1, int(f*float64(len(v))))] }
		b.Logf("ClusterRegistration created after start: p50 %.0fs p99 %.0fs; granted after creation: p50 %.0fs p99 %.0fs",
			q(created, .5), q(created, .99), q(granted, .5), q(granted, .99))
	}
	counts := map[string]int{}
	count := func(name string, list client.ObjectList, opts ...client.ListOption) {
		if err := m.Client.List(ctx, list, opts...); err != nil {
			b.Fatal(err)
		}
		counts[name] = len(mustItems(list))
	}
	managed := client.MatchingLabels{fleetv1alpha1.ManagedLabel: "true"}
	count("ClusterRegistration", &fleetv1alpha1.ClusterRegistrationList{})
	count("Cluster", &fleetv1alpha1.ClusterList{})
	count("ServiceAccount", &corev1.ServiceAccountList{}, managed)
	count("Role", &rbacv1.RoleList{}, managed)
	count("RoleBinding", &rbacv1.RoleBindingList{}, managed)
	count("Secret", &corev1.SecretList{}, managed)
	count("Namespace", &corev1.NamespaceList{}, client.HasLabels{fleetv1alpha1.ClusterUIDLabel})
	var per []string
	for _, k := range []string{"ClusterRegistration", "Cluster", "Namespace", "ServiceAccount", "Role", "RoleBinding", "Secret"} {
		per = append(per, fmt.Sprintf("%s=%.2f", k, float64(counts[k])/float64(n)))
	}
	b.ReportMetric(total.Seconds(), "s-all")
	b.ReportMetric(p(0.50), "s-p50")
	b.ReportMetric(p(0.99), "s-p99")
	b.ReportMetric(rss, "MB-controller-peak-RSS")
	b.ReportMetric(bookkeeping.Seconds(), "s-all-granted")
	b.Logf("N=%d all registered in %.1fs, p50 %.1fs, p99 %.1fs, max %.1fs, every grant's bookkeeping done after %.1fs, controller peak RSS %.0f MB; objects per cluster (incl. the shared import identity): %s",
		n, total.Seconds(), p(0.5), p(0.99), durations[n-1].Seconds(), bookkeeping.Seconds(), rss, strings.Join(per, " "))
	if counts["ClusterRegistration"] != n || counts["Cluster"] != n {
		b.Errorf("%d registrations and %d clusters for %d agents", counts["ClusterRegistration"], counts["Cluster"], n)
	}
	if os.Getenv("DROVER_BENCH_REQUESTS") != "" {
		logRequestCounts(b, m)
	}
	// Clean downstream up for the next size.
	envtest.Parallel(n, 32, func(i int) {
		_ = downstream.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nss[i]}})
	})
}

// controllerConfig is the identity the controllers run as: a ServiceAccount bound to
// cluster-admin, as drover runs in a real management cluster, not the envtest admin (whose
// system:masters group API Priority and Fairness exempts, letting the controllers crowd the
// agents' requests out).
func controllerConfig(b *testing.B, m *envtest.Cluster) *rest.Config {
	ctx := b.Context()
	const ns, name = "kube-system", "drover"
	if _, err := m.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "drover"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	if _, err := m.Clientset.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	ttl := int64(3600)
	tr, err := m.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(m.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

func mustItems(list client.ObjectList) []any {
	switch l := list.(type) {
	case *fleetv1alpha1.ClusterRegistrationList:
		return toAny(l.Items)
	case *fleetv1alpha1.ClusterList:
		return toAny(l.Items)
	case *corev1.ServiceAccountList:
		return toAny(l.Items)
	case *rbacv1.RoleList:
		return toAny(l.Items)
	case *rbacv1.RoleBindingList:
		return toAny(l.Items)
	case *corev1.SecretList:
		return toAny(l.Items)
	case *corev1.NamespaceList:
		return toAny(l.Items)
	}
	panic(fmt.Sprintf("unexpected list %T", list))
}

func toAny[T any](items []T) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = items[i]
	}
	return out
}

// logRequestCounts logs the management API server's request counts by verb, resource and code.
func logRequestCounts(b *testing.B, m *envtest.Cluster) {
	body, err := m.Clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	if err != nil {
		b.Log(err)
		return
	}
	var out strings.Builder
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, "apiserver_request_total{") && !strings.HasSuffix(line, " 0") {
			out.WriteString(line + "\n")
		}
	}
	// b.Log truncates long output: the counts go to the file DROVER_BENCH_REQUESTS names.
	if err := os.WriteFile(os.Getenv("DROVER_BENCH_REQUESTS"), []byte(out.String()), 0o600); err != nil {
		b.Log(err)
	}
}

func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// logControllerMetrics logs the controllers' client-side request latency and reconcile time.
func logControllerMetrics(b *testing.B, addr string) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Log(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, "rest_client_request_duration_seconds_sum") || strings.HasPrefix(line, "rest_client_request_duration_seconds_count") ||
			strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_sum") || strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_count") ||
			strings.HasPrefix(line, "workqueue_queue_duration_seconds_sum") || strings.HasPrefix(line, "rest_client_rate_limiter_duration_seconds_sum") {
			b.Log(line)
		}
	}
}
