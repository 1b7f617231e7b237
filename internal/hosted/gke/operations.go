package gke

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	container "google.golang.org/api/container/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// DefaultOperationsMaxAge is how long one operations.list answer serves every cluster of its
// location (see Provider.OperationsMaxAge).
const DefaultOperationsMaxAge = 5 * time.Second

// ListOperations is projects.locations.operations.list: every operation of the location (the
// API cannot filter by cluster).
func (a *sdkAPI) ListOperations(ctx context.Context, parent string) ([]*container.Operation, error) {
	out, err := a.svc.Projects.Locations.Operations.List(parent).Context(ctx).Do()
	if err != nil {
		return nil, err
	}
	return out.Operations, nil
}

// running caches the operations still running per client and location, so that a refresh round
// over thousands of clusters of one location lists its operations once, not once per cluster.
// Bounded: past maxRunningEntries the cache is dropped and rebuilt.
var running = struct {
	sync.Mutex
	m map[runningKey]*runningEntry
}{m: map[runningKey]*runningEntry{}}

const maxRunningEntries = 1024

type runningKey struct {
	client any // the SDK client: one per credential Secret version
	parent string
}

type runningEntry struct {
	mu  sync.Mutex // held while listing, so concurrent passes wait for one answer
	at  time.Time
	ops []*container.Operation
}

// runningOperations returns the location's operations not DONE, at most maxAge old.
func (s *session) runningOperations(ctx context.Context) ([]*container.Operation, error) {
	if s.opsMaxAge < 0 || s.client == nil {
		return s.listRunning(ctx)
	}
	key := runningKey{client: s.client, parent: s.parent}
	running.Lock()
	e := running.m[key]
	if e == nil {
		if len(running.m) >= maxRunningEntries {
			clear(running.m)
		}
		e = &runningEntry{}
		running.m[key] = e
	}
	running.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.at.IsZero() && time.Since(e.at) < s.opsMaxAge {
		return e.ops, nil
	}
	ops, err := s.listRunning(ctx)
	if err != nil {
		return nil, err
	}
	e.ops, e.at = ops, time.Now()
	return ops, nil
}

func (s *session) listRunning(ctx context.Context) ([]*container.Operation, error) {
	ops, err := s.api.ListOperations(ctx, s.parent)
	if err != nil {
		return nil, classify("operations.list", err)
	}
	out := ops[:0:0]
	for _, op := range ops {
		if op != nil && op.Status != "DONE" {
			out = append(out, op)
		}
	}
	return out, nil
}

// observeExternal finds operations on this cluster that drover did not start — from the
// console, gcloud or Terraform. GKE does not show every operation in the cluster's status (not
// at once, and some not at all), so its status alone would let drover call the cluster idle,
// report it in sync and push a change that conflicts.
func (s *session) observeExternal(ctx context.Context, c *v1.Cluster, obs *hosted.Observation) error {
	ops, err := s.runningOperations(ctx)
	if err != nil {
		return err
	}
	for _, op := range ops {
		if !targets(op.TargetLink, s.cfg.ClusterName) || slices.Contains(c.Status.PendingOperations, op.Name) {
			continue
		}
		obs.Updating, obs.External = true, fmt.Sprintf("GKE operation %s (%s)", op.Name, op.OperationType)
		obs.Why = fmt.Sprintf("%s started outside drover is %s", obs.External, op.Status)
	}
	return nil
}

// targets reports whether an operation's targetLink (…/clusters/NAME or
// …/clusters/NAME/nodePools/POOL, in the zones/ or the locations/ form) is the named cluster.
func targets(link, cluster string) bool {
	_, rest, ok := strings.Cut(link, "/clusters/")
	if !ok {
		return false
	}
	name, _, _ := strings.Cut(rest, "/")
	return name == cluster
}
