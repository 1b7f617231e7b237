package gke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"github.com/googleapis/gax-go/v2/apierror"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/googleapi"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// API is the part of container/v1 the provider uses, one method per call. Names are full
// resource names (projects/P/locations/L/clusters/C[/nodePools/N]).
type API interface {
	GetCluster(ctx context.Context, name string) (*container.Cluster, error)
	CreateCluster(ctx context.Context, parent string, req *container.CreateClusterRequest) (*container.Operation, error)
	DeleteCluster(ctx context.Context, name string) (*container.Operation, error)
	UpdateCluster(ctx context.Context, name string, req *container.UpdateClusterRequest) (*container.Operation, error)
	UpdateMaster(ctx context.Context, name string, req *container.UpdateMasterRequest) (*container.Operation, error)
	SetLogging(ctx context.Context, name string, req *container.SetLoggingServiceRequest) (*container.Operation, error)
	SetMonitoring(ctx context.Context, name string, req *container.SetMonitoringServiceRequest) (*container.Operation, error)
	SetLocations(ctx context.Context, name string, req *container.SetLocationsRequest) (*container.Operation, error)
	SetResourceLabels(ctx context.Context, name string, req *container.SetLabelsRequest) (*container.Operation, error)
	SetMaintenancePolicy(ctx context.Context, name string, req *container.SetMaintenancePolicyRequest) (*container.Operation, error)
	CreateNodePool(ctx context.Context, parent string, req *container.CreateNodePoolRequest) (*container.Operation, error)
	DeleteNodePool(ctx context.Context, name string) (*container.Operation, error)
	UpdateNodePool(ctx context.Context, name string, req *container.UpdateNodePoolRequest) (*container.Operation, error)
	SetNodePoolSize(ctx context.Context, name string, req *container.SetNodePoolSizeRequest) (*container.Operation, error)
	SetNodePoolAutoscaling(ctx context.Context, name string, req *container.SetNodePoolAutoscalingRequest) (*container.Operation, error)
	SetNodePoolManagement(ctx context.Context, name string, req *container.SetNodePoolManagementRequest) (*container.Operation, error)
	GetOperation(ctx context.Context, name string) (*container.Operation, error)
	ListOperations(ctx context.Context, parent string) ([]*container.Operation, error)
}

// sdkAPI implements API with the container/v1 client.
type sdkAPI struct{ svc *container.Service }

func (a *sdkAPI) clusters() *container.ProjectsLocationsClustersService {
	return a.svc.Projects.Locations.Clusters
}

func (a *sdkAPI) pools() *container.ProjectsLocationsClustersNodePoolsService {
	return a.svc.Projects.Locations.Clusters.NodePools
}

func (a *sdkAPI) GetCluster(ctx context.Context, name string) (*container.Cluster, error) {
	return a.clusters().Get(name).Context(ctx).Do()
}
func (a *sdkAPI) CreateCluster(ctx context.Context, parent string, req *container.CreateClusterRequest) (*container.Operation, error) {
	return a.clusters().Create(parent, req).Context(ctx).Do()
}
func (a *sdkAPI) DeleteCluster(ctx context.Context, name string) (*container.Operation, error) {
	return a.clusters().Delete(name).Context(ctx).Do()
}
func (a *sdkAPI) UpdateCluster(ctx context.Context, name string, req *container.UpdateClusterRequest) (*container.Operation, error) {
	return a.clusters().Update(name, req).Context(ctx).Do()
}
func (a *sdkAPI) UpdateMaster(ctx context.Context, name string, req *container.UpdateMasterRequest) (*container.Operation, error) {
	return a.clusters().UpdateMaster(name, req).Context(ctx).Do()
}
func (a *sdkAPI) SetLogging(ctx context.Context, name string, req *container.SetLoggingServiceRequest) (*container.Operation, error) {
	return a.clusters().SetLogging(name, req).Context(ctx).Do()
}
func (a *sdkAPI) SetMonitoring(ctx context.Context, name string, req *container.SetMonitoringServiceRequest) (*container.Operation, error) {
	return a.clusters().SetMonitoring(name, req).Context(ctx).Do()
}
func (a *sdkAPI) SetLocations(ctx context.Context, name string, req *container.SetLocationsRequest) (*container.Operation, error) {
	return a.clusters().SetLocations(name, req).Context(ctx).Do()
}
func (a *sdkAPI) SetResourceLabels(ctx context.Context, name string, req *container.SetLabelsRequest) (*container.Operation, error) {
	return a.clusters().SetResourceLabels(name, req).Context(ctx).Do()
}
func (a *sdkAPI) SetMaintenancePolicy(ctx context.Context, name string, req *container.SetMaintenancePolicyRequest) (*container.Operation, error) {
	return a.clusters().SetMaintenancePolicy(name, req).Context(ctx).Do()
}
func (a *sdkAPI) CreateNodePool(ctx context.Context, parent string, req *container.CreateNodePoolRequest) (*container.Operation, error) {
	return a.pools().Create(parent, req).Context(ctx).Do()
}
func (a *sdkAPI) DeleteNodePool(ctx context.Context, name string) (*container.Operation, error) {
	return a.pools().Delete(name).Context(ctx).Do()
}
func (a *sdkAPI) UpdateNodePool(ctx context.Context, name string, req *container.UpdateNodePoolRequest) (*container.Operation, error) {
	return a.pools().Update(name, req).Context(ctx).Do()
}
func (a *sdkAPI) SetNodePoolSize(ctx context.Context, name string, req *container.SetNodePoolSizeRequest) (*container.Operation, error) {
	return a.pools().SetSize(name, req).Context(ctx).Do()
}
func (a *sdkAPI) SetNodePoolAutoscaling(ctx context.Context, name string, req *container.SetNodePoolAutoscalingRequest) (*container.Operation, error) {
	return a.pools().SetAutoscaling(name, req).Context(ctx).Do()
}
func (a *sdkAPI) SetNodePoolManagement(ctx context.Context, name string, req *container.SetNodePoolManagementRequest) (*container.Operation, error) {
	return a.pools().SetManagement(name, req).Context(ctx).Do()
}
func (a *sdkAPI) GetOperation(ctx context.Context, name string) (*container.Operation, error) {
	return a.svc.Projects.Locations.Operations.Get(name).Context(ctx).Do()
}

type session struct {
	api    API
	cfg    *v1.GKEClusterConfig
	parent string // projects/P/locations/L
	// client identifies the SDK client (one per credential Secret version) and opsMaxAge is
	// Provider.OperationsMaxAge, for the shared list of running operations.
	client    any
	opsMaxAge time.Duration
	// Filled by Observe for Push and Delete.
	labelFingerprint string
	maintenanceRV    string
	poolStatus       map[string]string
	clusterStatus    string
}

func (s *session) clusterName() string { return s.parent + "/clusters/" + s.cfg.ClusterName }
func (s *session) poolName(n string) string {
	return s.clusterName() + "/nodePools/" + n
}

// Reasons GKE gives in the ErrorInfo of a FAILED_PRECONDITION that means "wait and retry".
const reasonHasOperation = "CLUSTER_ALREADY_HAS_OPERATION"

// classify maps GKE errors to the engine's error kinds. The container/v1 client never retries,
// so throttling and "operation in progress" come back here and the engine's per-cluster
// backoff (ErrThrottled) or requeue (ErrBusy) does the retrying.
func classify(op string, err error) error {
	var ae *auth.Error
	if errors.As(err, &ae) {
		// The token exchange failed: a revoked or deleted key, or a wrong token_uri.
		if ae.Response != nil && ae.Response.StatusCode == http.StatusTooManyRequests {
			return fmt.Errorf("%w: %s: %w", hosted.ErrThrottled, op, err)
		}
		if ae.Response != nil && ae.Response.StatusCode >= 500 {
			return fmt.Errorf("%s: token exchange: %w", op, err)
		}
		return fmt.Errorf("%w: %w", hosted.ErrCredentials, tokenError(op, ae))
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return fmt.Errorf("%s: %w", op, err)
	}
	status, reason := grpcStatus(ge), ""
	var apiErr *apierror.APIError
	if errors.As(err, &apiErr) {
		reason = apiErr.Reason()
	}
	if reason == "" {
		reason = detailReason(ge.Details)
	}
	code := status
	if code == "" {
		code = fmt.Sprint(ge.Code)
	}
	pe := &hosted.ProviderError{Op: op, Code: code, Message: ge.Message, Err: err}
	switch {
	case ge.Code == http.StatusUnauthorized || ge.Code == http.StatusForbidden:
		return fmt.Errorf("%w: %w", hosted.ErrCredentials, pe)
	case ge.Code == http.StatusTooManyRequests:
		return hosted.Throttled(fmt.Errorf("%w: %w", hosted.ErrThrottled, pe), hosted.ParseRetryAfter(ge.Header, time.Now()))
	case status == "FAILED_PRECONDITION" && reason == reasonHasOperation:
		return fmt.Errorf("%w: %w", hosted.ErrBusy, pe)
	case status == "FAILED_PRECONDITION" && strings.Contains(op, "SetResourceLabels"):
		// The label fingerprint moved (labels changed since we read them): re-read, retry.
		return fmt.Errorf("%w: %w", hosted.ErrBusy, pe)
	case ge.Code == http.StatusBadRequest && status != "FAILED_PRECONDITION":
		return &hosted.FieldError{Field: "gkeConfig", Reason: v1.ReasonRejectedByGKE, Message: op + ": " + ge.Message}
	}
	return pe
}

// tokenError is the ProviderError of a token exchange Google refused: its OAuth error code and
// the first line of its description, never the SDK's text (a multi-line dump of the response
// body), so the condition is one stable line.
func tokenError(op string, ae *auth.Error) *hosted.ProviderError {
	var body struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(ae.Body, &body)
	status := 0
	if ae.Response != nil {
		status = ae.Response.StatusCode
	}
	code, msg := hosted.TokenRefusal(body.Error, body.Description, status)
	msg = hosted.Sentence(msg) + " Check the Secret's key " + KeyServiceAccountJSON + " (a deleted or disabled key, or another service account's)."
	return &hosted.ProviderError{Op: op, Code: code, Message: strings.TrimSpace(msg), Err: ae}
}

// grpcStatus is the google.rpc.Code name of a REST error body ("FAILED_PRECONDITION").
func grpcStatus(ge *googleapi.Error) string {
	var body struct {
		Error struct {
			Status string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(ge.Body), &body) != nil {
		return ""
	}
	return body.Error.Status
}

func detailReason(details []any) string {
	for _, d := range details {
		if m, ok := d.(map[string]any); ok {
			if r, ok := m["reason"].(string); ok && r != "" {
				return r
			}
		}
	}
	return ""
}

func isNotFound(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusNotFound
}

// Observe implements hosted.Session: one clusters.get (the steady-state budget), operations.get
// for operations drover started and has not seen finish, and the location's running operations
// (one operations.list shared by its clusters, see Provider.OperationsMaxAge) for operations
// started elsewhere.
func (s *session) Observe(ctx context.Context, c *v1.Cluster) (*hosted.Observation, error) {
	cl, err := s.api.GetCluster(ctx, s.clusterName())
	if isNotFound(err) {
		return &hosted.Observation{Exists: false}, nil
	}
	if err != nil {
		return nil, classify("clusters.get", err)
	}
	s.labelFingerprint, s.clusterStatus = cl.LabelFingerprint, cl.Status
	if cl.MaintenancePolicy != nil {
		s.maintenanceRV = cl.MaintenancePolicy.ResourceVersion
	}
	obs := &hosted.Observation{Exists: true, Status: cl.Status, Details: map[string]string{"endpoint": cl.Endpoint, "version": cl.CurrentMasterVersion}}
	switch cl.Status {
	case "PROVISIONING":
		obs.Creating = true
	case "STOPPING":
		obs.Deleting, obs.Updating, obs.Why = true, true, "the cluster is STOPPING"
	case "ERROR":
		msg := cl.StatusMessage
		if msg == "" {
			msg = "no message"
		}
		obs.Failed, obs.FailedMessage = true, "GKE reports the cluster in ERROR ("+msg+"): see the Google Cloud console for the cause; delete this Cluster to clean up"
	case "RECONCILING":
		obs.Updating, obs.Why = true, "the cluster is RECONCILING"
	}
	s.poolStatus = make(map[string]string, len(cl.NodePools))
	for _, np := range cl.NodePools {
		s.poolStatus[np.Name] = np.Status
		switch np.Status {
		case "PROVISIONING", "RECONCILING", "STOPPING":
			if !obs.Creating {
				obs.Updating, obs.Why = true, fmt.Sprintf("node pool %s is %s", np.Name, np.Status)
			}
		}
	}
	for _, id := range c.Status.PendingOperations {
		op, err := s.api.GetOperation(ctx, s.parent+"/operations/"+id)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, classify("operations.get", err)
		}
		if op.Status != "DONE" {
			obs.Pending = append(obs.Pending, id)
			obs.Updating = true
			obs.Why = fmt.Sprintf("GKE operation %s (%s) is %s", id, op.OperationType, op.Status)
		} else if op.Error != nil || op.StatusMessage != "" {
			msg := op.StatusMessage
			if op.Error != nil && op.Error.Message != "" {
				msg = op.Error.Message
			}
			if obs.FailedOps == nil {
				obs.FailedOps = map[string]string{}
			}
			obs.FailedOps[id] = fmt.Sprintf("GKE operation %s (%s): %s", id, op.OperationType, msg)
		}
	}
	if cl.Status == "RUNNING" || cl.Status == "RECONCILING" {
		if err := s.observeExternal(ctx, c, obs); err != nil {
			return nil, err
		}
	}
	tree, err := hosted.ToTree(s.upstream(cl))
	if err != nil {
		return nil, err
	}
	obs.Upstream = tree
	return obs, nil
}

// upstream builds the cluster in the config's type, every supported field set. Identity fields
// come from the config: a refresh never changes them.
func (s *session) upstream(cl *container.Cluster) *v1.GKEClusterConfig {
	cfg := s.cfg
	up := &v1.GKEClusterConfig{
		ClusterName: cfg.ClusterName, ProjectID: cfg.ProjectID, Region: cfg.Region, Zone: cfg.Zone,
		Imported: cfg.Imported, CredentialSecret: cfg.CredentialSecret,
		KubernetesVersion: shownVersion(cl.CurrentMasterVersion, cfg.KubernetesVersion),
		Labels:            orEmpty(cl.ResourceLabels),
		LoggingService:    ptr.To(cl.LoggingService),
		MonitoringService: ptr.To(cl.MonitoringService),
		Network:           ptr.To(cl.Network),
		Subnetwork:        ptr.To(cl.Subnetwork),
		MasterAuthorizedNetworks: &v1.GKEMasterAuthorizedNetworks{
			Enabled: ptr.To(false), CIDRBlocks: []v1.GKECIDRBlock{},
		},
		Locations:         sortedStrings(cl.Locations),
		MaintenanceWindow: ptr.To(""),
		NodePools:         make([]v1.GKENodePool, 0, len(cl.NodePools)),
	}
	if man := cl.MasterAuthorizedNetworksConfig; man != nil {
		up.MasterAuthorizedNetworks.Enabled = ptr.To(man.Enabled)
		for _, b := range man.CidrBlocks {
			if b != nil {
				up.MasterAuthorizedNetworks.CIDRBlocks = append(up.MasterAuthorizedNetworks.CIDRBlocks, v1.GKECIDRBlock{DisplayName: b.DisplayName, CIDRBlock: b.CidrBlock})
			}
		}
	}
	if mp := cl.MaintenancePolicy; mp != nil && mp.Window != nil && mp.Window.DailyMaintenanceWindow != nil {
		up.MaintenanceWindow = ptr.To(mp.Window.DailyMaintenanceWindow.StartTime)
	}
	want := map[string]*v1.GKENodePool{}
	for i := range cfg.NodePools {
		want[cfg.NodePools[i].Name] = &cfg.NodePools[i]
	}
	for _, np := range cl.NodePools {
		if np.Status == "STOPPING" {
			continue // on its way out
		}
		var wantVersion *string
		if w := want[np.Name]; w != nil {
			wantVersion = w.Version
		}
		if wantVersion == nil {
			wantVersion = cfg.KubernetesVersion
		}
		p := v1.GKENodePool{
			Name:             np.Name,
			InitialNodeCount: ptr.To(np.InitialNodeCount),
			Version:          shownVersion(np.Version, wantVersion),
			Autoscaling:      &v1.GKENodePoolAutoscaling{Enabled: ptr.To(false), MinNodeCount: ptr.To[int64](0), MaxNodeCount: ptr.To[int64](0)},
			Management:       &v1.GKENodePoolManagement{AutoRepair: ptr.To(false), AutoUpgrade: ptr.To(false)},
			Config:           &v1.GKENodeConfig{},
		}
		if a := np.Autoscaling; a != nil {
			p.Autoscaling = &v1.GKENodePoolAutoscaling{Enabled: ptr.To(a.Enabled), MinNodeCount: ptr.To(a.MinNodeCount), MaxNodeCount: ptr.To(a.MaxNodeCount)}
		}
		if m := np.Management; m != nil {
			p.Management = &v1.GKENodePoolManagement{AutoRepair: ptr.To(m.AutoRepair), AutoUpgrade: ptr.To(m.AutoUpgrade)}
		}
		nc := np.Config
		if nc == nil {
			nc = &container.NodeConfig{}
		}
		p.Config = &v1.GKENodeConfig{
			MachineType: ptr.To(nc.MachineType), DiskSizeGb: ptr.To(nc.DiskSizeGb), DiskType: ptr.To(nc.DiskType),
			ImageType: ptr.To(nc.ImageType), Labels: orEmpty(nc.Labels), Taints: make([]v1.GKENodeTaint, 0, len(nc.Taints)),
			Tags: sortedStrings(nc.Tags), Preemptible: ptr.To(nc.Preemptible), ServiceAccount: ptr.To(nc.ServiceAccount),
			OAuthScopes: sortedStrings(nc.OauthScopes),
		}
		for _, t := range nc.Taints {
			if t != nil {
				p.Config.Taints = append(p.Config.Taints, v1.GKENodeTaint{Key: t.Key, Value: t.Value, Effect: t.Effect})
			}
		}
		up.NodePools = append(up.NodePools, p)
	}
	sort.Slice(up.NodePools, func(i, j int) bool { return up.NodePools[i].Name < up.NodePools[j].Name })
	return up
}

// Create implements hosted.Session: one clusters.create with the node pools.
func (s *session) Create(ctx context.Context, _ *v1.Cluster, config map[string]any) (*hosted.Started, error) {
	cfg, err := typed(config)
	if err != nil {
		return nil, err
	}
	cl := &container.Cluster{
		Name:                           cfg.ClusterName,
		InitialClusterVersion:          ptr.Deref(cfg.KubernetesVersion, ""),
		ResourceLabels:                 cfg.Labels,
		LoggingService:                 ptr.Deref(cfg.LoggingService, ""),
		MonitoringService:              ptr.Deref(cfg.MonitoringService, ""),
		Network:                        ptr.Deref(cfg.Network, ""),
		Subnetwork:                     ptr.Deref(cfg.Subnetwork, ""),
		MasterAuthorizedNetworksConfig: authorizedNetworks(cfg.MasterAuthorizedNetworks),
		Locations:                      cfg.Locations,
		MaintenancePolicy:              maintenancePolicy(cfg.MaintenanceWindow, ""),
	}
	for i := range cfg.NodePools {
		cl.NodePools = append(cl.NodePools, nodePool(&cfg.NodePools[i]))
	}
	op, err := s.api.CreateCluster(ctx, s.parent, &container.CreateClusterRequest{Cluster: cl})
	if err != nil {
		return nil, classify("clusters.create", err)
	}
	return &hosted.Started{ID: op.Name, What: "creating GKE cluster " + cfg.ClusterName}, nil
}

func authorizedNetworks(man *v1.GKEMasterAuthorizedNetworks) *container.MasterAuthorizedNetworksConfig {
	if man == nil {
		return nil
	}
	out := &container.MasterAuthorizedNetworksConfig{Enabled: ptr.Deref(man.Enabled, false), ForceSendFields: []string{"Enabled"}}
	for _, b := range man.CIDRBlocks {
		out.CidrBlocks = append(out.CidrBlocks, &container.CidrBlock{DisplayName: b.DisplayName, CidrBlock: b.CIDRBlock})
	}
	return out
}

func maintenancePolicy(window *string, resourceVersion string) *container.MaintenancePolicy {
	if window == nil {
		return nil
	}
	mp := &container.MaintenancePolicy{ResourceVersion: resourceVersion}
	if *window != "" {
		mp.Window = &container.MaintenanceWindow{DailyMaintenanceWindow: &container.DailyMaintenanceWindow{StartTime: *window}}
	}
	return mp
}

func nodePool(np *v1.GKENodePool) *container.NodePool {
	out := &container.NodePool{
		Name:             np.Name,
		InitialNodeCount: ptr.Deref(np.InitialNodeCount, 0),
		Version:          ptr.Deref(np.Version, ""),
	}
	if a := np.Autoscaling; a != nil {
		out.Autoscaling = &container.NodePoolAutoscaling{Enabled: ptr.Deref(a.Enabled, false), MinNodeCount: ptr.Deref(a.MinNodeCount, 0), MaxNodeCount: ptr.Deref(a.MaxNodeCount, 0)}
	}
	if m := np.Management; m != nil {
		out.Management = &container.NodeManagement{AutoRepair: ptr.Deref(m.AutoRepair, false), AutoUpgrade: ptr.Deref(m.AutoUpgrade, false), ForceSendFields: []string{"AutoRepair", "AutoUpgrade"}}
	}
	if nc := np.Config; nc != nil {
		out.Config = &container.NodeConfig{
			MachineType: ptr.Deref(nc.MachineType, ""), DiskSizeGb: ptr.Deref(nc.DiskSizeGb, 0), DiskType: ptr.Deref(nc.DiskType, ""),
			ImageType: ptr.Deref(nc.ImageType, ""), Labels: nc.Labels, Taints: taints(nc.Taints), Tags: nc.Tags,
			Preemptible: ptr.Deref(nc.Preemptible, false), ServiceAccount: ptr.Deref(nc.ServiceAccount, ""), OauthScopes: nc.OAuthScopes,
		}
	}
	return out
}

func taints(ts []v1.GKENodeTaint) []*container.NodeTaint {
	out := make([]*container.NodeTaint, 0, len(ts))
	for _, t := range ts {
		out = append(out, &container.NodeTaint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return out
}

// Delete implements hosted.Session: clusters.delete removes the node pools with the cluster.
func (s *session) Delete(ctx context.Context, _ *v1.Cluster, obs *hosted.Observation) (bool, error) {
	if !obs.Exists {
		return true, nil
	}
	if obs.Status == "STOPPING" {
		return false, nil
	}
	_, err := s.api.DeleteCluster(ctx, s.clusterName())
	if isNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, classify("clusters.delete", err)
	}
	return false, nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	if out == nil {
		out = []string{}
	}
	sort.Strings(out)
	return out
}
