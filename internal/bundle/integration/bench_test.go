package integration

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/registration"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/internal/registration/names"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/test/envtest"
)

// The benchmark runs the controllers in a child process (this test binary, re-executed) so
// that their peak RSS is measured alone.
const (
	benchControllerEnv = "DROVER_BUNDLE_BENCH_CONTROLLER"
	benchKubeconfigEnv = "DROVER_BUNDLE_BENCH_KUBECONFIG"
)

func init() {
	if os.Getenv(benchControllerEnv) != "" {
		os.Exit(runBenchController())
	}
}

func runBenchController() int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(benchKubeconfigEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: server.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err == nil {
		err = registration.Setup(ctx, mgr, mgr.GetClient(), registration.Options{})
	}
	if err == nil {
		err = bundle.Setup(mgr, bundle.Options{ManageAgents: true})
	}
	if err == nil {
		err = mgr.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// BenchmarkBundle1000Clusters targets one Bundle at 1,000 registered Clusters (created directly;
// agents simulated in-process by writing BundleDeployment status) and reports the seconds until
// every BundleDeployment exists and until the Bundle reports all ready, the controllers' peak
// RSS, and how often the content is stored. Run with:
//
//	go test ./internal/bundle/integration -run '^$' -bench Bundle1000 -benchtime 1x
func BenchmarkBundle1000Clusters(b *testing.B) {
	for range b.N {
		benchBundle(b, 1000)
	}
}

func benchBundle(b *testing.B, n int) {
	ctx := b.Context()
	m, err := startManagement()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = m.Stop() }()
	kc, err := local.Kubeconfig(m.Config)
	if err != nil {
		b.Fatal(err)
	}
	kcPath := filepath.Join(b.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		b.Fatal(err)
	}
	child := envtest.StartChild(b, benchControllerEnv+"=1", benchKubeconfigEnv+"="+kcPath)

	// Not timed: n registered Clusters (the cluster controller creates their namespaces). The
	// agents check in (one heartbeat each), so every cluster also gets its agent Bundle, as in a
	// real fleet; wait for those BundleDeployments too (not timed).
	envtest.RegisterBenchClusters(b, m.Client, n)
	agentBundlesStart := time.Now()
	eventually(b, 120*time.Second, func() error {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("BundleDeploymentList"))
		if err := m.Client.List(ctx, &list); err != nil {
			return err
		}
		if len(list.Items) < n {
			return fmt.Errorf("%d/%d agent BundleDeployments", len(list.Items), n)
		}
		return nil
	})
	agentBundles := time.Since(agentBundlesStart)

	// A Bundle of 20 ConfigMaps of 10 KiB each (200 KiB of content).
	var objs []*corev1.ConfigMap
	for i := range 20 {
		objs = append(objs, configMap("", fmt.Sprintf("bench-%d", i), map[string]string{"data": strings.Repeat("x", 10<<10)}))
	}
	bn := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "bench"},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: "default",
			Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: envtest.BenchClusterLabels()}}}}}
	for _, o := range objs {
		bn.Spec.Resources = append(bn.Spec.Resources, raw(b, o)...)
	}
	start := time.Now()
	if err := m.Client.Create(ctx, bn); err != nil {
		b.Fatal(err)
	}

	// Simulated agents: every BundleDeployment that appears is reported applied and ready.
	var (
		mu        sync.Mutex
		reported  = map[string]bool{}
		allExist  time.Duration
		agentsErr error
	)
	agentsDone := make(chan struct{})
	go func() {
		defer close(agentsDone)
		deadline := time.Now().Add(120 * time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			var list fleetv1alpha1.BundleDeploymentList
			if err := m.Client.List(ctx, &list, client.MatchingLabels{bundle.BundleNameLabel: "bench"}); err != nil {
				agentsErr = err
				return
			}
			var todo []*fleetv1alpha1.BundleDeployment
			for i := range list.Items {
				if !reported[list.Items[i].Namespace] {
					todo = append(todo, &list.Items[i])
				}
			}
			envtest.Parallel(len(todo), 32, func(i int) {
				bd := todo[i]
				before := bd.DeepCopy()
				bd.Status.AppliedDeploymentID, bd.Status.Ready, bd.Status.NonModified = bd.Spec.DeploymentID, true, true
				meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionApplied, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonSucceeded, ObservedGeneration: bd.Generation})
				if err := m.Client.Status().Patch(ctx, bd, client.MergeFrom(before)); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				reported[bd.Namespace] = true
				mu.Unlock()
			})
			if len(reported) == n {
				return
			}
			time.Sleep(100 * time.Millisecond) // polling interval of the simulated agents
		}
		agentsErr = fmt.Errorf("simulated agents reported %d/%d", len(reported), n)
	}()
	// Existence is measured on its own, not by the agents' polling loop.
	eventually(b, 60*time.Second, func() error {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("BundleDeploymentList"))
		if err := m.Client.List(ctx, &list, client.MatchingLabels{bundle.BundleNameLabel: "bench"}); err != nil {
			return err
		}
		if len(list.Items) < n {
			return fmt.Errorf("%d/%d BundleDeployments", len(list.Items), n)
		}
		allExist = time.Since(start)
		return nil
	})
	var allReady time.Duration
	eventually(b, 180*time.Second, func() error {
		got := &fleetv1alpha1.Bundle{}
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(bn), got); err != nil {
			return err
		}
		if s := got.Status.Summary; s.Ready != n || s.DesiredReady != n {
			return fmt.Errorf("bundle summary ready %d/%d", s.Ready, s.DesiredReady)
		}
		allReady = time.Since(start)
		return nil
	})
	<-agentsDone
	if agentsErr != nil {
		b.Fatal(agentsErr)
	}

	// Storage: one BundleContent; the BundleDeployments only reference it; one content Role
	// per cluster naming exactly it.
	var all fleetv1alpha1.BundleContentList
	if err := m.Client.List(ctx, &all, client.InNamespace(ws)); err != nil {
		b.Fatal(err)
	}
	// Expected: one content for the bench Bundle and one shared by the 1,000 identical agent Bundles.
	if len(all.Items) != 2 {
		b.Errorf("%d BundleContents, want 2 (bench content, shared agent content)", len(all.Items))
	}
	got := &fleetv1alpha1.Bundle{}
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(bn), got); err != nil {
		b.Fatal(err)
	}
	var contents fleetv1alpha1.BundleContentList
	for _, c := range all.Items {
		if c.Name == got.Status.Content {
			contents.Items = append(contents.Items, c)
		}
	}
	var bds fleetv1alpha1.BundleDeploymentList
	if err := m.Client.List(ctx, &bds, client.MatchingLabels{bundle.BundleNameLabel: "bench"}); err != nil {
		b.Fatal(err)
	}
	inline := 0
	for _, bd := range bds.Items {
		inline += len(bd.Spec.Manifests)
		if bd.Spec.Content == nil || bd.Spec.Content.Name != contents.Items[0].Name {
			b.Fatalf("BundleDeployment %s/%s does not reference the content", bd.Namespace, bd.Name)
		}
	}
	role := &rbacv1.Role{}
	var rolesDone time.Duration
	eventually(b, 60*time.Second, func() error {
		var roles rbacv1.RoleList
		if err := m.Client.List(ctx, &roles, client.InNamespace(ws)); err != nil {
			return err
		}
		k := 0
		for _, r := range roles.Items {
			if strings.HasPrefix(r.Name, "drover-cluster-") && len(r.Rules) == 2 && len(r.Rules[1].ResourceNames) == 2 {
				k++
			}
		}
		if k < n {
			return fmt.Errorf("%d/%d content roles", k, n)
		}
		rolesDone = time.Since(start)
		return m.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: names.ClusterAccessRole("c-0000")}, role)
	})
	if len(contents.Items) != 1 || inline != 0 || len(role.Rules) != 2 || !slices.Contains(role.Rules[1].ResourceNames, contents.Items[0].Name) {
		b.Fatalf("content stored %d times, %d inline manifests, content role %+v", len(contents.Items), inline, role.Rules)
	}
	child.Stop()
	rss := child.PeakRSSMB()
	b.ReportMetric(allExist.Seconds(), "s-all-bd-exist")
	b.ReportMetric(allReady.Seconds(), "s-all-ready")
	b.ReportMetric(rss, "MB-controller-peak-rss")
	b.ReportMetric(rolesDone.Seconds(), "s-all-content-roles")
	b.ReportMetric(float64(len(contents.Items)), "content-copies")
	b.ReportMetric(agentBundles.Seconds(), "s-agent-bundle-bds-exist")
	b.Logf("%d clusters: %d agent Bundles' BundleDeployments existed %s after check-in", n, n, agentBundles.Round(time.Millisecond))
	b.Logf("%d clusters: every BundleDeployment exists after %s, all ready after %s, every content Role written after %s; controllers peak RSS %.0f MB; content (%d KiB) stored %d time(s), BundleDeployments inline manifests %d",
		n, allExist.Round(time.Millisecond), allReady.Round(time.Millisecond), rolesDone.Round(time.Millisecond), rss, len(contentBytes(contents.Items[0]))>>10, len(contents.Items), inline)
	if allExist > 10*time.Second {
		b.Errorf("BundleDeployments took %s to exist, target 10s", allExist)
	}
}

func contentBytes(c fleetv1alpha1.BundleContent) []byte {
	var out []byte
	for _, m := range c.Manifests {
		out = append(out, m.Raw...)
	}
	return out
}
