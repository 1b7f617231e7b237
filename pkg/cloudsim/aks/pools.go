package aks

import (
	"net/http"
	"time"
)

func parentNotFound(rt *route) *apiError {
	return errorf(http.StatusNotFound, "ParentResourceNotFound",
		"Can not perform requested operation on nested resource. Parent resource '%s' not found.", rt.name)
}

func poolNotFound(rt *route) *apiError {
	return errorf(http.StatusNotFound, "ResourceNotFound",
		"The Resource 'Microsoft.ContainerService/managedClusters/%s/agentPools/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix", rt.name, rt.pool, rt.rg)
}

func (s *Server) handleListPools(w http.ResponseWriter, rt *route) {
	now := s.now()
	s.mu.Lock()
	c := s.lookup(rt.key(), now)
	if c == nil {
		s.errorLocked(w, parentNotFound(rt))
		return
	}
	out := poolList{Value: make([]agentPool, len(c.pools))}
	for i, p := range c.pools {
		out.Value[i] = c.renderPool(p)
	}
	s.respondLocked(w, http.StatusOK, out)
}

func (s *Server) handleGetPool(w http.ResponseWriter, rt *route) {
	now := s.now()
	s.mu.Lock()
	c := s.lookup(rt.key(), now)
	if c == nil {
		s.errorLocked(w, parentNotFound(rt))
		return
	}
	p := c.pool(rt.pool)
	if p == nil {
		s.errorLocked(w, poolNotFound(rt))
		return
	}
	s.respondLocked(w, http.StatusOK, c.renderPool(p))
}

// handlePutPool creates or updates one agent pool. Only that pool goes through an operation;
// the cluster's own provisioningState is untouched, as on AKS.
func (s *Server) handlePutPool(w http.ResponseWriter, r *http.Request, rt *route) {
	var req agentPool
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e)
		return
	}
	now := s.now()
	s.mu.Lock()
	c := s.lookup(rt.key(), now)
	if c == nil {
		s.errorLocked(w, parentNotFound(rt))
		return
	}
	old := c.pool(rt.pool)
	var e *apiError
	if old == nil {
		e = checkPrecondition(r, "agent pool", rt.pool, "", false)
	} else {
		e = checkPrecondition(r, "agent pool", rt.pool, old.etag, true)
	}
	if e != nil {
		s.errorLocked(w, e)
		return
	}
	p, op, status, e := s.putPool(c, rt, &req, now)
	if e != nil {
		s.errorLocked(w, e)
		return
	}
	s.setAsyncHeaders(w, r, rt, op, false)
	s.respondLocked(w, status, c.renderPool(p))
}

func (s *Server) putPool(c *cluster, rt *route, req *agentPool, now time.Time) (*pool, *operation, int, *apiError) {
	if isBusy(c.state) {
		return nil, nil, 0, c.conflict()
	}
	old := c.pool(rt.pool)
	if old != nil && isBusy(old.state) {
		return nil, nil, 0, old.conflict()
	}
	var in poolProperties
	if req.Properties != nil {
		in = *req.Properties
	}
	np := c.mc.Properties.NetworkProfile
	pp, target, e := s.buildPool(poolInput{name: rt.pool, old: old, defaultMode: modeUser, cp: c.cur,
		cpVersion: c.mc.Properties.KubernetesVersion, plugin: np.NetworkPlugin, pluginMode: np.NetworkPluginMode}, in)
	if e != nil {
		return nil, nil, 0, e
	}
	if old != nil && old.props.Mode == modeSystem && pp.Mode != modeSystem && c.systemPools(old) == 0 {
		return nil, nil, 0, badRequest("MustDefineAtLeastOneSystemPool", "Must define at least one system pool. Agent pool '%s' is the last System mode pool of the cluster.", old.name)
	}
	state := poolChange(old, pp, target)
	if state == "" {
		state = stateUpdating
	}
	op := s.poolOperation(c, now)
	status := http.StatusOK
	p := old
	if p == nil {
		status = http.StatusCreated
		p = &pool{name: rt.pool, cur: target}
		c.pools = append(c.pools, p)
	}
	p.props, p.target = pp, target
	p.etag = newUUID() // a pool write changes the pool's eTag only
	startPoolOp(p, state, op)
	return p, op, status, nil
}

// poolOperation starts an operation for a pool, consuming a pending FailNextOperation.
func (s *Server) poolOperation(c *cluster, now time.Time) *operation {
	op := s.newOperation(c.sub, c.location(), now)
	if c.failNext != nil {
		op.final, op.err = stateFailed, c.failNext
		c.failNext = nil
	}
	return op
}

// handleDeletePool deletes an agent pool; the last System pool cannot be deleted. Deleting a
// pool that does not exist answers 204, as ARM does.
func (s *Server) handleDeletePool(w http.ResponseWriter, r *http.Request, rt *route) {
	now := s.now()
	s.mu.Lock()
	c := s.lookup(rt.key(), now)
	if c == nil {
		s.errorLocked(w, parentNotFound(rt))
		return
	}
	p := c.pool(rt.pool)
	if p == nil {
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if e := checkPrecondition(r, "agent pool", rt.pool, p.etag, true); e != nil {
		s.errorLocked(w, e)
		return
	}
	op := s.ops[p.opID]
	if p.state != stateDeleting || op == nil {
		switch {
		case isBusy(c.state):
			s.errorLocked(w, c.conflict())
			return
		case isBusy(p.state):
			s.errorLocked(w, p.conflict())
			return
		case p.props.Mode == modeSystem && c.systemPools(p) == 0:
			s.errorLocked(w, badRequest("OperationNotAllowed",
				"Cannot delete agent pool '%s' because it is the last System mode agent pool of the cluster; a managed cluster must have at least one system pool. See https://aka.ms/aks/nodepool/mode for more details.", p.name))
			return
		}
		op = s.newOperation(c.sub, c.location(), now)
		startPoolOp(p, stateDeleting, op)
	}
	s.setAsyncHeaders(w, r, rt, op, true)
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}
