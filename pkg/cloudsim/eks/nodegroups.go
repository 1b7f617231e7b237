package eks

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node group defaults, as EKS applies them.
const (
	defaultAMIType      = "AL2023_x86_64_STANDARD"
	defaultInstanceType = "t3.medium"
	defaultDiskSize     = 20
)

type nodegroupResponse struct {
	Nodegroup *nodegroupJSON `json:"nodegroup"`
}

func (s *Server) createNodegroup(c *call) (any, error) {
	var req createNodegroupRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	name := deref(req.NodegroupName)
	if err := checkName("nodegroupName", name, 63); err != nil {
		return nil, err
	}
	if len(req.Subnets) == 0 {
		return nil, invalidParam("subnets is required")
	}
	if err := checkIDs("subnet", "subnet-", req.Subnets); err != nil {
		return nil, err
	}
	if err := checkRoleARN("nodeRole", deref(req.NodeRole)); err != nil {
		return nil, err
	}
	minSize, maxSize, desired := int32(1), int32(2), int32(2)
	if sc := req.ScalingConfig; sc != nil {
		if sc.MinSize != nil {
			minSize = *sc.MinSize
		}
		maxSize = max(maxSize, minSize)
		if sc.MaxSize != nil {
			maxSize = *sc.MaxSize
		}
		desired = min(max(desired, minSize), maxSize)
		if sc.DesiredSize != nil {
			desired = *sc.DesiredSize
		}
	}
	if err := checkScaling(minSize, maxSize, desired); err != nil {
		return nil, err
	}
	amiType := defaultAMIType
	if req.AmiType != nil {
		amiType = *req.AmiType
		if !slices.Contains(amiTypes, amiType) {
			return nil, invalidParam("unknown amiType %q", amiType)
		}
	}
	capacityType := "ON_DEMAND"
	if req.CapacityType != nil {
		capacityType = *req.CapacityType
		if !slices.Contains(capacityTypes, capacityType) {
			return nil, invalidParam("unknown capacityType %q (valid: %s)", capacityType, strings.Join(capacityTypes, ", "))
		}
	}
	instanceTypes, diskSize := req.InstanceTypes, int32(0)
	var lt *LaunchTemplate
	if req.LaunchTemplate != nil {
		l := *req.LaunchTemplate
		if (l.ID == "") == (l.Name == "") {
			return nil, invalidParam("Either launchTemplate id or name must be specified, not both")
		}
		if req.DiskSize != nil {
			return nil, invalidParam("Disk size must be specified within the launch template.")
		}
		if l.Version == "" {
			l.Version = "1"
		}
		lt = &l
	} else {
		if len(instanceTypes) == 0 {
			instanceTypes = []string{defaultInstanceType}
		}
		diskSize = defaultDiskSize
		if req.DiskSize != nil {
			diskSize = *req.DiskSize
			if diskSize < 1 {
				return nil, invalidParam("diskSize must be a positive number of GiB, got %d", diskSize)
			}
		}
	}
	for k := range req.Labels {
		if k == "" {
			return nil, invalidParam("label keys can't be empty")
		}
	}
	if err := checkTaints(req.Taints); err != nil {
		return nil, err
	}
	if err := checkTags(req.Tags, invalidParam); err != nil {
		return nil, err
	}

	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	if old := cl.nodegroups[name]; old != nil {
		if req.ClientRequestToken != "" && old.createToken == req.ClientRequestToken {
			return nodegroupResponse{s.nodegroupWire(cl, old)}, nil // a retry of the same create
		}
		return nil, resourceInUse("NodeGroup already exists with name %s and cluster name %s", name, cl.name).forCluster(cl.name, name)
	}
	if cl.status != StatusActive && cl.status != StatusUpdating {
		return nil, invalidRequest("Cluster '%s' is not in ACTIVE status", cl.name).forCluster(cl.name, name)
	}
	version := cl.version
	if req.Version != nil {
		version = *req.Version
		if err := checkNodegroupVersion(version, cl.version); err != nil {
			return nil, err
		}
	}
	release := defaultRelease(version)
	if req.ReleaseVersion != nil {
		release = *req.ReleaseVersion
		if !strings.HasPrefix(release, version+".") {
			return nil, invalidParam("Requested release version %s is not valid for kubernetes version %s", release, version)
		}
	}
	if m, _ := minor(version); m >= 33 && strings.HasPrefix(amiType, "AL2_") {
		return nil, invalidParam("AMI Type %s is only supported for kubernetes versions 1.32 or earlier", amiType)
	}

	id := newUUID()
	ng := &nodegroup{
		name: name, uuid: id,
		arn:     "arn:aws:eks:" + c.region + ":" + s.account + ":nodegroup/" + cl.name + "/" + name + "/" + id,
		version: version, release: release, status: StatusCreating,
		capacityType: capacityType, amiType: amiType, nodeRole: *req.NodeRole,
		instanceTypes: slices.Clone(instanceTypes), subnets: slices.Clone(req.Subnets), diskSize: diskSize,
		minSize: minSize, maxSize: maxSize, desiredSize: desired,
		labels: nonEmpty(maps.Clone(req.Labels)), tags: nonEmpty(maps.Clone(req.Tags)),
		taints: slices.Clone(req.Taints), launchTemplate: lt,
		createToken: req.ClientRequestToken,
		createdAt:   c.now, modifiedAt: c.now, doneAt: c.now.Add(s.delay),
	}
	if cl.nodegroups == nil {
		cl.nodegroups = make(map[string]*nodegroup)
	}
	cl.nodegroups[name] = ng
	return nodegroupResponse{s.nodegroupWire(cl, ng)}, nil
}

// checkNodegroupVersion allows a supported version no newer than the control plane's.
func checkNodegroupVersion(v, clusterVersion string) error {
	if err := checkVersion(v); err != nil {
		return err
	}
	m, _ := minor(v)
	cm, _ := minor(clusterVersion)
	if m > cm {
		return invalidParam("Requested Nodegroup Kubernetes version %s is newer than the cluster version %s", v, clusterVersion)
	}
	return nil
}

// lockNodegroup returns the cluster (locked; the caller unlocks it) and its node group.
func (s *Server) lockNodegroup(c *call) (*cluster, *nodegroup, error) {
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, nil, err
	}
	name := c.r.PathValue("ng")
	ng := cl.nodegroups[name]
	if ng == nil {
		cl.mu.Unlock()
		return nil, nil, nodegroupNotFound(cl.name, name)
	}
	return cl, ng, nil
}

func (s *Server) describeNodegroup(c *call) (any, error) {
	cl, ng, err := s.lockNodegroup(c)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	return nodegroupResponse{s.nodegroupWire(cl, ng)}, nil
}

func (s *Server) listNodegroups(c *call) (any, error) {
	limit, token, err := pageParams(c.r.URL.Query())
	if err != nil {
		return nil, err
	}
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(cl.nodegroups))
	cl.mu.Unlock()
	out, next, err := page(names, limit, token, true)
	if err != nil {
		return nil, err
	}
	return struct {
		Nodegroups []string `json:"nodegroups"`
		NextToken  *string  `json:"nextToken,omitempty"`
	}{nonNil(out), next}, nil
}

func (s *Server) deleteNodegroup(c *call) (any, error) {
	cl, ng, err := s.lockNodegroup(c)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	if ng.status != StatusDeleting {
		ng.status, ng.modifiedAt, ng.doneAt = StatusDeleting, c.now, c.now.Add(s.delay)
	}
	return nodegroupResponse{s.nodegroupWire(cl, ng)}, nil
}

// checkNodegroupIdle refuses a change unless ng is ACTIVE with no update running.
func checkNodegroupIdle(cl *cluster, ng *nodegroup) error {
	switch {
	case ng.pending != nil:
		return resourceInUse("Nodegroup %s currently has update %s in progress", ng.name, ng.pending.id).forCluster(cl.name, ng.name)
	case ng.status != StatusActive:
		return resourceInUse("Nodegroup cannot be updated as it is currently not in Active State").forCluster(cl.name, ng.name)
	}
	return nil
}

func (s *Server) updateNodegroupConfig(c *call) (any, error) {
	var req updateNodegroupConfigRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	cl, ng, err := s.lockNodegroup(c)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	if u := findUpdate(ng.updates, "", req.ClientRequestToken); u != nil {
		return updateResponse{updateWire(u)}, nil
	}
	if err := checkNodegroupIdle(cl, ng); err != nil {
		return nil, err
	}

	var params []UpdateParam
	minSize, maxSize, desired := ng.minSize, ng.maxSize, ng.desiredSize
	if sc := req.ScalingConfig; sc != nil {
		for _, f := range []struct {
			v   *int32
			dst *int32
			typ string
		}{{sc.DesiredSize, &desired, "DesiredSize"}, {sc.MaxSize, &maxSize, "MaxSize"}, {sc.MinSize, &minSize, "MinSize"}} {
			if f.v != nil {
				*f.dst = *f.v
				params = append(params, UpdateParam{f.typ, itoa(*f.v)})
			}
		}
		if err := checkScaling(minSize, maxSize, desired); err != nil {
			return nil, err
		}
	}
	labels := ng.labels
	if l := req.Labels; l != nil {
		for _, k := range l.RemoveLabels {
			if _, ok := l.AddOrUpdateLabels[k]; ok {
				return nil, invalidParam("The following labels are both added and removed: %s", k)
			}
		}
		labels = maps.Clone(ng.labels)
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range l.AddOrUpdateLabels {
			if k == "" {
				return nil, invalidParam("label keys can't be empty")
			}
			labels[k] = v
		}
		for _, k := range l.RemoveLabels {
			delete(labels, k)
		}
		labels = nonEmpty(labels)
		if len(l.AddOrUpdateLabels) > 0 {
			params = append(params, UpdateParam{"LabelsToAdd", jsonString(l.AddOrUpdateLabels)})
		}
		if len(l.RemoveLabels) > 0 {
			params = append(params, UpdateParam{"LabelsToRemove", jsonString(l.RemoveLabels)})
		}
	}
	taints := ng.taints
	if t := req.Taints; t != nil {
		if err := checkTaints(t.AddOrUpdateTaints); err != nil {
			return nil, err
		}
		taints = slices.DeleteFunc(slices.Clone(ng.taints), func(x Taint) bool {
			return slices.ContainsFunc(t.RemoveTaints, func(r Taint) bool { return r.Key == x.Key && r.Effect == x.Effect }) ||
				slices.ContainsFunc(t.AddOrUpdateTaints, func(a Taint) bool { return a.Key == x.Key && a.Effect == x.Effect })
		})
		taints = append(taints, t.AddOrUpdateTaints...)
		if len(t.AddOrUpdateTaints) > 0 {
			params = append(params, UpdateParam{"TaintsToAdd", jsonString(t.AddOrUpdateTaints)})
		}
		if len(t.RemoveTaints) > 0 {
			params = append(params, UpdateParam{"TaintsToRemove", jsonString(t.RemoveTaints)})
		}
	}
	if minSize == ng.minSize && maxSize == ng.maxSize && desired == ng.desiredSize &&
		maps.Equal(labels, ng.labels) && slices.Equal(taints, ng.taints) {
		return nil, invalidParam("No changes needed for the node group configuration provided")
	}
	u := s.startNodegroupUpdate(ng, c.now, "ConfigUpdate", params, req.ClientRequestToken, func(time.Time) {
		ng.minSize, ng.maxSize, ng.desiredSize = minSize, maxSize, desired
		ng.labels, ng.taints = labels, taints
	})
	return updateResponse{updateWire(u)}, nil
}

func (s *Server) updateNodegroupVersion(c *call) (any, error) {
	var req updateNodegroupVersionRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	cl, ng, err := s.lockNodegroup(c)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	if u := findUpdate(ng.updates, "", req.ClientRequestToken); u != nil {
		return updateResponse{updateWire(u)}, nil
	}
	if err := checkNodegroupIdle(cl, ng); err != nil {
		return nil, err
	}
	// Without a version EKS moves the node group to the control plane's version.
	version := cl.version
	if req.Version != nil {
		version = *req.Version
	}
	if err := checkNodegroupVersion(version, cl.version); err != nil {
		return nil, err
	}
	cur, _ := minor(ng.version)
	if m, _ := minor(version); m < cur {
		return nil, invalidParam("Requested Nodegroup Kubernetes version %s is older than the current version %s; downgrades are not supported", version, ng.version)
	}
	release := defaultRelease(version)
	if req.ReleaseVersion != nil {
		release = *req.ReleaseVersion
		if !strings.HasPrefix(release, version+".") {
			return nil, invalidParam("Requested release version %s is not valid for kubernetes version %s", release, version)
		}
	}
	lt := ng.launchTemplate
	if r := req.LaunchTemplate; r != nil {
		if lt == nil {
			return nil, invalidParam("A launch template can't be specified for a node group created without one")
		}
		if (r.ID != "" && r.ID != lt.ID) || (r.Name != "" && r.Name != lt.Name) {
			return nil, invalidParam("The launch template of a node group can't be replaced, only its version changed")
		}
		next := *lt
		if r.Version != "" {
			next.Version = r.Version
		}
		lt = &next
	}
	if version == ng.version && release == ng.release && (lt == nil || *lt == *ng.launchTemplate) {
		return nil, invalidParam("No changes needed: node group is already at version %s, release %s", version, release)
	}
	params := []UpdateParam{{"Version", version}, {"ReleaseVersion", release}}
	if lt != nil && *lt != *ng.launchTemplate {
		params = append(params, UpdateParam{"LaunchTemplateName", lt.Name}, UpdateParam{"LaunchTemplateVersion", lt.Version})
	}
	u := s.startNodegroupUpdate(ng, c.now, "VersionUpdate", params, req.ClientRequestToken, func(time.Time) {
		ng.version, ng.release, ng.launchTemplate = version, release, lt
	})
	return updateResponse{updateWire(u)}, nil
}

func (s *Server) startNodegroupUpdate(ng *nodegroup, now time.Time, typ string, params []UpdateParam, token string, apply func(time.Time)) *update {
	u := s.newUpdate(now, typ, params, token, apply)
	u.busyAt = now.Add(s.statusLag)
	ng.updates = append(ng.updates, u)
	ng.pending = u
	ng.modifiedAt = now
	if s.statusLag == 0 {
		ng.status = StatusUpdating
	}
	return u
}

// nodegroupWire builds the API view of ng; its cluster must be locked and settled.
func (s *Server) nodegroupWire(cl *cluster, ng *nodegroup) *nodegroupJSON {
	out := &nodegroupJSON{
		NodegroupName: ng.name, NodegroupArn: ng.arn, ClusterName: cl.name,
		Version: ng.version, ReleaseVersion: ng.release,
		CreatedAt: epoch(ng.createdAt), ModifiedAt: epoch(ng.modifiedAt),
		Status: ng.status, CapacityType: ng.capacityType,
		ScalingConfig: scalingJSON{MinSize: ng.minSize, MaxSize: ng.maxSize, DesiredSize: ng.desiredSize},
		InstanceTypes: ng.instanceTypes, Subnets: ng.subnets, AmiType: ng.amiType, NodeRole: ng.nodeRole,
		Labels: ng.labels, Taints: ng.taints, Tags: ng.tags,
		Health:         healthJSON{Issues: emptyIssues},
		UpdateConfig:   updateConfigJSON{MaxUnavailable: 1},
		LaunchTemplate: ng.launchTemplate,
	}
	if out.Labels == nil {
		out.Labels = emptyMap
	}
	if out.Tags == nil {
		out.Tags = emptyMap
	}
	if ng.diskSize > 0 {
		d := ng.diskSize
		out.DiskSize = &d
	}
	if ng.status != StatusCreating {
		out.Resources = &resourcesJSON{}
		out.Resources.AutoScalingGroups = append(out.Resources.AutoScalingGroups, struct {
			Name string `json:"name"`
		}{"eks-" + ng.name + "-" + ng.uuid})
	}
	return out
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }
