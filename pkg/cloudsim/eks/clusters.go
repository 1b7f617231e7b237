package eks

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
)

var (
	defaultPublicCIDRs = []string{"0.0.0.0/0"}
	emptyMap           = map[string]string{}
)

type clusterResponse struct {
	Cluster *clusterJSON `json:"cluster"`
}

type updateResponse struct {
	Update *updateJSON `json:"update"`
}

func (s *Server) createCluster(c *call) (any, error) {
	var req createClusterRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	name := deref(req.Name)
	if err := checkName("name", name, 100); err != nil {
		return nil, err
	}
	if err := checkRoleARN("roleArn", deref(req.RoleArn)); err != nil {
		return nil, err
	}
	vpc := req.ResourcesVpcConfig
	if vpc == nil || len(vpc.SubnetIds) == 0 {
		return nil, invalidParam("resourcesVpcConfig.subnetIds is required")
	}
	if err := checkIDs("subnet", "subnet-", vpc.SubnetIds); err != nil {
		return nil, err
	}
	if err := checkIDs("security group", "sg-", vpc.SecurityGroupIds); err != nil {
		return nil, err
	}
	version := DefaultVersion
	if req.Version != nil {
		version = *req.Version
		if err := checkVersion(version); err != nil {
			return nil, err
		}
	}
	public, private := true, false
	if vpc.EndpointPublicAccess != nil {
		public = *vpc.EndpointPublicAccess
	}
	if vpc.EndpointPrivateAccess != nil {
		private = *vpc.EndpointPrivateAccess
	}
	if !public && !private {
		return nil, invalidParam("At least one of endpointPublicAccess and endpointPrivateAccess must be enabled")
	}
	cidrs := defaultPublicCIDRs
	if vpc.PublicAccessCidrs != nil {
		if err := checkPublicCIDRs(vpc.PublicAccessCidrs); err != nil {
			return nil, err
		}
		cidrs = slices.Clone(vpc.PublicAccessCidrs)
	}
	logging, err := logMask(0, req.Logging)
	if err != nil {
		return nil, err
	}
	if err := checkTags(req.Tags, invalidParam); err != nil {
		return nil, err
	}
	authMode, bootstrap := AuthModeAPIAndConfigMap, true
	if ac := req.AccessConfig; ac != nil {
		if ac.AuthenticationMode != "" {
			authMode = ac.AuthenticationMode
			if authMode != AuthModeAPI && authMode != AuthModeAPIAndConfigMap && authMode != AuthModeConfigMap {
				return nil, invalidParam("accessConfig.authenticationMode must be one of API, API_AND_CONFIG_MAP, CONFIG_MAP")
			}
		}
		if ac.BootstrapClusterCreatorAdminPermissions != nil {
			bootstrap = *ac.BootstrapClusterCreatorAdminPermissions
		}
	}

	id := strings.ToUpper(randomHex(32))
	cl := &cluster{
		region:         c.region,
		name:           name,
		arn:            "arn:aws:eks:" + c.region + ":" + s.account + ":cluster/" + name,
		endpoint:       "https://" + id + ".gr7." + c.region + ".eks.amazonaws.com",
		oidcID:         id,
		version:        version,
		status:         StatusCreating,
		roleARN:        *req.RoleArn,
		subnets:        slices.Clone(vpc.SubnetIds),
		sgs:            slices.Clone(vpc.SecurityGroupIds),
		vpcID:          "vpc-" + stableHex(c.region+vpc.SubnetIds[0], 17),
		clusterSG:      "sg-" + randomHex(17),
		publicAccess:   public,
		privateAccess:  private,
		publicCIDRs:    cidrs,
		logging:        logging,
		tags:           nonEmpty(maps.Clone(req.Tags)),
		createToken:    req.ClientRequestToken,
		authMode:       authMode,
		bootstrapAdmin: bootstrap,
		backend:        s.backend,
	}

	k := clusterKey{c.region, name}
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c.now = s.clock.Now() // under the lock, as in lockCluster
	cl.createdAt, cl.doneAt = c.now, c.now.Add(s.delay)
	if old := sh.m[k]; old != nil {
		old.mu.Lock()
		old.settle(c.now)
		if !old.gone {
			defer old.mu.Unlock()
			if req.ClientRequestToken != "" && old.createToken == req.ClientRequestToken {
				return clusterResponse{s.clusterWire(old)}, nil // a retry of the same create
			}
			return nil, resourceInUse("Cluster already exists with name: %s", name).forCluster(name, "")
		}
		old.mu.Unlock()
	}
	if bootstrap && authMode != AuthModeConfigMap {
		cl.access = map[string]*accessEntry{}
		s.addCreatorEntry(cl, c.accessKey, c.now)
	}
	sh.m[k] = cl
	s.indexBackend(k, nil, cl.backend)
	return clusterResponse{s.clusterWire(cl)}, nil
}

func (s *Server) describeCluster(c *call) (any, error) {
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	return clusterResponse{s.clusterWire(cl)}, nil
}

func (s *Server) listClusters(c *call) (any, error) {
	limit, token, err := pageParams(c.r.URL.Query())
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		for k, cl := range sh.m {
			if k.region != c.region {
				continue
			}
			cl.mu.Lock()
			cl.settle(c.now)
			if !cl.gone {
				names = append(names, k.name)
			}
			cl.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	slices.Sort(names)
	out, next, err := page(names, limit, token, true)
	if err != nil {
		return nil, err
	}
	return struct {
		Clusters  []string `json:"clusters"`
		NextToken *string  `json:"nextToken,omitempty"`
	}{nonNil(out), next}, nil
}

func (s *Server) deleteCluster(c *call) (any, error) {
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	if len(cl.nodegroups) > 0 {
		return nil, resourceInUse("Cluster has nodegroups attached").forCluster(cl.name, "")
	}
	if cl.status != StatusDeleting {
		cl.status = StatusDeleting
		cl.doneAt = c.now.Add(s.delay)
	}
	return clusterResponse{s.clusterWire(cl)}, nil
}

// checkClusterIdle refuses a change while the cluster is not ACTIVE: EKS runs one update at a
// time and answers 409 ResourceInUseException otherwise.
func checkClusterIdle(cl *cluster) error {
	switch {
	case cl.pending != nil:
		return resourceInUse("Cluster %s currently has update %s in progress", cl.name, cl.pending.id).forCluster(cl.name, "")
	case cl.status != StatusActive && cl.status != StatusUpdating:
		return resourceInUse("Cluster %s is in %s state and cannot be updated", cl.name, cl.status).forCluster(cl.name, "")
	}
	return nil
}

func (s *Server) updateClusterConfig(c *call) (any, error) {
	var req updateClusterConfigRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	for field, v := range map[string]any{
		"accessConfig": req.AccessConfig, "upgradePolicy": req.UpgradePolicy, "zonalShiftConfig": req.ZonalShiftConfig,
		"computeConfig": req.ComputeConfig, "kubernetesNetworkConfig": req.KubernetesNetworkConfig,
		"storageConfig": req.StorageConfig, "remoteNetworkConfig": req.RemoteNetworkConfig,
		"deletionProtection": req.DeletionProtection,
	} {
		if v != nil {
			return nil, invalidParam("%s updates are not supported by the drover EKS simulator", field)
		}
	}
	vpc := req.ResourcesVpcConfig
	switch {
	case vpc == nil && req.Logging == nil:
		return nil, invalidParam("No changes needed: the request updates neither resourcesVpcConfig nor logging")
	case vpc != nil && req.Logging != nil:
		return nil, invalidParam("Only one type of update can be allowed.")
	case vpc != nil && (vpc.SubnetIds != nil || vpc.SecurityGroupIds != nil) &&
		(vpc.EndpointPublicAccess != nil || vpc.EndpointPrivateAccess != nil || vpc.PublicAccessCidrs != nil):
		return nil, invalidParam("Only one type of update can be allowed.")
	}

	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	if u := findUpdate(cl.updates, "", req.ClientRequestToken); u != nil {
		return updateResponse{updateWire(u)}, nil
	}
	if err := checkClusterIdle(cl); err != nil {
		return nil, err
	}

	var (
		typ    string
		params []UpdateParam
		apply  func(time.Time)
	)
	switch {
	case req.Logging != nil:
		mask, err := logMask(cl.logging, req.Logging)
		if err != nil {
			return nil, err
		}
		if mask == cl.logging {
			return nil, invalidParam("No changes needed for the logging config provided")
		}
		v, _ := json.Marshal(req.Logging)
		typ, params = "LoggingUpdate", []UpdateParam{{"ClusterLogging", string(v)}}
		apply = func(time.Time) { cl.logging = mask }

	case vpc.SubnetIds != nil || vpc.SecurityGroupIds != nil:
		subnets, sgs := cl.subnets, cl.sgs
		if vpc.SubnetIds != nil {
			if len(vpc.SubnetIds) == 0 {
				return nil, invalidParam("subnetIds can't be empty")
			}
			if err := checkIDs("subnet", "subnet-", vpc.SubnetIds); err != nil {
				return nil, err
			}
			subnets = slices.Clone(vpc.SubnetIds)
			params = append(params, UpdateParam{"Subnets", jsonString(subnets)})
		}
		if vpc.SecurityGroupIds != nil {
			if err := checkIDs("security group", "sg-", vpc.SecurityGroupIds); err != nil {
				return nil, err
			}
			sgs = slices.Clone(vpc.SecurityGroupIds)
			params = append(params, UpdateParam{"SecurityGroups", jsonString(sgs)})
		}
		if slices.Equal(subnets, cl.subnets) && slices.Equal(sgs, cl.sgs) {
			return nil, invalidParam("No changes needed: cluster already uses these subnets and security groups")
		}
		typ = "VpcConfigUpdate"
		apply = func(time.Time) { cl.subnets, cl.sgs = subnets, sgs }

	default:
		public, private, cidrs := cl.publicAccess, cl.privateAccess, cl.publicCIDRs
		if vpc.EndpointPublicAccess != nil {
			public = *vpc.EndpointPublicAccess
			params = append(params, UpdateParam{"EndpointPublicAccess", boolString(public)})
		}
		if vpc.EndpointPrivateAccess != nil {
			private = *vpc.EndpointPrivateAccess
			params = append(params, UpdateParam{"EndpointPrivateAccess", boolString(private)})
		}
		if vpc.PublicAccessCidrs != nil {
			if err := checkPublicCIDRs(vpc.PublicAccessCidrs); err != nil {
				return nil, err
			}
			cidrs = slices.Clone(vpc.PublicAccessCidrs)
			params = append(params, UpdateParam{"PublicAccessCidrs", jsonString(cidrs)})
		}
		if !public && !private {
			return nil, invalidParam("At least one of endpointPublicAccess and endpointPrivateAccess must be enabled")
		}
		if public == cl.publicAccess && private == cl.privateAccess && slices.Equal(cidrs, cl.publicCIDRs) {
			return nil, invalidParam("No changes needed: cluster is already at the desired configuration with endpointPrivateAccess: %t, endpointPublicAccess: %t, and publicAccessCidrs: [%s]",
				private, public, strings.Join(cidrs, ", "))
		}
		typ = "EndpointAccessUpdate"
		apply = func(time.Time) { cl.publicAccess, cl.privateAccess, cl.publicCIDRs = public, private, cidrs }
	}
	u := s.startClusterUpdate(cl, c.now, typ, params, req.ClientRequestToken, apply)
	return updateResponse{updateWire(u)}, nil
}

func (s *Server) updateClusterVersion(c *call) (any, error) {
	var req updateClusterVersionRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if deref(req.Version) == "" {
		return nil, invalidParam("version is required")
	}
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	if u := findUpdate(cl.updates, "", req.ClientRequestToken); u != nil {
		return updateResponse{updateWire(u)}, nil
	}
	if err := checkClusterIdle(cl); err != nil {
		return nil, err
	}
	to := *req.Version
	if err := checkUpgrade(cl.version, to); err != nil {
		return nil, err
	}
	params := []UpdateParam{{"Version", to}, {"PlatformVersion", platformVersion}}
	u := s.startClusterUpdate(cl, c.now, "VersionUpdate", params, req.ClientRequestToken, func(time.Time) { cl.version = to })
	return updateResponse{updateWire(u)}, nil
}

// startClusterUpdate records a new InProgress update of cl; apply runs when it completes.
func (s *Server) startClusterUpdate(cl *cluster, now time.Time, typ string, params []UpdateParam, token string, apply func(time.Time)) *update {
	u := s.newUpdate(now, typ, params, token, apply)
	u.busyAt = now.Add(s.statusLag)
	cl.updates = append(cl.updates, u)
	cl.pending = u
	if s.statusLag == 0 {
		cl.status = StatusUpdating
	}
	return u
}

func (s *Server) newUpdate(now time.Time, typ string, params []UpdateParam, token string, apply func(time.Time)) *update {
	return &update{
		id: newUUID(), typ: typ, status: UpdateInProgress, params: params, token: token,
		createdAt: now, endsAt: now.Add(s.delay), apply: apply,
	}
}

func (s *Server) listUpdates(c *call) (any, error) {
	q := c.r.URL.Query()
	limit, token, err := pageParams(q)
	if err != nil {
		return nil, err
	}
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	var ids []string
	func() {
		defer cl.mu.Unlock()
		updates := cl.updates
		switch {
		case q.Get("nodegroupName") != "":
			ng := cl.nodegroups[q.Get("nodegroupName")]
			if ng == nil {
				err = nodegroupNotFound(cl.name, q.Get("nodegroupName"))
				return
			}
			updates = ng.updates
		case q.Get("addonName") != "" || q.Get("capabilityName") != "":
			updates = nil // the simulator has no add-ons or capabilities
		}
		ids = make([]string, len(updates))
		for i, u := range updates {
			ids[i] = u.id
		}
	}()
	if err != nil {
		return nil, err
	}
	out, next, err := page(ids, limit, token, false)
	if err != nil {
		return nil, err
	}
	return struct {
		UpdateIds []string `json:"updateIds"`
		NextToken *string  `json:"nextToken,omitempty"`
	}{nonNil(out), next}, nil
}

func (s *Server) describeUpdate(c *call) (any, error) {
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	id := c.r.PathValue("id")
	updates := cl.updates
	if ngName := c.r.URL.Query().Get("nodegroupName"); ngName != "" {
		ng := cl.nodegroups[ngName]
		if ng == nil {
			return nil, nodegroupNotFound(cl.name, ngName)
		}
		updates = ng.updates
	}
	u := findUpdate(updates, id, "")
	if u == nil {
		return nil, resourceNotFound("No update found for ID: %s", id).forCluster(cl.name, c.r.URL.Query().Get("nodegroupName"))
	}
	return updateResponse{updateWire(u)}, nil
}

// clusterWire builds the API view of cl; cl must be locked and settled.
func (s *Server) clusterWire(cl *cluster) *clusterJSON {
	out := &clusterJSON{
		Name:      cl.name,
		Arn:       cl.arn,
		CreatedAt: epoch(cl.createdAt),
		Version:   cl.version,
		RoleArn:   cl.roleARN,
		ResourcesVpcConfig: vpcConfigJSON{
			SubnetIds:              cl.subnets,
			SecurityGroupIds:       nonNil(cl.sgs),
			ClusterSecurityGroupID: cl.clusterSG,
			VpcID:                  cl.vpcID,
			EndpointPublicAccess:   cl.publicAccess,
			EndpointPrivateAccess:  cl.privateAccess,
			PublicAccessCidrs:      cl.publicCIDRs,
		},
		KubernetesNetworkConfig: defaultNetworkConfig,
		Logging:                 loggingByMask[cl.logging],
		Status:                  cl.status,
		ClientRequestToken:      cl.createToken,
		PlatformVersion:         platformVersion,
		Tags:                    cl.tags,
		Health:                  healthJSON{Issues: emptyIssues},
		AccessConfig:            &accessConfigJSON{BootstrapClusterCreatorAdminPermissions: &cl.bootstrapAdmin, AuthenticationMode: cl.authMode},
	}
	if out.Tags == nil {
		out.Tags = emptyMap
	}
	if cl.status != StatusCreating {
		// EKS reports the endpoint and CA only once the control plane is up.
		out.Endpoint = cl.endpoint
		out.CertificateAuthority = &certificateJSON{Data: s.caData}
		if b := cl.backend; b != nil {
			out.Endpoint = b.Endpoint
			out.CertificateAuthority = &certificateJSON{Data: base64.StdEncoding.EncodeToString(b.CAPEM)}
		}
		out.Identity = &identityJSON{}
		out.Identity.OIDC.Issuer = "https://oidc.eks." + cl.region + ".amazonaws.com/id/" + cl.oidcID
	}
	return out
}

func updateWire(u *update) *updateJSON {
	return &updateJSON{
		ID: u.id, Status: u.status, Type: u.typ, Params: nonNilParams(u.params),
		CreatedAt: epoch(u.createdAt), Errors: emptyErrors,
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilParams(p []UpdateParam) []UpdateParam {
	if p == nil {
		return []UpdateParam{}
	}
	return p
}

// nonEmpty keeps "no tags" as nil so a cluster without tags costs no map.
func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
