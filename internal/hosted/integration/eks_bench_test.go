package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/server"
	sim "github.com/droverhq/drover/pkg/cloudsim/eks"
)

// BenchmarkRefreshRound measures one full refresh round of N imported EKS clusters (one node
// group each) under one reconciler with 8 workers and a non-binding rate limit: EKS calls per
// cluster, wall time, CPU per cluster and live heap of this process (reconciler, informer cache,
// SDK clients; the simulator runs in a child process) and peak RSS. It also checks that a pass between refreshes makes no call.
func BenchmarkRefreshRound(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				refreshRound(b, n)
			}
		})
	}
}

func refreshRound(b *testing.B, n int) {
	ctx := context.Background()
	ns := mgmt.Namespace(b)
	start := time.Now()
	// The simulator runs in its own process, so the figures below are drover's alone.
	s := startEKSSimProcess(b)
	ts := s
	console := sim.NewClient(ts.URL, "us-west-2", sim.DefaultAccessKeyID, sim.DefaultSecretAccessKey)
	if err := createSecret(ns, "aws", map[string]string{eks.KeyAccessKeyID: sim.DefaultAccessKeyID, eks.KeySecretAccessKey: sim.DefaultSecretAccessKey, eks.KeyEndpoint: ts.URL}); err != nil {
		b.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(start)
	// Reads come from an informer cache configured as drover server's.
	cached := cachedClient(b)
	r := &hosted.Reconciler{Client: cached, Providers: []hosted.Provider{eks.Provider{}}, Clock: clock,
		RefreshInterval: time.Minute, PollInterval: 10 * time.Second, Limits: &hosted.Limits{}}

	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	parallel(n, func(i int) {
		name := fmt.Sprintf("c%05d", i)
		if _, err := console.CreateCluster(ctx, &awseks.CreateClusterInput{Name: aws.String(name), Version: aws.String("1.32"),
			RoleArn: aws.String("arn:aws:iam::123456789012:role/eks"), ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{"subnet-a", "subnet-b"}}}); err != nil {
			b.Error(err)
		}
		if _, err := console.CreateNodegroup(ctx, &awseks.CreateNodegroupInput{ClusterName: aws.String(name), NodegroupName: aws.String("ng"),
			NodeRole: aws.String("arn:aws:iam::123456789012:role/node"), Subnets: []string{"subnet-a"}}); err != nil && !strings.Contains(err.Error(), "CREATING") {
			b.Error(err)
		}
		c := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{
			DisplayName: name, Region: "us-west-2", Imported: true, CredentialSecret: "aws"}}}
		if err := mgmt.Client.Create(ctx, c); err != nil {
			b.Error(err)
		}
	})
	reconcileAll := func() {
		parallel(n, func(i int) {
			_, _ = r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("c%05d", i)}})
		})
	}
	for deadline := time.Now().Add(time.Minute); ; {
		var list v1.ClusterList
		if err := cached.List(ctx, &list, client.InNamespace(ns)); err == nil && len(list.Items) == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("cache did not see every Cluster")
		}
		time.Sleep(50 * time.Millisecond)
	}
	reconcileAll() // import
	reconcileAll() // settle phases
	clock.Step(2 * time.Minute)

	s.Counters().Reset()
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	if f := os.Getenv("DROVER_BENCH_CPUPROFILE"); f != "" { // profile the measured round only
		out, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		_ = pprof.StartCPUProfile(out)
		defer func() { pprof.StopCPUProfile(); _ = out.Close() }()
	}
	if f := os.Getenv("DROVER_BENCH_MEMPROFILE"); f != "" { // allocations of the measured round: diff f against f.base
		writeAllocs(b, f+".base")
		defer writeAllocs(b, f)
	}
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	reconcileAll()
	wall := time.Since(t0)
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	calls := s.Counters().Total()
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond

	s.Counters().Reset()
	reconcileAll() // between refreshes: nothing is due
	idleCalls := s.Counters().Total()

	b.ReportMetric(float64(calls)/float64(n), "eks-calls/cluster/refresh")
	b.ReportMetric(float64(idleCalls)/float64(n), "eks-calls/cluster/idle-pass")
	b.ReportMetric(wall.Seconds(), "s/round")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/cluster")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/1e3/float64(n), "alloc-KB/cluster/refresh")

	b.ReportMetric(float64(peakRSS())/1e6, "peak-RSS-MB")
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(int64(ms.HeapInuse)-int64(base.HeapInuse))/float64(n)/1e3, "heap-growth-KB/cluster")
}

func writeAllocs(b *testing.B, path string) {
	runtime.GC()
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = out.Close() }()
	if err := pprof.Lookup("allocs").WriteTo(out, 0); err != nil {
		b.Fatal(err)
	}
}

func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	ch := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		ch <- i
	}
	close(ch)
	wg.Wait()
}

func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var kb int64
			_, _ = fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%d", &kb)
			return kb * 1000
		}
	}
	return 0
}

func cachedClient(b *testing.B) client.Client {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	c, err := cache.New(mgmt.Config, cache.Options{Scheme: server.Scheme(), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	for _, o := range []client.Object{&v1.Cluster{}, &corev1.Secret{}} {
		if _, err := c.GetInformer(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	cl, err := client.New(mgmt.Config, client.Options{Scheme: server.Scheme(), Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// simProcess is the EKS simulator in a child process (this test binary, re-executed).
type simProcess struct {
	URL   string
	stdin io.WriteCloser
}

const simChildEnv = "DROVER_EKS_SIM_CHILD"

// runEKSSimChild serves the EKS simulator until stdin closes, printing its URL first. It also
// serves /_counters (JSON) and /_reset for the parent.
func runEKSSimChild() {
	s := sim.New(sim.Options{Delay: -1})
	mux := http.NewServeMux()
	mux.HandleFunc("/_counters", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(s.Counters().Snapshot()) })
	mux.HandleFunc("/_reset", func(http.ResponseWriter, *http.Request) { s.Counters().Reset() })
	mux.Handle("/", s)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() { _ = http.Serve(l, mux) }() //nolint:gosec // test-only loopback server
	fmt.Println("http://" + l.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func startEKSSimProcess(b *testing.B) *simProcess {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), simChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("simulator child: %v", err)
	}
	return &simProcess{URL: strings.TrimSpace(line), stdin: stdin}
}

func (p *simProcess) counts() map[string]int64 {
	resp, err := http.Get(p.URL + "/_counters")
	if err != nil {
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	m := map[string]int64{}
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return m
}

// Counters mirrors the in-process simulator's API for the benchmark.
func (p *simProcess) Counters() *simCounters { return &simCounters{p} }

type simCounters struct{ p *simProcess }

func (c *simCounters) Reset() {
	if resp, err := http.Post(c.p.URL+"/_reset", "text/plain", nil); err == nil {
		_ = resp.Body.Close()
	}
}

func (c *simCounters) Total() int64 {
	var n int64
	for _, v := range c.p.counts() {
		n += v
	}
	return n
}

// BenchmarkEKSCallFloor is the floor under the refresh benchmark's CPU figure: the CPU this
// process spends per DescribeCluster through aws-sdk-go-v2 (middleware stack, SigV4, JSON),
// next to a bare net/http GET over the same keep-alive transport, 8 workers, the simulator in
// a child process. A refresh makes three such calls for a cluster with one node group.
func BenchmarkEKSCallFloor(b *testing.B) {
	ctx := context.Background()
	s := startEKSSimProcess(b)
	console := sim.NewClient(s.URL, "us-west-2", sim.DefaultAccessKeyID, sim.DefaultSecretAccessKey)
	if _, err := console.CreateCluster(ctx, &awseks.CreateClusterInput{Name: aws.String("floor"), Version: aws.String("1.32"),
		RoleArn: aws.String("arn:aws:iam::123456789012:role/eks"), ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{"subnet-a"}}}); err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: hosted.SharedTransport()}
	c := awseks.NewFromConfig(aws.Config{Region: "us-west-2", HTTPClient: hc,
		Credentials: credentials.NewStaticCredentialsProvider(sim.DefaultAccessKeyID, sim.DefaultSecretAccessKey, "")},
		func(o *awseks.Options) { o.BaseEndpoint = aws.String(s.URL) })
	calls := map[string]func() error{
		"net-http-GET": func() error {
			resp, err := hc.Get(s.URL + "/clusters/floor")
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		},
		"sdk-DescribeCluster": func() error {
			_, err := c.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String("floor")})
			return err
		},
	}
	for _, name := range []string{"net-http-GET", "sdk-DescribeCluster"} {
		call := calls[name]
		b.Run(name, func(b *testing.B) {
			const n = 20000
			parallel(1000, func(int) { _ = call() }) // warm connections
			var before, after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			for b.Loop() {
				parallel(n, func(int) {
					if err := call(); err != nil {
						b.Error(err)
					}
				})
			}
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(n*b.N), "cpu-µs/call")
		})
	}
}
