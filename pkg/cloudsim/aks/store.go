package aks

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// Provisioning states, as AKS reports them.
const (
	stateSucceeded = "Succeeded"
	stateFailed    = "Failed"
	stateCanceled  = "Canceled"
	stateCreating  = "Creating"
	stateUpdating  = "Updating"
	stateUpgrading = "Upgrading"
	stateScaling   = "Scaling"
	stateDeleting  = "Deleting"
)

func isBusy(state string) bool {
	return state != stateSucceeded && state != stateFailed && state != stateCanceled
}

// opVerb is how AKS names an in-progress operation in its conflict messages.
func opVerb(state string) string {
	switch state {
	case stateCreating:
		return "create"
	case stateUpgrading:
		return "upgrade"
	case stateScaling:
		return "scale"
	case stateDeleting:
		return "delete"
	}
	return "update"
}

// cluster is one simulated managed cluster. Transitions are lazy: an operation records when it
// ends, and settle applies it on the next access (see simcore's package doc).
type cluster struct {
	sub, rg string         // as first written, for ids
	mc      managedCluster // stored spec; Properties is never nil, AgentPoolProfiles always nil
	pools   []*pool

	state          string // provisioningState
	final          string // state reached when the operation ends (Succeeded or Failed)
	opID           string
	opStart, opEnd time.Time
	cur, target    kubeVersion // running version, and the one the operation moves to
	failNext       *errorBody  // set by FailNextOperation
	// etag changes with every accepted write of the cluster (and then of all its pools too, as
	// on AKS); clients send it back in If-Match to make a read-modify-write safe.
	etag string
	// backend is the real API server serving the cluster, if any.
	backend *simcore.Backend
}

type pool struct {
	name        string
	props       poolProperties // stored spec; read-only fields empty
	state       string
	final       string
	opID        string
	opEnd       time.Time
	cur, target kubeVersion
	etag        string // changes with every accepted write of the pool or of its cluster
}

// operation is an ARM asynchronous operation, polled through Azure-AsyncOperation.
type operation struct {
	id, sub, location string
	start, end        time.Time
	final             string
	err               *errorBody
}

func (op *operation) statusAt(now time.Time) string {
	if now.Before(op.end) {
		return "InProgress"
	}
	return op.final
}

// settle applies the transitions due at now. It returns false when the cluster's deletion has
// completed and the cluster must be dropped.
func (c *cluster) settle(now time.Time) bool {
	if isBusy(c.state) && !now.Before(c.opEnd) {
		if c.state == stateDeleting {
			return false
		}
		c.state = c.final
		if c.final == stateSucceeded {
			c.cur = c.target
		}
	}
	kept := c.pools[:0]
	for _, p := range c.pools {
		if isBusy(p.state) && !now.Before(p.opEnd) {
			if p.state == stateDeleting {
				continue
			}
			p.state = p.final
			if p.final == stateSucceeded {
				p.cur = p.target
			}
		}
		kept = append(kept, p)
	}
	clear(c.pools[len(kept):])
	c.pools = kept
	return true
}

func (c *cluster) pool(name string) *pool {
	for _, p := range c.pools {
		if strings.EqualFold(p.name, name) {
			return p
		}
	}
	return nil
}

// busyPool returns a pool with an operation in progress, if any.
func (c *cluster) busyPool() *pool {
	for _, p := range c.pools {
		if isBusy(p.state) {
			return p
		}
	}
	return nil
}

func (c *cluster) systemPools(except *pool) int {
	n := 0
	for _, p := range c.pools {
		if p != except && p.props.Mode == modeSystem && p.state != stateDeleting {
			n++
		}
	}
	return n
}

func (c *cluster) id() string {
	return "/subscriptions/" + c.sub + "/resourcegroups/" + c.rg + "/providers/Microsoft.ContainerService/managedClusters/" + c.mc.Name
}

func (c *cluster) location() string {
	return strings.ToLower(strings.ReplaceAll(c.mc.Location, " ", ""))
}

// touch gives the cluster, and every pool, a new eTag: a cluster-level write changes both.
func (c *cluster) touch() {
	c.etag = newUUID()
	for _, p := range c.pools {
		p.etag = newUUID()
	}
}

// checkPrecondition applies If-Match and If-None-Match to a write of a resource whose current
// eTag is etag (exists false: the resource does not exist). A mismatch is 412, as on AKS.
func checkPrecondition(r *http.Request, kind, name, etag string, exists bool) *apiError {
	if v := r.Header.Get("If-None-Match"); v == "*" && exists {
		return errorf(http.StatusPreconditionFailed, "PreconditionFailed",
			"The %s '%s' already exists, but the request carries If-None-Match: *.", kind, name)
	}
	v := r.Header.Get("If-Match")
	if v == "" {
		return nil
	}
	switch {
	case !exists:
		return errorf(http.StatusPreconditionFailed, "PreconditionFailed",
			"The %s '%s' does not exist, but the request carries If-Match: %s.", kind, name, v)
	case v != "*" && strings.Trim(v, `"`) != etag:
		return errorf(http.StatusPreconditionFailed, "PreconditionFailed",
			"Operation is not allowed because the eTag '%s' in the If-Match header does not match the current eTag '%s' of %s '%s': it was changed since it was read. Read it again and retry.", v, etag, kind, name)
	}
	return nil
}

// clusterConflict is AKS's answer to a mutation while the cluster has an operation running.
func (c *cluster) conflict() *apiError {
	return errorf(409, "OperationNotAllowed",
		"Operation is not allowed because there's an in progress %s managed cluster operation (operation ID: %s) on the managed cluster started on UTC %s. Please wait for it to finish before starting a new operation. You can also use 'az aks operation-abort ...' to abort the ongoing operation.",
		opVerb(c.state), c.opID, c.opStart.UTC().Format(time.RFC3339))
}

func (p *pool) conflict() *apiError {
	return errorf(409, "OperationNotAllowed",
		"Operation is not allowed: Another agentpool operation (%s - %s) is in progress, please wait for it to finish before starting a new operation. See https://aka.ms/aks-pending-operation for more details",
		p.name, p.state)
}

// render returns the cluster as ARM returns it. It shares maps and slices with the stored
// state, so it must be marshalled before the store lock is released.
func (c *cluster) render() managedCluster {
	mc := c.mc
	props := *c.mc.Properties
	props.ProvisioningState = c.state
	props.PowerState = running
	props.CurrentKubernetesVersion = c.cur.String()
	props.AgentPoolProfiles = make([]agentPoolProfile, len(c.pools))
	for i, p := range c.pools {
		props.AgentPoolProfiles[i] = agentPoolProfile{Name: p.name, poolProperties: p.render()}
	}
	props.IdentityProfile = nil
	if mc.Identity != nil && !strings.EqualFold(mc.Identity.Type, "None") {
		// AKS creates the kubelet's user-assigned identity in the node resource group.
		id := "/subscriptions/" + c.sub + "/resourcegroups/" + props.NodeResourceGroup +
			"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/" + mc.Name + "-agentpool"
		props.IdentityProfile = map[string]*identityRef{"kubeletidentity": {
			ResourceID: id, ClientID: uuidFrom("client/" + strings.ToLower(id)), ObjectID: uuidFrom("object/" + strings.ToLower(id))}}
	}
	mc.Properties = &props
	mc.ETag = c.etag
	mc.ID = c.id()
	mc.Type = "Microsoft.ContainerService/ManagedClusters"
	return mc
}

func (p *pool) render() poolProperties {
	pp := p.props
	pp.ETag = p.etag
	pp.ProvisioningState = p.state
	pp.PowerState = running
	pp.CurrentOrchestratorVersion = p.cur.String()
	return pp
}

func (c *cluster) renderPool(p *pool) agentPool {
	props := p.render()
	return agentPool{
		ID:         c.id() + "/agentPools/" + p.name,
		Name:       p.name,
		Type:       "Microsoft.ContainerService/managedClusters/agentPools",
		Properties: &props,
	}
}

// lookup returns the settled cluster for key, dropping it if its deletion has completed.
// s.mu must be held.
func (s *Server) lookup(key string, now time.Time) *cluster {
	c := s.clusters[key]
	if c == nil {
		return nil
	}
	if !c.settle(now) {
		s.remove(key)
		return nil
	}
	return c
}

func (s *Server) insert(key string, c *cluster) {
	s.clusters[key] = c
	i, found := slices.BinarySearch(s.keys, key)
	if !found {
		s.keys = slices.Insert(s.keys, i, key)
	}
}

func (s *Server) remove(key string) {
	delete(s.clusters, key)
	if i, found := slices.BinarySearch(s.keys, key); found {
		s.keys = slices.Delete(s.keys, i, i+1)
	}
}

// newOperation registers an operation ending after the configured delay. s.mu must be held.
func (s *Server) newOperation(sub, location string, now time.Time) *operation {
	op := &operation{id: newUUID(), sub: strings.ToLower(sub), location: location, start: now, end: now.Add(s.opts.Delay), final: stateSucceeded}
	s.pruneOperations(now)
	s.ops[op.id] = op
	s.opQueue = append(s.opQueue, op)
	return op
}

// operationRetention is how long a finished operation can still be polled.
const operationRetention = time.Hour

func (s *Server) pruneOperations(now time.Time) {
	for s.opHead < len(s.opQueue) {
		op := s.opQueue[s.opHead]
		if now.Sub(op.end) < operationRetention {
			break
		}
		delete(s.ops, op.id)
		s.opQueue[s.opHead] = nil
		s.opHead++
	}
	if s.opHead > 1024 && s.opHead > len(s.opQueue)/2 {
		s.opQueue = slices.Clone(s.opQueue[s.opHead:])
		s.opHead = 0
	}
}

// startClusterOp puts the cluster into state with a new operation. A pending FailNextOperation
// makes the operation, and the cluster, end Failed.
func (s *Server) startClusterOp(c *cluster, state string, now time.Time) *operation {
	op := s.newOperation(c.sub, c.location(), now)
	c.state, c.final, c.opID, c.opStart, c.opEnd = state, stateSucceeded, op.id, now, op.end
	if c.failNext != nil && state != stateDeleting {
		op.final, op.err = stateFailed, c.failNext
		c.final = stateFailed
		c.failNext = nil
	}
	return op
}

// startPoolOp puts a pool into state under op (its own, or its cluster's).
func startPoolOp(p *pool, state string, op *operation) {
	p.state, p.opID, p.opEnd = state, op.id, op.end
	p.final = stateSucceeded
	if op.final == stateFailed {
		p.final = stateFailed
	}
}

// cancelOperation ends a running operation as Canceled (a delete superseded it).
func (s *Server) cancelOperation(id string, now time.Time) {
	if op := s.ops[id]; op != nil && now.Before(op.end) {
		op.end, op.final = now, stateCanceled
		op.err = &errorBody{Code: "OperationCanceled", Message: "The operation was canceled because the managed cluster is being deleted."}
	}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
