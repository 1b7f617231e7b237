package gke

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	container "google.golang.org/api/container/v1"
)

const maxBody = 4 << 20

func readBody(r *http.Request) ([]byte, *apiError) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return nil, invalidArgument("Could not read the request body: %v", err)
	}
	return b, nil
}

func decodeBody(r *http.Request, v any) *apiError {
	b, aerr := readBody(r)
	if aerr != nil {
		return aerr
	}
	return unmarshal(b, v)
}

func unmarshal(b []byte, v any) *apiError {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return invalidArgument("Invalid JSON payload received. %v", err)
	}
	return nil
}

var defaultOAuthScopes = slices.Clip([]string{
	"https://www.googleapis.com/auth/devstorage.read_only",
	"https://www.googleapis.com/auth/logging.write",
	"https://www.googleapis.com/auth/monitoring",
	"https://www.googleapis.com/auth/service.management.readonly",
	"https://www.googleapis.com/auth/servicecontrol",
	"https://www.googleapis.com/auth/trace.append",
})

func handleCreateCluster(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.CreateClusterRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	if aerr := validateLocation(rt.location); aerr != nil {
		return nil, aerr
	}
	c := req.Cluster
	if c == nil {
		return nil, invalidArgument("Cluster must be specified.")
	}
	if aerr := s.prepareCluster(rt, c); aerr != nil {
		return nil, aerr
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.project(rt.project)
	key := clusterKey{rt.location, c.Name}
	if old := ps.clusters[key]; old != nil {
		s.advance(old, s.clock.Now())
		if !old.gone {
			return nil, alreadyExists(clusterName(rt.project, rt.location, c.Name))
		}
	}
	now := s.clock.Now()
	s.ipSeq++
	c.CreateTime = now.UTC().Format(time.RFC3339)
	// Without a backing API server an endpoint nobody answers on: 198.18.0.0/15 (RFC 2544,
	// benchmarking) is routed nowhere, unlike GKE's own 34.x addresses, which are Google's.
	c.Endpoint = fmt.Sprintf("198.%d.%d.%d", 18+(s.ipSeq>>16)&1, (s.ipSeq>>8)&255, s.ipSeq&255)
	rec := &clusterRec{project: rt.project, key: key, c: c}
	if s.backend != nil {
		rec.setBackend(s.backend)
	}
	ps.clusters[key] = rec
	c.CurrentNodeCount, c.CurrentNodeVersion = nodeSummary(c)
	return s.startOp(rec, "CREATE_CLUSTER", c.SelfLink, func(fail string) {
		status := "RUNNING"
		if fail != "" {
			status = "ERROR"
			c.StatusMessage = fail
		}
		c.Status = status
		for _, np := range c.NodePools {
			np.Status = status
		}
	}), nil
}

// prepareCluster validates a cluster of a create request and fills in what GKE defaults or
// computes. It needs no simulator state.
func (s *Server) prepareCluster(rt *route, c *container.Cluster) *apiError {
	if aerr := validateName("cluster.name", c.Name); aerr != nil {
		return aerr
	}
	if aerr := validateLabels("cluster.resource_labels", c.ResourceLabels); aerr != nil {
		return aerr
	}
	if c.LoggingService == "" {
		c.LoggingService = "logging.googleapis.com/kubernetes"
	}
	if aerr := validateService("cluster.logging_service", c.LoggingService, loggingServices); aerr != nil {
		return aerr
	}
	if c.MonitoringService == "" {
		c.MonitoringService = "monitoring.googleapis.com/kubernetes"
	}
	if aerr := validateService("cluster.monitoring_service", c.MonitoringService, monitoringServices); aerr != nil {
		return aerr
	}
	if aerr := validateAuthorizedNetworks("cluster.master_authorized_networks_config", c.MasterAuthorizedNetworksConfig); aerr != nil {
		return aerr
	}
	if len(c.Locations) == 0 {
		if isZone(rt.location) {
			c.Locations = []string{rt.location}
		} else {
			c.Locations = []string{rt.location + "-a", rt.location + "-b", rt.location + "-c"}
		}
	}
	if aerr := validateLocations("cluster.locations", rt.location, c.Locations); aerr != nil {
		return aerr
	}
	v, aerr := s.resolveMasterVersion(c.InitialClusterVersion, "")
	if aerr != nil {
		return aerr
	}
	autopilot := c.Autopilot != nil && c.Autopilot.Enabled
	switch {
	case len(c.NodePools) > 0 && (c.InitialNodeCount > 0 || c.NodeConfig != nil):
		return invalidArgument("Cluster.node_pools and Cluster.initial_node_count or Cluster.node_config may not both be specified.")
	case len(c.NodePools) == 0 && c.InitialNodeCount > 0:
		c.NodePools = []*container.NodePool{{Name: "default-pool", InitialNodeCount: c.InitialNodeCount, Config: c.NodeConfig}}
	case len(c.NodePools) == 0 && !autopilot:
		return invalidArgument("Cluster.initial_node_count must be greater than zero.")
	}

	c.Location, c.Zone = rt.location, rt.location
	c.SelfLink = s.selfLink(rt.project, rt.location, "clusters/"+c.Name)
	c.Id = randomHex(16)
	c.InitialClusterVersion, c.CurrentMasterVersion = v, v
	c.Status, c.StatusMessage = "PROVISIONING", ""
	c.LabelFingerprint = labelFingerprint(c.ResourceLabels)
	c.MasterAuth = &container.MasterAuth{ClusterCaCertificate: s.clusterCA()}
	if c.Network == "" {
		c.Network = "default"
	}
	if c.Subnetwork == "" {
		c.Subnetwork = "default"
	}
	if c.ClusterIpv4Cidr == "" {
		c.ClusterIpv4Cidr = "10.4.0.0/14"
	}
	if c.ServicesIpv4Cidr == "" {
		c.ServicesIpv4Cidr = "34.118.224.0/20"
	}
	if c.NodeIpv4CidrSize == 0 {
		c.NodeIpv4CidrSize = 24
	}
	seen := map[string]bool{}
	for i, np := range c.NodePools {
		if np == nil {
			return invalidArgument("Cluster.node_pools[%d] must not be empty.", i)
		}
		if seen[np.Name] {
			return invalidArgument("Cluster.node_pools contains the node pool %q twice.", np.Name)
		}
		seen[np.Name] = true
		if aerr := s.preparePool(c, np, fmt.Sprintf("cluster.node_pools[%d]", i)); aerr != nil {
			return aerr
		}
	}
	return nil
}

// preparePool validates a new node pool of c and fills in GKE's defaults.
func (s *Server) preparePool(c *container.Cluster, np *container.NodePool, field string) *apiError {
	if aerr := validateName(field+".name", np.Name); aerr != nil {
		return aerr
	}
	v, aerr := s.resolveNodeVersion(np.Version, c.CurrentMasterVersion)
	if aerr != nil {
		return aerr
	}
	if np.InitialNodeCount < 0 {
		return invalidArgument("Invalid value for field %q: must not be negative.", field+".initial_node_count")
	}
	if aerr := validateAutoscaling(field+".autoscaling", np.Autoscaling); aerr != nil {
		return aerr
	}
	if len(np.Locations) > 0 {
		if aerr := validateLocations(field+".locations", c.Location, np.Locations); aerr != nil {
			return aerr
		}
	} else {
		np.Locations = c.Locations
	}
	if np.Config == nil {
		np.Config = &container.NodeConfig{}
	}
	cfg := np.Config
	if aerr := validateLabels(field+".config.labels", cfg.Labels); aerr != nil {
		return aerr
	}
	if cfg.MachineType == "" {
		cfg.MachineType = "e2-medium"
	}
	if cfg.DiskSizeGb == 0 {
		cfg.DiskSizeGb = 100
	}
	if cfg.DiskType == "" {
		cfg.DiskType = "pd-balanced"
	}
	if cfg.ImageType == "" {
		cfg.ImageType = "COS_CONTAINERD"
	}
	if len(cfg.OauthScopes) == 0 {
		cfg.OauthScopes = defaultOAuthScopes
	}
	if cfg.ServiceAccount == "" {
		cfg.ServiceAccount = "default"
	}
	if np.Management == nil {
		np.Management = &container.NodeManagement{AutoUpgrade: true, AutoRepair: true}
	}
	if np.MaxPodsConstraint == nil {
		np.MaxPodsConstraint = &container.MaxPodsConstraint{MaxPodsPerNode: 110}
	}
	if np.PodIpv4CidrSize == 0 {
		np.PodIpv4CidrSize = 24
	}
	np.Version = v
	np.Status, np.StatusMessage = "PROVISIONING", ""
	np.SelfLink = c.SelfLink + "/nodePools/" + np.Name
	return nil
}

func handleGetCluster(s *Server, _ *http.Request, rt *route) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, aerr := s.lookupCluster(rt.project, rt.location, rt.cluster)
	if aerr != nil {
		return nil, aerr
	}
	return rec.encoded(), nil
}

// handleListClusters lists the clusters of a location, or of every location for "-".
func handleListClusters(s *Server, _ *http.Request, rt *route) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.projects[rt.project]
	if ps == nil {
		return []byte("{}"), nil
	}
	now := s.clock.Now()
	var recs []*clusterRec
	for key, rec := range ps.clusters {
		if rt.location != "-" && key.location != rt.location {
			continue
		}
		s.advance(rec, now)
		if !rec.gone {
			recs = append(recs, rec)
		}
	}
	if len(recs) == 0 {
		return []byte("{}"), nil
	}
	slices.SortFunc(recs, func(a, b *clusterRec) int {
		if a.key.location != b.key.location {
			return cmpString(a.key.location, b.key.location)
		}
		return cmpString(a.key.name, b.key.name)
	})
	var buf bytes.Buffer
	buf.WriteString(`{"clusters":[`)
	for i, rec := range recs {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(rec.encoded())
	}
	buf.WriteString("]}")
	return buf.Bytes(), nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func handleDeleteCluster(s *Server, _ *http.Request, rt *route) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, aerr := s.lookupIdle(rt)
	if aerr != nil {
		return nil, aerr
	}
	c := rec.c
	c.Status = "STOPPING"
	return s.startOp(rec, "DELETE_CLUSTER", c.SelfLink, func(fail string) {
		if fail != "" {
			c.Status, c.StatusMessage = "ERROR", fail
			return
		}
		rec.gone = true
		delete(s.projects[rec.project].clusters, rec.key)
	}), nil
}

// prepareFunc checks a mutation against the current cluster and returns the change to apply
// when its operation ends.
type prepareFunc func(rec *clusterRec) (apply func(), aerr *apiError)

// mutateCluster runs a mutation as an operation: the cluster is RECONCILING until it ends, and
// the change is visible only then.
func (s *Server) mutateCluster(rt *route, opType string, prepare prepareFunc) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, aerr := s.lookupIdle(rt)
	if aerr != nil {
		return nil, aerr
	}
	before := statusesOf(rec.c)
	apply, aerr := prepare(rec)
	if aerr != nil {
		return nil, aerr
	}
	c := rec.c
	target := c.SelfLink
	if rt.pool != "" {
		target += "/nodePools/" + rt.pool
	}
	c.Status = "RECONCILING"
	if s.lag > 0 {
		// Show the old statuses until the lag has passed (see advance).
		defer func() {
			rec.op.busy, rec.op.busyAt = statusesOf(c), s.clock.Now().Add(s.lag)
			before.applyTo(c)
		}()
	}
	return s.startOp(rec, opType, target, func(fail string) {
		c.Status = "RUNNING"
		for _, np := range c.NodePools {
			if np.Status == "RECONCILING" {
				np.Status = "RUNNING"
			}
		}
		if fail == "" {
			apply()
		}
	}), nil
}

// supportedUpdates are the ClusterUpdate fields the simulator applies.
var supportedUpdates = map[string]bool{
	"desiredMasterVersion":                  true,
	"desiredLoggingService":                 true,
	"desiredMonitoringService":              true,
	"desiredMasterAuthorizedNetworksConfig": true,
	"desiredLocations":                      true,
	"desiredNodeVersion":                    true,
	"desiredImageType":                      true,
	"desiredNodePoolAutoscaling":            true,
	"desiredAddonsConfig":                   true,
}

func handleUpdateCluster(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	b, aerr := readBody(r)
	if aerr != nil {
		return nil, aerr
	}
	var req container.UpdateClusterRequest
	var raw struct {
		Update map[string]json.RawMessage `json:"update"`
	}
	if aerr := unmarshal(b, &req); aerr != nil {
		return nil, aerr
	}
	if aerr := unmarshal(b, &raw); aerr != nil {
		return nil, aerr
	}
	u := req.Update
	if u == nil {
		return nil, invalidArgument("UpdateClusterRequest.update must be specified.")
	}
	var fields []string
	for k := range raw.Update {
		switch {
		case k == "desiredNodePoolId" || k == "etag":
		case supportedUpdates[k]:
			fields = append(fields, k)
		default:
			return nil, invalidArgument("ClusterUpdate field %q is not implemented by drover's GKE simulator.", k)
		}
	}
	slices.Sort(fields)
	switch {
	case len(fields) == 0:
		return nil, invalidArgument("ClusterUpdate must set at least one desired field.")
	case len(fields) == 2 && fields[0] == "desiredImageType" && fields[1] == "desiredNodeVersion":
	case len(fields) > 1:
		return nil, invalidArgument("At most one update can be modified at a time; got %v.", fields)
	}

	opType := "UPDATE_CLUSTER"
	var prepare prepareFunc
	switch fields[len(fields)-1] {
	case "desiredMasterVersion":
		opType = "UPGRADE_MASTER"
		prepare = setMasterVersion(s, u.DesiredMasterVersion)
	case "desiredLoggingService":
		if aerr := validateService("update.desired_logging_service", u.DesiredLoggingService, loggingServices); aerr != nil {
			return nil, aerr
		}
		prepare = setField(func(c *container.Cluster) { c.LoggingService = u.DesiredLoggingService })
	case "desiredMonitoringService":
		if aerr := validateService("update.desired_monitoring_service", u.DesiredMonitoringService, monitoringServices); aerr != nil {
			return nil, aerr
		}
		prepare = setField(func(c *container.Cluster) { c.MonitoringService = u.DesiredMonitoringService })
	case "desiredMasterAuthorizedNetworksConfig":
		cfg := u.DesiredMasterAuthorizedNetworksConfig
		if aerr := validateAuthorizedNetworks("update.desired_master_authorized_networks_config", cfg); aerr != nil {
			return nil, aerr
		}
		prepare = setField(func(c *container.Cluster) { c.MasterAuthorizedNetworksConfig = cfg })
	case "desiredLocations":
		prepare = setLocations("update.desired_locations", u.DesiredLocations)
	case "desiredNodeVersion", "desiredImageType":
		opType = "UPGRADE_NODES"
		prepare = func(rec *clusterRec) (func(), *apiError) {
			np, aerr := selectPool(rt, rec.c, u.DesiredNodePoolId)
			if aerr != nil {
				return nil, aerr
			}
			v := np.Version
			if u.DesiredNodeVersion != "" {
				if v, aerr = s.resolveNodeVersion(u.DesiredNodeVersion, rec.c.CurrentMasterVersion); aerr != nil {
					return nil, aerr
				}
			}
			np.Status = "RECONCILING"
			return func() {
				np.Version = v
				if u.DesiredImageType != "" {
					np.Config.ImageType = u.DesiredImageType
				}
			}, nil
		}
	case "desiredNodePoolAutoscaling":
		a := u.DesiredNodePoolAutoscaling
		if aerr := validateAutoscaling("update.desired_node_pool_autoscaling", a); aerr != nil {
			return nil, aerr
		}
		prepare = func(rec *clusterRec) (func(), *apiError) {
			np, aerr := selectPool(rt, rec.c, u.DesiredNodePoolId)
			if aerr != nil {
				return nil, aerr
			}
			np.Status = "RECONCILING"
			return func() { np.Autoscaling = a }, nil
		}
	case "desiredAddonsConfig":
		addons := u.DesiredAddonsConfig
		prepare = setField(func(c *container.Cluster) {
			if c.AddonsConfig == nil {
				c.AddonsConfig = addons
				return
			}
			// Merge: the fields the update names replace the current ones, the rest stay.
			_ = json.Unmarshal(mustJSON(addons), c.AddonsConfig)
		})
	}
	return s.mutateCluster(rt, opType, prepare)
}

// selectPool picks the node pool a ClusterUpdate targets; without desiredNodePoolId the cluster
// must have exactly one.
func selectPool(rt *route, c *container.Cluster, id string) (*container.NodePool, *apiError) {
	if id == "" {
		if len(c.NodePools) != 1 {
			return nil, invalidArgument("update.desired_node_pool_id must be specified when the cluster does not have exactly one node pool.")
		}
		return c.NodePools[0], nil
	}
	if _, np := findPool(c, id); np != nil {
		return np, nil
	}
	return nil, notFound(poolName(rt.project, rt.location, rt.cluster, id))
}

func setField(set func(c *container.Cluster)) prepareFunc {
	return func(rec *clusterRec) (func(), *apiError) {
		return func() { set(rec.c) }, nil
	}
}

func setMasterVersion(s *Server, alias string) prepareFunc {
	return func(rec *clusterRec) (func(), *apiError) {
		v, aerr := s.resolveMasterVersion(alias, rec.c.CurrentMasterVersion)
		if aerr != nil {
			return nil, aerr
		}
		return func() { rec.c.CurrentMasterVersion = v }, nil
	}
}

// setLocations changes the cluster's node locations; node pools follow them.
func setLocations(field string, locations []string) prepareFunc {
	return func(rec *clusterRec) (func(), *apiError) {
		if aerr := validateLocations(field, rec.key.location, locations); aerr != nil {
			return nil, aerr
		}
		return func() {
			rec.c.Locations = locations
			for _, np := range rec.c.NodePools {
				np.Locations = locations
			}
		}, nil
	}
}

func handleSetResourceLabels(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.SetLabelsRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	if aerr := validateLabels("resource_labels", req.ResourceLabels); aerr != nil {
		return nil, aerr
	}
	labels := req.ResourceLabels
	return s.mutateCluster(rt, "UPDATE_CLUSTER", func(rec *clusterRec) (func(), *apiError) {
		// GKE requires the current fingerprint, so a client cannot overwrite labels it has not seen.
		if req.LabelFingerprint != rec.c.LabelFingerprint {
			return nil, errorf(http.StatusBadRequest, "FAILED_PRECONDITION",
				"Labels could not be set due to fingerprint mismatch; try again with the proper fingerprint: "+
					"incorrect fingerprint supplied was %q, the expected one is %q.", req.LabelFingerprint, rec.c.LabelFingerprint)
		}
		return func() {
			rec.c.ResourceLabels = labels
			rec.c.LabelFingerprint = labelFingerprint(labels)
		}, nil
	})
}

func handleSetLogging(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.SetLoggingServiceRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	if aerr := validateService("logging_service", req.LoggingService, loggingServices); aerr != nil {
		return nil, aerr
	}
	return s.mutateCluster(rt, "UPDATE_CLUSTER", setField(func(c *container.Cluster) { c.LoggingService = req.LoggingService }))
}

func handleSetMonitoring(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.SetMonitoringServiceRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	if aerr := validateService("monitoring_service", req.MonitoringService, monitoringServices); aerr != nil {
		return nil, aerr
	}
	return s.mutateCluster(rt, "UPDATE_CLUSTER", setField(func(c *container.Cluster) { c.MonitoringService = req.MonitoringService }))
}

func handleSetLocations(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.SetLocationsRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	return s.mutateCluster(rt, "UPDATE_CLUSTER", setLocations("locations", req.Locations))
}

func handleUpdateMaster(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.UpdateMasterRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	if req.MasterVersion == "" {
		return nil, invalidArgument("master_version must be specified.")
	}
	return s.mutateCluster(rt, "UPGRADE_MASTER", setMasterVersion(s, req.MasterVersion))
}

func handleSetMaintenancePolicy(s *Server, r *http.Request, rt *route) ([]byte, *apiError) {
	var req container.SetMaintenancePolicyRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	p := req.MaintenancePolicy
	if p == nil {
		return nil, invalidArgument("maintenance_policy must be specified.")
	}
	return s.mutateCluster(rt, "UPDATE_CLUSTER", setField(func(c *container.Cluster) {
		p.ResourceVersion = randomHex(4)
		c.MaintenancePolicy = p
	}))
}
