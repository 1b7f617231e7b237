package gke

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// The simulator keeps resources as the SDK's own container/v1 types, so that the JSON it
// serves has exactly the field names and encodings the client decodes.

type clusterKey struct{ location, name string }

type projectState struct {
	clusters map[clusterKey]*clusterRec
	ops      []*opRec // in start order, for operations.list
}

// clusterRec is one cluster and the operation running on it. GKE runs one operation at a time
// per cluster (its node pools included); op is that operation until it is applied.
type clusterRec struct {
	project  string
	key      clusterKey
	c        *container.Cluster
	op       *opRec
	failNext string // message the next operation fails with
	json     []byte // cached encoding of c; nil after any change
	gone     bool   // deleted
	backend  *simcore.Backend
}

// opRec is an Operation and what happens when it ends. Operations end lazily: the first access
// to the cluster or the operation at or after end applies it (see simcore).
type opRec struct {
	project string
	o       *container.Operation
	end     time.Time
	cluster *clusterRec
	fail    string
	// finish applies the operation; failMsg is non-empty when it fails.
	finish func(failMsg string)
	// busy holds the statuses the cluster and its pools show from busyAt on, while the
	// operation runs (Options.StatusLag); nil once shown, or without a lag.
	busy   *statuses
	busyAt time.Time
}

// statuses are the status of a cluster and of each of its node pools.
type statuses struct {
	cluster string
	pools   map[string]string
}

func statusesOf(c *container.Cluster) *statuses {
	st := &statuses{cluster: c.Status, pools: make(map[string]string, len(c.NodePools))}
	for _, np := range c.NodePools {
		st.pools[np.Name] = np.Status
	}
	return st
}

func (st *statuses) applyTo(c *container.Cluster) {
	c.Status = st.cluster
	for _, np := range c.NodePools {
		if s, ok := st.pools[np.Name]; ok {
			np.Status = s
		}
	}
}

const timeFormat = time.RFC3339Nano

// advance applies the cluster's operation if it has ended.
func (s *Server) advance(rec *clusterRec, now time.Time) {
	op := rec.op
	if op != nil && op.busy != nil && !now.Before(op.busyAt) && now.Before(op.end) {
		op.busy.applyTo(rec.c)
		op.busy = nil
		rec.json = nil
	}
	if op == nil || now.Before(op.end) {
		return
	}
	rec.op = nil
	rec.json = nil
	op.o.Status = "DONE"
	op.o.EndTime = op.end.UTC().Format(timeFormat)
	if op.fail != "" {
		op.o.StatusMessage = op.fail
		op.o.Error = &container.Status{Code: 13, Message: op.fail}
	}
	op.finish(op.fail)
	op.finish = nil
	if !rec.gone {
		rec.c.CurrentNodeCount, rec.c.CurrentNodeVersion = nodeSummary(rec.c)
	}
}

// startOp begins an operation on rec and returns the JSON answer of the mutating call (the
// Operation, still PENDING). The cluster and, if pool is set, the node pool take the given
// statuses while it runs; finish runs when it ends.
func (s *Server) startOp(rec *clusterRec, opType, target string, finish func(failMsg string)) []byte {
	now := s.clock.Now()
	name := fmt.Sprintf("operation-%d-%s", now.UnixMilli(), uuid())
	loc := rec.key.location
	o := &container.Operation{
		Name:          name,
		OperationType: opType,
		Status:        "PENDING",
		SelfLink:      s.selfLink(rec.project, loc, "operations/"+name),
		TargetLink:    target,
		Location:      loc,
		Zone:          loc,
		StartTime:     now.UTC().Format(timeFormat),
	}
	op := &opRec{project: rec.project, o: o, end: now.Add(s.delay), cluster: rec, finish: finish, fail: rec.failNext}
	rec.failNext = ""
	rec.op = op
	rec.json = nil
	s.ops[name] = op
	ps := s.projects[rec.project]
	ps.ops = append(ps.ops, op)
	b := mustJSON(o)
	o.Status = "RUNNING" // what every later read sees until it ends
	return b
}

// lookupCluster finds a cluster and brings it up to date.
func (s *Server) lookupCluster(project, location, name string) (*clusterRec, *apiError) {
	if ps := s.projects[project]; ps != nil {
		if rec := ps.clusters[clusterKey{location, name}]; rec != nil {
			s.advance(rec, s.clock.Now())
			if !rec.gone {
				return rec, nil
			}
		}
	}
	return nil, notFound(clusterName(project, location, name))
}

// lookupIdle is lookupCluster for a mutation: the cluster must have no running operation.
func (s *Server) lookupIdle(rt *route) (*clusterRec, *apiError) {
	rec, err := s.lookupCluster(rt.project, rt.location, rt.cluster)
	if err != nil {
		return nil, err
	}
	if rec.op != nil {
		return nil, operationConflict(rec.op.o.Name)
	}
	return rec, nil
}

func (s *Server) project(name string) *projectState {
	ps := s.projects[name]
	if ps == nil {
		ps = &projectState{clusters: map[clusterKey]*clusterRec{}}
		s.projects[name] = ps
	}
	return ps
}

// encoded returns the cluster's JSON. It is cached because encoding a Cluster through the
// SDK's MarshalJSON methods costs about 90 µs of CPU, five times a whole cached get; the cache
// costs about 2.7 KB per cluster.
func (rec *clusterRec) encoded() []byte {
	if rec.json == nil {
		rec.json = mustJSON(rec.c)
	}
	return rec.json
}

func findPool(c *container.Cluster, name string) (int, *container.NodePool) {
	for i, np := range c.NodePools {
		if np.Name == name {
			return i, np
		}
	}
	return -1, nil
}

// nodeSummary computes the deprecated cluster-level currentNodeCount and currentNodeVersion.
func nodeSummary(c *container.Cluster) (int64, string) {
	var n int64
	version := ""
	for _, np := range c.NodePools {
		zones := int64(max(len(np.Locations), 1))
		n += np.InitialNodeCount * zones
		if version == "" || compareVersions(np.Version, version) < 0 {
			version = np.Version
		}
	}
	return n, version
}

// labelFingerprint is the fingerprint setResourceLabels must be given. GKE reports "a9dc16a7"
// for a cluster without labels; other values only need to change when the labels do.
func labelFingerprint(labels map[string]string) string {
	if len(labels) == 0 {
		return "a9dc16a7"
	}
	h := fnv.New32a()
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		_, _ = h.Write([]byte(k))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(labels[k]))
		_, _ = h.Write([]byte{0})
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// selfLink is the URL of a resource under projects/P/{zones|locations}/L/, using the
// simulator's URL so that links can be followed. GKE writes zonal resources with zones/.
func (s *Server) selfLink(project, location, rest string) string {
	base := s.BaseURL()
	if base == "" {
		base = "https://container.googleapis.com"
	}
	coll := "locations"
	if isZone(location) {
		coll = "zones"
	}
	return base + "/v1/projects/" + project + "/" + coll + "/" + location + "/" + rest
}

// isZone tells a zone ("us-central1-a") from a region ("us-central1").
func isZone(location string) bool { return strings.Count(location, "-") == 2 }

func regionOf(location string) string {
	if isZone(location) {
		return location[:strings.LastIndexByte(location, '-')]
	}
	return location
}

func uuid() string {
	h := randomHex(16)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("gke: encoding %T: %v", v, err)) // the SDK types always encode
	}
	return b
}
