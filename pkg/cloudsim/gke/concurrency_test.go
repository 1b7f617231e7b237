package gke_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/droverhq/drover/pkg/cloudsim/gke"
)

// TestConcurrentClients runs several clients at once, each managing its own cluster while
// listing everyone's, so that the race detector sees the shared state (caches, lazy
// transitions, the token store) under load.
func TestConcurrentClients(t *testing.T) {
	ts := gke.NewTestServer(t, gke.Options{Delay: 10 * time.Millisecond})
	svc := newService(t, ts, saEmail, project)
	const workers = 6
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			rt := &retrier{}
			name := fmt.Sprintf("worker-%d", w)
			clusters := svc.Projects.Locations.Clusters
			op, err := clusters.Create(parent(region), &container.CreateClusterRequest{Cluster: &container.Cluster{
				Name: name, InitialNodeCount: 1}}).Context(t.Context()).Do()
			if err != nil {
				errs <- fmt.Errorf("%s create: %w", name, err)
				return
			}
			if _, err := pollOp(t.Context(), svc, rt, region, op); err != nil {
				errs <- err
				return
			}
			for size := int64(2); size <= 4; size++ {
				op, err := clusters.NodePools.SetSize(poolPath(region, name, "default-pool"),
					&container.SetNodePoolSizeRequest{NodeCount: size}).Context(t.Context()).Do()
				if err != nil {
					errs <- fmt.Errorf("%s setSize: %w", name, err)
					return
				}
				if _, err := clusters.List(parent("-")).Context(t.Context()).Do(); err != nil {
					errs <- fmt.Errorf("%s list: %w", name, err)
					return
				}
				if _, err := pollOp(t.Context(), svc, rt, region, op); err != nil {
					errs <- err
					return
				}
			}
			c, err := fetchCluster(t.Context(), svc, rt, region, name)
			if err != nil {
				errs <- err
			} else if n := c.NodePools[0].InitialNodeCount; n != 4 {
				errs <- fmt.Errorf("%s: size %d, want 4", name, n)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := ts.ClusterCount(); n != workers {
		t.Fatalf("ClusterCount = %d, want %d", n, workers)
	}
}
