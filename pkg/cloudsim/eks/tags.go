package eks

import (
	"maps"
	"strings"
)

// Tag changes apply at once, with no update, as in EKS. Tag maps are replaced, never
// modified, so responses already being encoded keep a consistent view.

// lockTagTarget resolves a cluster or node group ARN and returns the locked cluster and a
// pointer to the target's tag map.
func (s *Server) lockTagTarget(c *call) (*cluster, *map[string]string, error) {
	arn := c.r.PathValue("arn")
	// arn:aws:eks:REGION:ACCOUNT:cluster/NAME or ...:nodegroup/CLUSTER/NAME/UUID
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "eks" {
		return nil, nil, badRequest("%s is not a valid EKS resource ARN", arn)
	}
	if parts[3] != c.region || parts[4] != s.account {
		return nil, nil, tagTargetNotFound("Resource %s not found in region %s of account %s", arn, c.region, s.account)
	}
	res := strings.Split(parts[5], "/")
	switch {
	case res[0] == "cluster" && len(res) == 2:
		cl, err := s.lockCluster(c.region, res[1], &c.now)
		if err != nil {
			return nil, nil, tagTargetNotFound("Resource %s not found", arn)
		}
		return cl, &cl.tags, nil
	case res[0] == "nodegroup" && len(res) == 4:
		cl, err := s.lockCluster(c.region, res[1], &c.now)
		if err != nil {
			return nil, nil, tagTargetNotFound("Resource %s not found", arn)
		}
		ng := cl.nodegroups[res[2]]
		if ng == nil || ng.uuid != res[3] {
			cl.mu.Unlock()
			return nil, nil, tagTargetNotFound("Resource %s not found", arn)
		}
		return cl, &ng.tags, nil
	}
	return nil, nil, badRequest("tagging %s is not supported by the drover EKS simulator (clusters and node groups only)", arn)
}

func (s *Server) tagResource(c *call) (any, error) {
	var req tagResourceRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if len(req.Tags) == 0 {
		return nil, badRequest("tags is required")
	}
	if err := checkTags(req.Tags, badRequest); err != nil {
		return nil, err
	}
	cl, tags, err := s.lockTagTarget(c)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	next := maps.Clone(*tags)
	if next == nil {
		next = make(map[string]string, len(req.Tags))
	}
	maps.Copy(next, req.Tags)
	if err := checkTags(next, badRequest); err != nil {
		return nil, err
	}
	*tags = next
	return struct{}{}, nil
}

func (s *Server) untagResource(c *call) (any, error) {
	keys := c.r.URL.Query()["tagKeys"]
	if len(keys) == 0 {
		return nil, badRequest("tagKeys is required")
	}
	cl, tags, err := s.lockTagTarget(c)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	next := maps.Clone(*tags)
	for _, k := range keys {
		delete(next, k)
	}
	*tags = nonEmpty(next)
	return struct{}{}, nil
}

func (s *Server) listTagsForResource(c *call) (any, error) {
	cl, tags, err := s.lockTagTarget(c)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	out := *tags
	if out == nil {
		out = emptyMap
	}
	return struct {
		Tags map[string]string `json:"tags"`
	}{out}, nil
}
