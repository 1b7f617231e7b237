package integration

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	aksim "github.com/droverhq/drover/pkg/cloudsim/aks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// BenchmarkAKSRefreshRound is BenchmarkRefreshRound for AKS: one full refresh round of N
// imported AKS clusters (two agent pools each, one autoscaled) under one reconciler with 8
// workers and a non-binding rate limit, through the real azidentity and armcontainerservice
// clients over HTTPS. It reports ARM calls per cluster, wall time, process CPU per cluster
// (reconciler, SDK and the in-process simulator together), heap and peak RSS, and checks that a
// pass between refreshes makes no call.
func BenchmarkAKSRefreshRound(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				aksRefreshRound(b, n)
			}
		})
	}
}

func aksRefreshRound(b *testing.B, n int) {
	ctx := context.Background()
	ns := mgmt.Namespace(b)
	start := time.Now()
	simTime := simcore.NewManualClock(start)
	s := aksim.NewTestServer(b, aksim.Options{
		Credentials: []aksim.Credential{{TenantID: aksTenant, ClientID: aksClient, ClientSecret: aksSecret, Subscriptions: []string{aksSub}}},
		Clock:       simTime, Delay: time.Second,
	})
	cred, err := azidentity.NewClientSecretCredential(aksTenant, aksClient, aksSecret, s.CredentialOptions())
	if err != nil {
		b.Fatal(err)
	}
	console, err := armcontainerservice.NewManagedClustersClient(aksSub, cred, s.ARMClientOptions())
	if err != nil {
		b.Fatal(err)
	}
	if err := createSecret(ns, "azure", map[string]string{
		aks.KeyTenantID: aksTenant, aks.KeySubscriptionID: aksSub, aks.KeyClientID: aksClient, aks.KeyClientSecret: aksSecret,
		aks.KeyAuthorityHost: s.URL(), aks.KeyResourceManagerEndpoint: s.URL(), aks.KeyCAPEM: string(s.CAPEM()),
	}); err != nil {
		b.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(start)
	cached := cachedClient(b)
	r := &hosted.Reconciler{Client: cached, Providers: []hosted.Provider{aks.Provider{}}, Clock: clock,
		RefreshInterval: time.Minute, PollInterval: 10 * time.Second, Limits: &hosted.Limits{}}

	parallel(n, func(i int) {
		name := fmt.Sprintf("c%05d", i)
		mc := armcontainerservice.ManagedCluster{
			Location: to.Ptr(aksLocation), Tags: map[string]*string{"team": to.Ptr("platform")},
			Properties: &armcontainerservice.ManagedClusterProperties{
				DNSPrefix: to.Ptr(name), KubernetesVersion: to.Ptr("1.32"),
				AgentPoolProfiles: []*armcontainerservice.ManagedClusterAgentPoolProfile{
					{Name: to.Ptr("system"), Mode: to.Ptr(armcontainerservice.AgentPoolModeSystem), Count: to.Ptr[int32](3)},
					{Name: to.Ptr("auto"), Mode: to.Ptr(armcontainerservice.AgentPoolModeUser), EnableAutoScaling: to.Ptr(true), MinCount: to.Ptr[int32](1), MaxCount: to.Ptr[int32](5)},
				},
			},
		}
		if _, err := console.BeginCreateOrUpdate(ctx, aksRG, name, mc, nil); err != nil {
			b.Error(err)
		}
		c := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ClusterSpec{AKSConfig: &v1.AKSClusterConfig{
			ClusterName: name, ResourceGroup: aksRG, ResourceLocation: aksLocation, Imported: true, CredentialSecret: "azure"}}}
		if err := mgmt.Client.Create(ctx, c); err != nil {
			b.Error(err)
		}
	})
	simTime.Advance(time.Minute) // every creation completes
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
		time.Sleep(50 * time.Millisecond) // polling the informer cache, not synchronising with drover
	}
	reconcileAll() // import
	reconcileAll() // settle phases
	clock.Step(2 * time.Minute)

	s.Counters().Reset()
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	t0 := time.Now()
	reconcileAll()
	wall := time.Since(t0)
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	calls := s.Counters().Total()
	gets := s.Counters().Get("ManagedClusters.Get")
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond

	s.Counters().Reset()
	reconcileAll() // between refreshes: nothing is due
	idleCalls := s.Counters().Total()

	b.ReportMetric(float64(calls)/float64(n), "arm-calls/cluster/refresh")
	b.ReportMetric(float64(gets)/float64(n), "arm-gets/cluster/refresh")
	b.ReportMetric(float64(idleCalls)/float64(n), "arm-calls/cluster/idle-pass")
	b.ReportMetric(wall.Seconds(), "s/round")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/cluster")
	b.ReportMetric(float64(peakRSS())/1e6, "peak-RSS-MB")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/float64(n)/1e3, "heap-KB/cluster")
}
