package integration

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/test/envtest"
)

// BenchmarkJoin imports N existing EKS clusters at once (drover's principal is their creator,
// so it has access entries), all served by the one downstream API server, and measures the time
// until every one has joined (kubeconfig Secret and fleet Cluster: Joined=True) and until every
// agent is deployed downstream (the fleet Cluster's Imported=True), and the management API
// writes per cluster: the join's own, and all of drover's controllers' (hosted import pass,
// join, registration, agent deployment). The agents' registration is not run here
// (BenchmarkRegistration in internal/registration/integration measures it).
//
//	go test ./internal/hosted/join/integration/ -run '^$' -bench 'Join/1000$' -benchtime 1x
func BenchmarkJoin(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				benchJoin(b, n, false)
			}
		})
	}
}

// BenchmarkJoinActive is BenchmarkJoin's join alone: the N clusters are imported with
// spec.fleet.join false, and once every one is active all of them are set to join at once; the
// clock, the writes and the CPU start there.
//
//	go test ./internal/hosted/join/integration/ -run '^$' -bench 'JoinActive/1000$' -benchtime 1x
func BenchmarkJoinActive(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				benchJoin(b, n, true)
			}
		})
	}
}

// benchJoin imports n EKS clusters and measures their join; activeFirst: the clusters are
// active before they are set to join, and only the join is measured.
func benchJoin(b *testing.B, n int, activeFirst bool) {
	ctx := context.Background()
	w := newWorld(b, "eks")
	creator := eksim.NewClient(w.eksURL, "us-west-2", droverKey, droverSecret, func(o *awseks.Options) { o.RetryMaxAttempts = 10 })
	prefix := "b" + suffix()
	parallel(b, n, func(i int) error {
		_, err := creator.CreateCluster(ctx, &awseks.CreateClusterInput{
			Name: aws.String(fmt.Sprintf("%s-%d", prefix, i)), RoleArn: aws.String("arn:aws:iam::123456789012:role/eks"),
			ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{"subnet-a", "subnet-b"}},
		})
		return err
	})
	eventually(b, time.Minute, func() error { // the simulator's clusters become ACTIVE after its delay
		for i := range n {
			if st, _ := w.eks.Cluster("us-west-2", fmt.Sprintf("%s-%d", prefix, i)); st.Status != "ACTIVE" {
				return fmt.Errorf("cluster %d is %q", i, st.Status)
			}
		}
		return nil
	})

	create := func() {
		parallel(b, n, func(i int) error {
			name := fmt.Sprintf("%s-%d", prefix, i)
			fleet := &v1.FleetJoin{AgentNamespace: "a-" + name}
			if activeFirst {
				fleet.Join = ptr.To(false)
			}
			return mgmt.Client.Create(ctx, &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}, Spec: v1.ClusterSpec{
				EKSConfig: &v1.EKSClusterConfig{DisplayName: name, Region: "us-west-2", Imported: true, CredentialSecret: "cred"},
				Fleet:     fleet,
			}})
		})
	}
	if activeFirst {
		create()
		eventually(b, 5*time.Minute, func() error {
			var hosted v1.ClusterList
			if err := cached.List(ctx, &hosted, client.InNamespace(w.ns), client.UnsafeDisableDeepCopy); err != nil {
				return err
			}
			active := 0
			for i := range hosted.Items {
				if hosted.Items[i].Status.Phase == v1.PhaseActive {
					active++
				}
			}
			if active < n {
				return fmt.Errorf("%d/%d hosted clusters active", active, n)
			}
			return nil
		})
	}
	writes0, join0, kinds0, reads0 := mgmtWrites.Load(), joinWrites.Load(), writesByKind.snapshot(), readsByKind.snapshot()
	cpu0, req0 := cpuTimes(), requestCounts(b)
	stopProfiles := profileAPIServers(b)
	defer stopProfiles()
	start := time.Now()
	if activeFirst {
		parallel(b, n, func(i int) error {
			c := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: fmt.Sprintf("%s-%d", prefix, i)}}
			return mgmt.Client.Patch(ctx, c, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"fleet":{"join":true}}}`)))
		})
	} else {
		create()
	}
	var activeAt, joinedAt, deployedAt time.Duration
	deadline := start.Add(10 * time.Minute)
	// progress is logged every 10 s: how far each stage is, to see whether they overlap.
	nextProgress := start.Add(10 * time.Second)
	joined, active := 0, 0
	for joinedAt == 0 || deployedAt == 0 {
		if time.Now().After(deadline) {
			// What the work cost so far says as much as the times on a busy machine.
			logCPU(b, cpu0, n)
			logRequests(b, req0, n)
			b.Fatalf("after 10 min: %d active, %d joined, joined at %v, deployed at %v", active, joined, joinedAt, deployedAt)
		}
		time.Sleep(250 * time.Millisecond) // polling interval of the measurement
		// The measurement reads the manager's cache: listing 1,000 Clusters from the API
		// server four times a second would cost it more than the controllers' work.
		if joinedAt == 0 {
			var hosted v1.ClusterList
			if err := cached.List(ctx, &hosted, client.InNamespace(w.ns), client.UnsafeDisableDeepCopy); err != nil {
				b.Fatal(err)
			}
			joined, active = 0, 0
			for i := range hosted.Items {
				if hosted.Items[i].Status.Phase == v1.PhaseActive {
					active++
				}
				if j := fleetCond(&hosted.Items[i], v1.ConditionJoined); j != nil && j.Status == metav1.ConditionTrue {
					joined++
				}
			}
			if joined == n {
				joinedAt = time.Since(start)
			}
			if active == n && activeAt == 0 {
				activeAt = time.Since(start)
			}
		}
		var fleet fleetv1.ClusterList
		if err := cached.List(ctx, &fleet, client.InNamespace(w.ns), client.UnsafeDisableDeepCopy); err != nil {
			b.Fatal(err)
		}
		deployed := 0
		for i := range fleet.Items {
			if meta.IsStatusConditionTrue(fleet.Items[i].Status.Conditions, fleetv1.ConditionImported) {
				deployed++
			}
		}
		if deployed == n {
			deployedAt = time.Since(start)
		}
		if time.Now().After(nextProgress) {
			nextProgress = nextProgress.Add(10 * time.Second)
			b.Logf("after %2.0f s: %d active, %d joined, %d fleet Clusters, %d agents deployed (load average %s)",
				time.Since(start).Seconds(), active, joined, len(fleet.Items), deployed, loadAverage())
		}
	}
	logCPU(b, cpu0, n)
	logRequests(b, req0, n)
	logReconciles(b)
	kinds := writesByKind.snapshot()
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		if d := kinds[k] - kinds0[k]; d > 0 {
			b.Logf("writes %s: %.2f per cluster", k, float64(d)/float64(n))
		}
	}
	reads := readsByKind.snapshot()
	for _, k := range slices.Sorted(maps.Keys(reads)) {
		if d := reads[k] - reads0[k]; d >= n/2 {
			b.Logf("reads %s: %.2f per cluster", k, float64(d)/float64(n))
		}
	}
	b.ReportMetric(activeAt.Seconds(), "s-all-active")
	b.ReportMetric(joinedAt.Seconds(), "s-all-joined")
	b.ReportMetric(deployedAt.Seconds(), "s-all-agents-deployed")
	b.ReportMetric(float64(joinWrites.Load()-join0)/float64(n), "join-writes/cluster")
	b.ReportMetric(float64(mgmtWrites.Load()-writes0)/float64(n), "mgmt-writes/cluster")
}

// profileAPIServers writes a CPU profile of the management and downstream API servers for the
// measured part to $DROVER_BENCH_PROFILE_DIR (unset: no profile), to find where the time goes:
// go tool pprof -top bin/k8s/kube-apiserver DIR/management.pprof.
func profileAPIServers(b *testing.B) (stop func()) {
	dir := os.Getenv("DROVER_BENCH_PROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for name, c := range map[string]*envtest.Cluster{"management": mgmt, "downstream": downstream} {
		wg.Go(func() {
			rc, err := rest.RESTClientFor(withNegotiatedSerializer(c.Config))
			if err != nil {
				b.Error(err)
				return
			}
			// The API server stops at its "seconds" or when the request is cancelled, and sends
			// the profile only in the first case: ask for long enough, cancel never.
			raw, err := rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", os.Getenv("DROVER_BENCH_PROFILE_SECONDS")).DoRaw(ctx)
			if err != nil {
				b.Logf("%s profile: %v", name, err)
				return
			}
			if err := os.WriteFile(filepath.Join(dir, name+".pprof"), raw, 0o600); err != nil {
				b.Error(err)
			}
		})
	}
	return func() { wg.Wait(); cancel() }
}

func withNegotiatedSerializer(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.GroupVersion = &schema.GroupVersion{}
	c.Timeout = 0
	return c
}

// logReconciles logs each controller's reconciles by result (success, error, requeue_after):
// errors are retried with the workqueue's backoff and shared rate limit, so they cost time.
func logReconciles(b *testing.B) {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "controller_runtime_reconcile_time_seconds" {
			for _, m := range mf.GetMetric() {
				if h := m.GetHistogram(); h.GetSampleCount() > 0 {
					b.Logf("reconcile time %v: mean %.3fs", m.GetLabel(), h.GetSampleSum()/float64(h.GetSampleCount()))
				}
			}
		}
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v > 0 {
				b.Logf("reconciles %v: %v", m.GetLabel(), v)
			}
		}
	}
}

// parallel runs f(0..n-1) on 16 goroutines.
func parallel(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
