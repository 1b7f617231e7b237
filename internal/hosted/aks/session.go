package aks

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

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azruntime "github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// ARM provisioning states.
const (
	stateSucceeded = "Succeeded"
	stateFailed    = "Failed"
	stateCanceled  = "Canceled"
	stateCreating  = "Creating"
	stateDeleting  = "Deleting"
)

// ClustersAPI is the part of the managedClusters client the provider uses;
// *armcontainerservice.ManagedClustersClient implements it.
type ClustersAPI interface {
	Get(ctx context.Context, resourceGroupName, resourceName string, options *armcontainerservice.ManagedClustersClientGetOptions) (armcontainerservice.ManagedClustersClientGetResponse, error)
	BeginCreateOrUpdate(ctx context.Context, resourceGroupName, resourceName string, parameters armcontainerservice.ManagedCluster, options *armcontainerservice.ManagedClustersClientBeginCreateOrUpdateOptions) (*azruntime.Poller[armcontainerservice.ManagedClustersClientCreateOrUpdateResponse], error)
	BeginUpdateTags(ctx context.Context, resourceGroupName, resourceName string, parameters armcontainerservice.TagsObject, options *armcontainerservice.ManagedClustersClientBeginUpdateTagsOptions) (*azruntime.Poller[armcontainerservice.ManagedClustersClientUpdateTagsResponse], error)
	BeginDelete(ctx context.Context, resourceGroupName, resourceName string, options *armcontainerservice.ManagedClustersClientBeginDeleteOptions) (*azruntime.Poller[armcontainerservice.ManagedClustersClientDeleteResponse], error)
}

// PoolsAPI is the part of the agentPools client the provider uses;
// *armcontainerservice.AgentPoolsClient implements it.
type PoolsAPI interface {
	BeginCreateOrUpdate(ctx context.Context, resourceGroupName, resourceName, agentPoolName string, parameters armcontainerservice.AgentPool, options *armcontainerservice.AgentPoolsClientBeginCreateOrUpdateOptions) (*azruntime.Poller[armcontainerservice.AgentPoolsClientCreateOrUpdateResponse], error)
	BeginDelete(ctx context.Context, resourceGroupName, resourceName, agentPoolName string, options *armcontainerservice.AgentPoolsClientBeginDeleteOptions) (*azruntime.Poller[armcontainerservice.AgentPoolsClientDeleteResponse], error)
}

type session struct {
	clusters ClustersAPI
	pools    PoolsAPI
	cfg      *v1.AKSClusterConfig
	// Filled by Observe for Push and Delete: the cluster as GET returned it, and its pools.
	mc        *armcontainerservice.ManagedCluster
	poolState map[string]string
}

// classify maps ARM errors to the engine's error kinds.
func classify(op string, err error) error {
	var af *azidentity.AuthenticationFailedError
	if errors.As(err, &af) {
		// The token (sign-in) request failed. Only a refusal is about the credentials; the
		// rest is transient and described in one stable line (the SDK's text spans lines and
		// carries trace IDs and timestamps).
		switch {
		case af.RawResponse == nil:
			return signInUnanswered(op, err)
		case af.RawResponse.StatusCode == http.StatusTooManyRequests:
			return hosted.Throttled(fmt.Errorf("%w: %w", hosted.ErrThrottled, tokenError(op, af)), hosted.ParseRetryAfter(af.RawResponse.Header, time.Now()))
		case af.RawResponse.StatusCode >= 500:
			return tokenError(op, af) // transient: retried with backoff
		}
		return fmt.Errorf("%w: %w", hosted.ErrCredentials, tokenError(op, af))
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return fmt.Errorf("%s: %w", op, err)
	}
	code, msg := re.ErrorCode, armMessage(re)
	pe := &hosted.ProviderError{Op: op, Code: code, Message: msg, Err: errors.New(msg)}
	switch {
	case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %w", hosted.ErrCredentials, pe)
	case re.StatusCode == http.StatusTooManyRequests:
		// azcore gives up on a Retry-After longer than its MaxRetryDelay (60s by default) and
		// returns the 429: the wait it asks for goes with the error, for the engine to honour.
		var after time.Duration
		if re.RawResponse != nil {
			after = hosted.ParseRetryAfter(re.RawResponse.Header, time.Now())
		}
		return hosted.Throttled(fmt.Errorf("%w: %w", hosted.ErrThrottled, pe), after)
	case re.StatusCode == http.StatusConflict:
		// OperationNotAllowed "... in progress ...": another operation runs; wait and retry.
		return fmt.Errorf("%w: %w", hosted.ErrBusy, pe)
	case re.StatusCode == http.StatusPreconditionFailed:
		// The eTag sent in If-Match is stale: someone changed the resource since Observe read
		// it. Not a failure: the next pass re-reads, merges their change and pushes again.
		return fmt.Errorf("%w: %w", hosted.ErrChangedSinceRead, pe)
	case re.StatusCode == http.StatusNotFound && code == "ResourceGroupNotFound":
		return &hosted.FieldError{Field: "aksConfig.resourceGroup", Reason: v1.ReasonResourceGroupNotFound, Message: msg + " Create it, or fix aksConfig.resourceGroup."}
	case re.StatusCode == http.StatusBadRequest:
		return &hosted.FieldError{Field: "aksConfig", Reason: v1.ReasonRejectedByAKS, Message: code + ": " + msg}
	}
	return pe
}

// signInUnanswered is the error of a token request that got no answer (a timeout, a connection
// refused or reset): transient, in one stable line; the SDK's text is kept for the log.
func signInUnanswered(op string, err error) error {
	what := "did not answer"
	if hosted.IsTimeout(err) {
		what = "did not answer in time"
	}
	pe := &hosted.ProviderError{Op: op, Code: "token", Message: "the sign-in endpoint (Microsoft Entra ID) " + what + "; drover retries with backoff", Err: err}
	if hosted.IsTimeout(err) {
		// Keep the deadline visible to the engine, which reports a timeout.
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, pe)
	}
	return pe
}

// tokenError is the ProviderError of a token request Microsoft Entra ID refused: its OAuth
// error code and the first line of its description (the AADSTS code and text; the lines after
// it are a trace ID, a correlation ID and a timestamp that differ on every call), and which key
// of the credential Secret to check. The SDK's error text (the request line, the whole response
// body) stays in Err, for the log.
func tokenError(op string, af *azidentity.AuthenticationFailedError) *hosted.ProviderError {
	var body struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
		Codes       []int  `json:"error_codes"`
	}
	if af.RawResponse != nil {
		if b, err := azruntime.Payload(af.RawResponse); err == nil {
			_ = json.Unmarshal(b, &body)
		}
	}
	status := 0
	if af.RawResponse != nil {
		status = af.RawResponse.StatusCode
	}
	code, msg := hosted.TokenRefusal(body.Error, body.Description, status)
	if key := aadKey(body.Codes, msg); key != "" {
		msg = hosted.Sentence(msg) + " Check the Secret's key " + key + "."
	}
	return &hosted.ProviderError{Op: op, Code: code, Message: msg, Err: af}
}

// aadKeys name the credential Secret's key an Entra ID error code points at.
var aadKeys = map[int]string{
	7000215: KeyClientSecret, // invalid client secret
	7000222: KeyClientSecret, // the client secret expired
	7000216: KeyClientSecret, // no client secret sent
	700016:  KeyClientID,     // no such application in the tenant
	700027:  KeyClientID,     // client assertion for another application
	90002:   KeyTenantID,     // no such tenant
	900023:  KeyTenantID,     // malformed tenant identifier
}

// aadKey is the Secret key an Entra ID error is about: by its error_codes, or the AADSTS code
// at the start of the message.
func aadKey(codes []int, msg string) string {
	for _, c := range codes {
		if k, ok := aadKeys[c]; ok {
			return k
		}
	}
	var n int
	if _, err := fmt.Sscanf(msg, "AADSTS%d:", &n); err == nil {
		return aadKeys[n]
	}
	return ""
}

// armMessage is the message of an ARM error body ({"error":{"code","message"}}).
func armMessage(re *azcore.ResponseError) string {
	if re.RawResponse != nil {
		if b, err := azruntime.Payload(re.RawResponse); err == nil {
			var body struct {
				Error struct{ Message string } `json:"error"`
			}
			if json.Unmarshal(b, &body) == nil && body.Error.Message != "" {
				return body.Error.Message
			}
		}
	}
	return http.StatusText(re.StatusCode)
}

func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound && re.ErrorCode != "ResourceGroupNotFound"
}

func busy(state string) bool {
	return state != "" && state != stateSucceeded && state != stateFailed && state != stateCanceled
}

// Observe implements hosted.Session: one managedClusters GET, which carries every agent pool
// and every provisioning state (the steady-state budget).
func (s *session) Observe(ctx context.Context, c *v1.Cluster) (*hosted.Observation, error) {
	out, err := s.clusters.Get(ctx, s.cfg.ResourceGroup, s.cfg.ClusterName, nil)
	if isNotFound(err) {
		return &hosted.Observation{Exists: false}, nil
	}
	if err != nil {
		return nil, classify("ManagedClusters.Get", err)
	}
	mc := out.ManagedCluster
	s.mc = &mc
	props := mc.Properties
	if props == nil {
		props = &armcontainerservice.ManagedClusterProperties{}
	}
	state := ptr.Deref(props.ProvisioningState, stateSucceeded)
	obs := &hosted.Observation{Exists: true, Status: state, Details: map[string]string{"id": ptr.Deref(mc.ID, ""), "fqdn": ptr.Deref(props.Fqdn, ptr.Deref(props.PrivateFQDN, ""))}}
	switch {
	case state == stateCreating:
		obs.Creating = true
	case state == stateDeleting:
		obs.Deleting, obs.Updating, obs.Why = true, true, "the cluster is Deleting"
	case state == stateFailed && (c.Status.Phase == "" || c.Status.Phase == v1.PhaseCreating):
		obs.Failed, obs.FailedMessage = true, "AKS reports that creating the cluster Failed: see the Azure activity log for the cause; delete this Cluster to clean up"
	case busy(state):
		obs.Updating, obs.Why = true, "the cluster is "+state
	}
	s.poolState = map[string]string{}
	for _, p := range props.AgentPoolProfiles {
		if p == nil || p.Name == nil {
			continue
		}
		ps := ptr.Deref(p.ProvisioningState, stateSucceeded)
		s.poolState[*p.Name] = ps
		if busy(ps) && !obs.Updating {
			obs.Updating, obs.Why = true, fmt.Sprintf("node pool %s is %s", *p.Name, ps)
		}
	}
	s.followOperations(c, state, obs)
	tree, err := hosted.ToTree(s.upstream(&mc))
	if err != nil {
		return nil, err
	}
	obs.Upstream = tree
	return obs, nil
}

// followOperations reports the operations drover started (see operationID) as still running, or
// failed, from the provisioningState of what each one changed.
func (s *session) followOperations(c *v1.Cluster, clusterState string, obs *hosted.Observation) {
	for _, id := range c.Status.PendingOperations {
		target, _, ok := strings.Cut(id, ":")
		if !ok {
			continue
		}
		state, exists := clusterState, true
		switch {
		case strings.HasPrefix(target, "pool/"):
			state, exists = s.poolState[strings.TrimPrefix(target, "pool/")]
		case strings.HasPrefix(target, "deleted-pool/"):
			state, exists = s.poolState[strings.TrimPrefix(target, "deleted-pool/")]
			if !exists {
				continue // deleted: done
			}
		}
		switch {
		case !exists:
			// The pool is gone although drover did not delete it: nothing left to follow.
		case busy(state):
			obs.Pending = append(obs.Pending, id)
		case state == stateFailed:
			if obs.FailedOps == nil {
				obs.FailedOps = map[string]string{}
			}
			obs.FailedOps[id] = fmt.Sprintf("AKS reports %s provisioningState Failed (see the Azure activity log)", strings.Replace(target, "/", " ", 1))
		}
	}
}

// upstream builds the cluster in the config's type, every supported field set.
func (s *session) upstream(mc *armcontainerservice.ManagedCluster) *v1.AKSClusterConfig {
	cfg := s.cfg
	// Identity fields come from the config: a refresh never changes them.
	up := &v1.AKSClusterConfig{
		ClusterName: cfg.ClusterName, ResourceGroup: cfg.ResourceGroup, ResourceLocation: cfg.ResourceLocation,
		Imported: cfg.Imported, CredentialSecret: cfg.CredentialSecret,
		Tags:               fromPtrMap(mc.Tags),
		AuthorizedIPRanges: []string{},
		PrivateCluster:     ptr.To(false),
		NodePools:          []v1.AKSNodePool{},
	}
	props := mc.Properties
	if props == nil {
		props = &armcontainerservice.ManagedClusterProperties{}
	}
	up.KubernetesVersion = ptr.To(ptr.Deref(props.KubernetesVersion, ptr.Deref(props.CurrentKubernetesVersion, "")))
	up.DNSPrefix = ptr.To(ptr.Deref(props.DNSPrefix, ptr.Deref(props.FqdnSubdomain, "")))
	np := props.NetworkProfile
	if np == nil {
		np = &armcontainerservice.NetworkProfile{}
	}
	up.NetworkPlugin = ptr.To(string(ptr.Deref(np.NetworkPlugin, "")))
	up.NetworkPolicy = ptr.To(string(ptr.Deref(np.NetworkPolicy, "")))
	up.PodCIDR = ptr.To(ptr.Deref(np.PodCidr, ""))
	up.ServiceCIDR = ptr.To(ptr.Deref(np.ServiceCidr, ""))
	up.DNSServiceIP = ptr.To(ptr.Deref(np.DNSServiceIP, ""))
	up.LoadBalancerSKU = ptr.To(strings.ToLower(string(ptr.Deref(np.LoadBalancerSKU, ""))))
	up.OutboundType = ptr.To(string(ptr.Deref(np.OutboundType, "")))
	if ap := props.APIServerAccessProfile; ap != nil {
		up.AuthorizedIPRanges = sortedStrings(ap.AuthorizedIPRanges)
		up.PrivateCluster = ptr.To(ptr.Deref(ap.EnablePrivateCluster, false))
	}
	for _, p := range props.AgentPoolProfiles {
		if p == nil || p.Name == nil || ptr.Deref(p.ProvisioningState, "") == stateDeleting {
			continue // already on its way out
		}
		up.NodePools = append(up.NodePools, s.upstreamPool(p))
	}
	sort.Slice(up.NodePools, func(i, j int) bool { return up.NodePools[i].Name < up.NodePools[j].Name })
	return up
}

func (s *session) upstreamPool(p *armcontainerservice.ManagedClusterAgentPoolProfile) v1.AKSNodePool {
	auto := ptr.Deref(p.EnableAutoScaling, false)
	np := v1.AKSNodePool{
		Name:                *p.Name,
		Count:               ptr.To(ptr.Deref(p.Count, 0)),
		VMSize:              ptr.To(ptr.Deref(p.VMSize, "")),
		OSDiskSizeGB:        ptr.To(ptr.Deref(p.OSDiskSizeGB, 0)),
		Mode:                ptr.To(string(ptr.Deref(p.Mode, ModeUser))),
		OrchestratorVersion: ptr.To(ptr.Deref(p.OrchestratorVersion, ptr.Deref(p.CurrentOrchestratorVersion, ""))),
		AvailabilityZones:   sortedStrings(p.AvailabilityZones),
		EnableAutoScaling:   ptr.To(auto),
		MaxPods:             ptr.To(ptr.Deref(p.MaxPods, 0)),
		NodeLabels:          fromPtrMap(p.NodeLabels),
		NodeTaints:          sortedStrings(p.NodeTaints),
		MaxSurge:            ptr.To(""),
	}
	if p.UpgradeSettings != nil {
		np.MaxSurge = ptr.To(ptr.Deref(p.UpgradeSettings.MaxSurge, ""))
	}
	if auto {
		// min/max exist only with autoscaling (AKS requires them null otherwise). The node
		// count is the autoscaler's: report the config's value so a refresh never adopts, and
		// a push never reverts, what the autoscaler decided.
		np.MinCount, np.MaxCount = p.MinCount, p.MaxCount
		if cp := configPool(s.cfg, np.Name); cp != nil && cp.Count != nil {
			np.Count = ptr.To(*cp.Count)
		}
	}
	return np
}

func configPool(cfg *v1.AKSClusterConfig, name string) *v1.AKSNodePool {
	for i := range cfg.NodePools {
		if cfg.NodePools[i].Name == name {
			return &cfg.NodePools[i]
		}
	}
	return nil
}

// Create implements hosted.Session: one managed cluster PUT creates the cluster and its pools.
// The operation is started, not awaited.
func (s *session) Create(ctx context.Context, _ *v1.Cluster, config map[string]any) (*hosted.Started, error) {
	cfg, err := typed(config)
	if err != nil {
		return nil, err
	}
	mc := armcontainerservice.ManagedCluster{
		Location: to.Ptr(cfg.ResourceLocation),
		Tags:     toPtrMap(cfg.Tags),
		Identity: &armcontainerservice.ManagedClusterIdentity{Type: to.Ptr(armcontainerservice.ResourceIdentityTypeSystemAssigned)},
		Properties: &armcontainerservice.ManagedClusterProperties{
			KubernetesVersion: cfg.KubernetesVersion,
			DNSPrefix:         cfg.DNSPrefix,
			NetworkProfile: &armcontainerservice.NetworkProfile{
				NetworkPlugin:   enumPtr[armcontainerservice.NetworkPlugin](cfg.NetworkPlugin),
				NetworkPolicy:   enumPtr[armcontainerservice.NetworkPolicy](cfg.NetworkPolicy),
				PodCidr:         nonEmpty(cfg.PodCIDR),
				ServiceCidr:     nonEmpty(cfg.ServiceCIDR),
				DNSServiceIP:    nonEmpty(cfg.DNSServiceIP),
				LoadBalancerSKU: enumPtr[armcontainerservice.LoadBalancerSKU](cfg.LoadBalancerSKU),
				OutboundType:    enumPtr[armcontainerservice.OutboundType](cfg.OutboundType),
			},
			APIServerAccessProfile: &armcontainerservice.ManagedClusterAPIServerAccessProfile{
				AuthorizedIPRanges:   toPtrSlice(cfg.AuthorizedIPRanges),
				EnablePrivateCluster: cfg.PrivateCluster,
			},
		},
	}
	for i := range cfg.NodePools {
		np := &cfg.NodePools[i]
		props := poolBody(nil, np)
		prof := &armcontainerservice.ManagedClusterAgentPoolProfile{Name: to.Ptr(np.Name)}
		if err := convert(props, prof); err != nil {
			return nil, err
		}
		prof.Name = to.Ptr(np.Name)
		mc.Properties.AgentPoolProfiles = append(mc.Properties.AgentPoolProfiles, prof)
	}
	if _, err := s.clusters.BeginCreateOrUpdate(ctx, cfg.ResourceGroup, cfg.ClusterName, mc, nil); err != nil {
		return nil, classify("ManagedClusters.CreateOrUpdate", err)
	}
	return &hosted.Started{What: "creating AKS cluster " + cfg.ClusterName}, nil
}

// Delete implements hosted.Session: one cluster DELETE (AKS deletes the pools with it; it
// supersedes an operation in progress). Started, not awaited.
func (s *session) Delete(ctx context.Context, _ *v1.Cluster, obs *hosted.Observation) (bool, error) {
	if !obs.Exists {
		return true, nil
	}
	if obs.Status == stateDeleting {
		return false, nil
	}
	_, err := s.clusters.BeginDelete(ctx, s.cfg.ResourceGroup, s.cfg.ClusterName, nil)
	if isNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, classify("ManagedClusters.Delete", err)
	}
	return false, nil
}

func fromPtrMap(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = ptr.Deref(v, "")
	}
	return out
}

func toPtrMap(m map[string]string) map[string]*string {
	if m == nil {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = to.Ptr(v)
	}
	return out
}

func sortedStrings[T ~string](in []*T) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		if v != nil {
			out = append(out, string(*v))
		}
	}
	slices.Sort(out)
	return out
}

// toPtrSlice keeps an empty non-nil slice non-nil: ARM reads [] as "clear".
func toPtrSlice(in []string) []*string {
	if in == nil {
		return nil
	}
	out := make([]*string, 0, len(in))
	for _, v := range in {
		out = append(out, to.Ptr(v))
	}
	return out
}

func enumPtr[T ~string](v *string) *T {
	if v == nil || *v == "" {
		return nil
	}
	t := T(*v)
	return &t
}

func nonEmpty(v *string) *string {
	if v == nil || *v == "" {
		return nil
	}
	return v
}

// convert copies between SDK models of the same wire shape (an agent pool profile and agent
// pool properties) through their JSON form.
func convert(from, into any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return fmt.Errorf("convert agent pool: %w", err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("convert agent pool: %w", err)
	}
	return nil
}
