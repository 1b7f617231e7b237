package gke

import (
	"encoding/json"
	"net/http"
	"slices"

	container "google.golang.org/api/container/v1"
)

func (s *Server) lookupPool(rt *route) (*clusterRec, *container.NodePool, *apiError) {
	rec, aerr := s.lookupCluster(rt.project, rt.location, rt.cluster)
	if aerr != nil {
		return nil, nil, aerr
	}
	_, np := findPool(rec.c, rt.pool)
	if np == nil {
		return nil, nil, notFound(poolName(rt.project, rt.location, rt.cluster, rt.pool))
	}
	return rec, np, nil
}

func handleGetNodePool(s *Server, _ *http.Request, rt *route) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, np, aerr := s.lookupPool(rt)
	if aerr != nil {
		return nil, aerr
	}
	return mustJSON(np), nil
}

func handleListNodePools(s *Server, _ *http.Request, rt *route) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, aerr := s.lookupCluster(rt.project, rt.location, rt.cluster)
	if aerr != nil {
		return nil, aerr
	}
	return mustJSON(container.ListNodePoolsResponse{NodePools: rec.c.NodePools}), nil
}

func handleCreateNodePool(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.CreateNodePoolRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	np := req.NodePool
	if np == nil {
		return nil, invalidArgument("node_pool must be specified.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, aerr := s.lookupCluster(rt.project, rt.location, rt.cluster)
	if aerr != nil {
		return nil, aerr
	}
	c := rec.c
	if _, old := findPool(c, np.Name); old != nil && np.Name != "" {
		return nil, alreadyExists(poolName(rt.project, rt.location, rt.cluster, np.Name))
	}
	if rec.op != nil {
		return nil, operationConflict(rec.op.o.Name)
	}
	if aerr := s.preparePool(c, np, "node_pool"); aerr != nil {
		return nil, aerr
	}
	c.NodePools = append(slices.Clip(c.NodePools), np)
	c.Status = "RECONCILING"
	return s.startOp(rec, "CREATE_NODE_POOL", np.SelfLink, func(fail string) {
		c.Status = "RUNNING"
		if fail != "" {
			np.Status, np.StatusMessage = "ERROR", fail
			return
		}
		np.Status = "RUNNING"
	}), nil
}

func handleDeleteNodePool(s *Server, _ *http.Request, rt *route) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, np, aerr := s.lookupPool(rt)
	if aerr != nil {
		return nil, aerr
	}
	if rec.op != nil {
		return nil, operationConflict(rec.op.o.Name)
	}
	c := rec.c
	c.Status, np.Status = "RECONCILING", "STOPPING"
	return s.startOp(rec, "DELETE_NODE_POOL", np.SelfLink, func(fail string) {
		c.Status = "RUNNING"
		if fail != "" {
			np.Status, np.StatusMessage = "ERROR", fail
			return
		}
		if i, _ := findPool(c, np.Name); i >= 0 {
			c.NodePools = slices.Delete(slices.Clone(c.NodePools), i, i+1)
		}
	}), nil
}

// mutatePool runs a mutation of one node pool; the pool is RECONCILING until it ends.
func (s *Server) mutatePool(rt *route, opType string, prepare func(c *container.Cluster, np *container.NodePool) (func(), *apiError)) ([]byte, *apiError) {
	return s.mutateCluster(rt, opType, func(rec *clusterRec) (func(), *apiError) {
		_, np := findPool(rec.c, rt.pool)
		if np == nil {
			return nil, notFound(poolName(rt.project, rt.location, rt.cluster, rt.pool))
		}
		apply, aerr := prepare(rec.c, np)
		if aerr != nil {
			return nil, aerr
		}
		np.Status = "RECONCILING"
		return apply, nil
	})
}

// handleUpdateNodePool applies an UpdateNodePoolRequest: version, image type, node labels,
// taints, network tags, resource labels, locations, machine type and disk.
func handleUpdateNodePool(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	b, aerr := readBody(r)
	if aerr != nil {
		return nil, aerr
	}
	var req container.UpdateNodePoolRequest
	if aerr := unmarshal(b, &req); aerr != nil {
		return nil, aerr
	}
	var raw map[string]json.RawMessage
	if aerr := unmarshal(b, &raw); aerr != nil {
		return nil, aerr
	}
	changes := 0
	for k := range raw {
		switch k {
		case "name", "projectId", "zone", "clusterId", "nodePoolId", "etag":
		case "nodeVersion", "imageType", "labels", "taints", "tags", "resourceLabels", "locations", "machineType", "diskSizeGb", "diskType":
			changes++
		default:
			return nil, invalidArgument("UpdateNodePoolRequest field %q is not implemented by drover's GKE simulator.", k)
		}
	}
	if changes == 0 {
		return nil, invalidArgument("UpdateNodePoolRequest must change at least one field.")
	}
	if req.Labels != nil {
		if aerr := validateLabels("labels", req.Labels.Labels); aerr != nil {
			return nil, aerr
		}
	}
	if req.ResourceLabels != nil {
		if aerr := validateLabels("resource_labels", req.ResourceLabels.Labels); aerr != nil {
			return nil, aerr
		}
	}
	if req.DiskSizeGb < 0 || (req.DiskSizeGb > 0 && req.DiskSizeGb < 10) {
		return nil, invalidArgument("Invalid value for field \"disk_size_gb\": %d. Must be at least 10.", req.DiskSizeGb)
	}
	return s.mutatePool(rt, "UPGRADE_NODES", func(c *container.Cluster, np *container.NodePool) (func(), *apiError) {
		v := np.Version
		if req.NodeVersion != "" {
			var aerr *apiError
			if v, aerr = s.resolveNodeVersion(req.NodeVersion, c.CurrentMasterVersion); aerr != nil {
				return nil, aerr
			}
		}
		if len(req.Locations) > 0 {
			if aerr := validateLocations("locations", c.Location, req.Locations); aerr != nil {
				return nil, aerr
			}
		}
		return func() {
			np.Version = v
			cfg := np.Config
			if req.ImageType != "" {
				cfg.ImageType = req.ImageType
			}
			if req.Labels != nil {
				cfg.Labels = req.Labels.Labels
			}
			if req.Taints != nil {
				cfg.Taints = req.Taints.Taints
			}
			if req.Tags != nil {
				cfg.Tags = req.Tags.Tags
			}
			if req.ResourceLabels != nil {
				cfg.ResourceLabels = req.ResourceLabels.Labels
			}
			if len(req.Locations) > 0 {
				np.Locations = req.Locations
			}
			if req.MachineType != "" {
				cfg.MachineType = req.MachineType
			}
			if req.DiskSizeGb > 0 {
				cfg.DiskSizeGb = req.DiskSizeGb
			}
			if req.DiskType != "" {
				cfg.DiskType = req.DiskType
			}
		}, nil
	})
}

func handleSetNodePoolSize(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.SetNodePoolSizeRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	if req.NodeCount < 0 {
		return nil, invalidArgument("Invalid value for field \"node_count\": %d. Must not be negative.", req.NodeCount)
	}
	return s.mutatePool(rt, "SET_NODE_POOL_SIZE", func(_ *container.Cluster, np *container.NodePool) (func(), *apiError) {
		return func() { np.InitialNodeCount = req.NodeCount }, nil
	})
}

func handleSetNodePoolAutoscaling(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.SetNodePoolAutoscalingRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	if req.Autoscaling == nil {
		return nil, invalidArgument("autoscaling must be specified.")
	}
	if aerr := validateAutoscaling("autoscaling", req.Autoscaling); aerr != nil {
		return nil, aerr
	}
	return s.mutatePool(rt, "UPDATE_CLUSTER", func(_ *container.Cluster, np *container.NodePool) (func(), *apiError) {
		return func() { np.Autoscaling = req.Autoscaling }, nil
	})
}

func handleSetNodePoolManagement(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.SetNodePoolManagementRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	if req.Management == nil {
		return nil, invalidArgument("management must be specified.")
	}
	return s.mutatePool(rt, "SET_NODE_POOL_MANAGEMENT", func(_ *container.Cluster, np *container.NodePool) (func(), *apiError) {
		return func() { np.Management = req.Management }, nil
	})
}

func handleGetServerConfig(s *Server, _ *http.Request, rt *route) ([]byte, *apiError) {
	if aerr := validateLocation(rt.location); aerr != nil {
		return nil, aerr
	}
	return mustJSON(container.ServerConfig{
		DefaultClusterVersion: s.versions.def,
		DefaultImageType:      "COS_CONTAINERD",
		ValidImageTypes:       []string{"COS_CONTAINERD", "UBUNTU_CONTAINERD", "WINDOWS_LTSC_CONTAINERD"},
		ValidMasterVersions:   s.versions.all,
		ValidNodeVersions:     s.versions.all,
	}), nil
}
