package integration

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/gke"
	gkesim "github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// BenchmarkGKERefreshRound measures one full refresh round of N imported GKE clusters (one node
// pool each, one project) under one reconciler with 8 workers and a non-binding rate limit: GKE
// calls per cluster (target: exactly 1, clusters.get), wall time, process CPU per cluster
// (reconciler, API client and the in-process simulator together) and peak RSS. It also checks
// that a pass between refreshes makes no call.
func BenchmarkGKERefreshRound(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				gkeRefreshRound(b, n)
			}
		})
	}
}

func gkeRefreshRound(b *testing.B, n int) {
	ctx := context.Background()
	ns := mgmt.Namespace(b)
	start := time.Now()
	simTime := simcore.NewManualClock(start)
	ts := gkesim.NewTestServer(b, gkesim.Options{Clock: simTime})
	key, err := ts.NewServiceAccountKey("drover@drover-test.iam.gserviceaccount.com", gkeProject)
	if err != nil {
		b.Fatal(err)
	}
	console, err := container.NewService(ctx, ts.ClientOptions(key)...)
	if err != nil {
		b.Fatal(err)
	}
	if err := createSecret(ns, "gcp", map[string]string{gke.KeyServiceAccountJSON: string(key), gke.KeyEndpoint: ts.URL}); err != nil {
		b.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(start)
	cached := cachedClient(b) // reads come from an informer cache, as under the manager
	r := &hosted.Reconciler{Client: cached, Providers: []hosted.Provider{gke.Provider{}}, Clock: clock,
		RefreshInterval: time.Minute, PollInterval: 10 * time.Second, Limits: &hosted.Limits{}}

	parent := "projects/" + gkeProject + "/locations/" + gkeRegion
	parallel(n, func(i int) {
		name := fmt.Sprintf("c%05d", i)
		if _, err := console.Projects.Locations.Clusters.Create(parent, &container.CreateClusterRequest{Cluster: &container.Cluster{
			Name: name, NodePools: []*container.NodePool{{Name: "default-pool", InitialNodeCount: 1}},
		}}).Context(ctx).Do(); err != nil {
			b.Error(err)
		}
		c := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ClusterSpec{GKEConfig: &v1.GKEClusterConfig{
			ClusterName: name, ProjectID: gkeProject, Region: gkeRegion, Imported: true, CredentialSecret: "gcp"}}}
		if err := mgmt.Client.Create(ctx, c); err != nil {
			b.Error(err)
		}
	})
	simTime.Advance(time.Minute) // every create operation is done
	reconcileAll := func() {
		parallel(n, func(i int) {
			_, _ = r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("c%05d", i)}})
		})
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var list v1.ClusterList
		err := cached.List(ctx, &list, client.InNamespace(ns))
		return err == nil && len(list.Items) == n, nil
	}); err != nil {
		b.Fatal("cache did not see every Cluster")
	}
	reconcileAll() // import
	reconcileAll() // settle phases
	clock.Step(2 * time.Minute)

	ts.Counters().Reset()
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	t0 := time.Now()
	reconcileAll()
	wall := time.Since(t0)
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	calls, gets := ts.Counters().Total(), ts.Counters().Get("clusters.get")
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond

	ts.Counters().Reset()
	reconcileAll() // between refreshes: nothing is due
	idleCalls := ts.Counters().Total()

	var active int
	var list v1.ClusterList
	if err := mgmt.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	for _, c := range list.Items {
		if c.Status.Phase == v1.PhaseActive {
			active++
		}
	}
	if active != n || gets != int64(n) {
		b.Fatalf("%d of %d clusters active, %d clusters.get for %d clusters", active, n, gets, n)
	}

	b.ReportMetric(float64(calls)/float64(n), "gke-calls/cluster/refresh")
	b.ReportMetric(float64(idleCalls)/float64(n), "gke-calls/cluster/idle-pass")
	b.ReportMetric(wall.Seconds(), "s/round")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/cluster")
	b.ReportMetric(float64(peakRSS())/1e6, "peak-RSS-MB")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/float64(n)/1e3, "heap-KB/cluster")
}
