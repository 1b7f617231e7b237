// Package aks is the Azure Kubernetes Service provider of the hosted-cluster sync engine, built
// on azidentity and armcontainerservice/v6.
//
// Steady state costs one ARM call per cluster per refresh: a managedClusters GET carries the
// cluster and every agent pool with their provisioning states, which is all the upstream builder
// and the "is updating" probe need. Long-running operations are started (Begin*) and never
// waited for: the next GET, one poll interval later, shows their progress.
package aks

import (
	"time"

	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// Credential Secret keys.
const (
	KeyTenantID                = "tenantID"
	KeySubscriptionID          = "subscriptionID"
	KeyClientID                = "clientID"
	KeyClientSecret            = "clientSecret"
	KeyAuthorityHost           = "authorityHost"
	KeyResourceManagerEndpoint = "resourceManagerEndpoint"
	KeyCAPEM                   = "caPEM"
)

// Pool modes.
const (
	ModeSystem = "System"
	ModeUser   = "User"
)

// Provider is the AKS provider.
type Provider struct {
	// Retry bounds the SDK's own retries (zero value: the SDK default).
	Retry policy.RetryOptions
	// CredentialValidity is how long a listed cluster credential is used before it is listed
	// again (default DefaultCredentialValidity).
	CredentialValidity time.Duration
}

var _ hosted.Provider = Provider{}

var schema = merge.Schema{
	Maps:       []string{"tags", "nodePools.*.nodeLabels"},
	NamedLists: map[string]string{"nodePools": "name"},
	Sets:       []string{"authorizedIPRanges", "nodePools.*.availabilityZones", "nodePools.*.nodeTaints"},
}

// Name implements hosted.Provider.
func (Provider) Name() string { return "aks" }

// Matches implements hosted.Provider.
func (Provider) Matches(c *v1.Cluster) bool { return c.Spec.AKSConfig != nil }

// Schema implements hosted.Provider.
func (Provider) Schema() merge.Schema { return schema }

var slots = hosted.Slots[v1.AKSClusterConfig]{
	Config: func(c *v1.Cluster) **v1.AKSClusterConfig { return &c.Spec.AKSConfig },
	Status: func(c *v1.Cluster, create bool) (**v1.AKSClusterConfig, **v1.AKSClusterConfig) {
		if c.Status.AKSStatus == nil {
			if !create {
				return nil, nil
			}
			c.Status.AKSStatus = &v1.AKSStatus{}
		}
		return &c.Status.AKSStatus.UpstreamSpec, &c.Status.AKSStatus.AppliedSpec
	},
}

// Config implements hosted.Provider.
func (Provider) Config(c *v1.Cluster) (map[string]any, error) { return slots.ConfigTree(c) }

// Applied implements hosted.Provider.
func (Provider) Applied(c *v1.Cluster) (map[string]any, error) { return slots.AppliedTree(c) }

// Upstream implements hosted.Provider.
func (Provider) Upstream(c *v1.Cluster) (map[string]any, error) { return slots.UpstreamTree(c) }

// SetConfig implements hosted.Provider.
func (Provider) SetConfig(c *v1.Cluster, config map[string]any) error {
	return slots.SetConfigTree(c, config)
}

// SetStatus implements hosted.Provider.
func (Provider) SetStatus(c *v1.Cluster, upstream, applied map[string]any, obs *hosted.Observation) error {
	if err := slots.SetStatusTrees(c, upstream, applied); err != nil {
		return err
	}
	if obs != nil {
		st := c.Status.AKSStatus
		st.ProvisioningState, st.ID, st.FQDN = obs.Status, obs.Details["id"], obs.Details["fqdn"]
	}
	return nil
}

// Imported implements hosted.Provider.
func (Provider) Imported(c *v1.Cluster) bool { return c.Spec.AKSConfig.Imported }

// CredentialSecret implements hosted.Provider.
func (Provider) CredentialSecret(c *v1.Cluster) string { return c.Spec.AKSConfig.CredentialSecret }

// RateLimitKey implements hosted.Provider: ARM throttles per subscription (and region, but the
// subscription bucket is the one a fleet of clusters exhausts).
func (Provider) RateLimitKey(_ *v1.Cluster, s *corev1.Secret) string {
	return "aks/" + strings.ToLower(strings.TrimSpace(string(s.Data[KeySubscriptionID])))
}

// CreateBase implements hosted.Provider: the managed cluster PUT creates the cluster and every
// agent pool in it, so the whole config is applied by the create call.
func (Provider) CreateBase(config map[string]any) map[string]any { return config }

// Validate implements hosted.Provider: the config alone, before anything is sent.
func (Provider) Validate(c *v1.Cluster) error {
	cfg := c.Spec.AKSConfig
	switch {
	case cfg.ClusterName == "":
		return bad("clusterName", v1.ReasonMissingField, "the AKS cluster name is required")
	case !clusterNameRE.MatchString(cfg.ClusterName):
		return bad("clusterName", v1.ReasonInvalidName, "%q is not an AKS cluster name: 1 to 63 letters, digits, '-' and '_', starting and ending with a letter or digit", cfg.ClusterName)
	case cfg.ResourceGroup == "":
		return bad("resourceGroup", v1.ReasonMissingField, "the Azure resource group is required")
	case cfg.ResourceLocation == "":
		return bad("resourceLocation", v1.ReasonMissingField, "the Azure region is required, e.g. westeurope")
	case !slices.Contains(Locations, normLocation(cfg.ResourceLocation)):
		return bad("resourceLocation", v1.ReasonUnknownLocation, "%q is not an Azure region that has AKS (e.g. westeurope, eastus2)", cfg.ResourceLocation)
	case cfg.CredentialSecret == "":
		return bad("credentialSecret", v1.ReasonMissingField, "the name of the credential Secret is required")
	}
	if cfg.KubernetesVersion != nil {
		if _, ok := parseVersion(*cfg.KubernetesVersion); !ok {
			return bad("kubernetesVersion", v1.ReasonInvalidVersion, "%q is not a Kubernetes version such as \"1.33\" or \"1.33.1\"", *cfg.KubernetesVersion)
		}
	}
	if !cfg.Imported {
		switch {
		case cfg.KubernetesVersion == nil:
			return bad("kubernetesVersion", v1.ReasonMissingField, "required to create a cluster, e.g. \"1.33\"")
		case cfg.DNSPrefix == nil || *cfg.DNSPrefix == "":
			return bad("dnsPrefix", v1.ReasonMissingField, "required to create a cluster: the prefix of the API server's host name")
		}
	}
	if err := validateSystemPool(c); err != nil {
		return err
	}
	if cfg.DNSPrefix != nil && !dnsPrefixRE.MatchString(*cfg.DNSPrefix) {
		return bad("dnsPrefix", v1.ReasonInvalidDNSPrefix, "%q is not a DNS prefix: 1 to 54 letters, digits and '-', starting and ending with a letter or digit", *cfg.DNSPrefix)
	}
	for _, f := range []struct {
		field   string
		v       *string
		allowed []string
	}{
		{"networkPlugin", cfg.NetworkPlugin, NetworkPlugins},
		{"networkPolicy", cfg.NetworkPolicy, NetworkPolicies},
		{"loadBalancerSku", cfg.LoadBalancerSKU, LoadBalancerSKUs},
		{"outboundType", cfg.OutboundType, OutboundTypes},
	} {
		if f.v != nil && !slices.Contains(f.allowed, *f.v) {
			return bad(f.field, v1.ReasonInvalidValue, "%q is not one of %s", *f.v, strings.Join(f.allowed, ", "))
		}
	}
	if ptr.Deref(cfg.NetworkPolicy, "") == "azure" && cfg.NetworkPlugin != nil && *cfg.NetworkPlugin != "azure" {
		return bad("networkPolicy", v1.ReasonInvalidValue, "network policy azure requires networkPlugin azure, not %q", *cfg.NetworkPlugin)
	}
	for field, v := range map[string]*string{"podCidr": cfg.PodCIDR, "serviceCidr": cfg.ServiceCIDR} {
		if v != nil && *v != "" {
			if _, _, err := net.ParseCIDR(*v); err != nil {
				return bad(field, v1.ReasonInvalidCIDR, "%q is not a CIDR such as 10.0.0.0/16", *v)
			}
		}
	}
	if v := cfg.DNSServiceIP; v != nil && *v != "" && net.ParseIP(*v) == nil {
		return bad("dnsServiceIP", v1.ReasonInvalidIP, "%q is not an IP address such as 10.0.0.10", *v)
	}
	for i, r := range cfg.AuthorizedIPRanges {
		if _, _, err := net.ParseCIDR(r); err != nil && net.ParseIP(r) == nil {
			return bad(fmt.Sprintf("authorizedIPRanges[%d]", i), "InvalidCIDR", "%q is not an IP address or a CIDR such as 203.0.113.0/24", r)
		}
	}
	seen := map[string]bool{}
	for i := range cfg.NodePools {
		np := &cfg.NodePools[i]
		if err := validatePool(cfg, np, seen); err != nil {
			return err
		}
	}
	return nil
}

// validateSystemPool: AKS needs a System pool at all times. Pools whose mode is unmanaged (nil)
// are judged at push time, against upstream.
func validateSystemPool(c *v1.Cluster) error {
	cfg := c.Spec.AKSConfig
	if cfg.NodePools == nil && cfg.Imported {
		return nil
	}
	for _, p := range cfg.NodePools {
		if p.Mode == nil && cfg.Imported {
			return nil
		}
		if ptr.Deref(p.Mode, "") == ModeSystem {
			return nil
		}
	}
	if st := c.Status.AKSStatus; st != nil && st.UpstreamSpec != nil {
		for _, p := range st.UpstreamSpec.NodePools {
			if ptr.Deref(p.Mode, "") == ModeSystem {
				return lastSystemPool(p.Name)
			}
		}
	}
	return bad("nodePools", v1.ReasonNoSystemPool, "at least one node pool must have mode System: AKS needs one to run the cluster's system pods")
}

func lastSystemPool(name string) error {
	return bad("nodePools["+name+"]", v1.ReasonLastSystemPool, "node pool %s is the cluster's last System pool: AKS needs at least one, so it can be neither deleted nor made a User pool; add another System pool first", name)
}

func validatePool(cfg *v1.AKSClusterConfig, np *v1.AKSNodePool, seen map[string]bool) error {
	f := "nodePools[" + np.Name + "]"
	if !poolNameRE.MatchString(np.Name) {
		return bad(f+".name", v1.ReasonInvalidPoolName, "%q is not a node pool name: a lowercase letter, then lowercase letters and digits, at most 12 characters", np.Name)
	}
	if seen[np.Name] {
		return bad(f+".name", v1.ReasonDuplicatePool, "node pool %q appears twice; names must be unique", np.Name)
	}
	seen[np.Name] = true
	if np.Mode != nil && *np.Mode != ModeSystem && *np.Mode != ModeUser {
		return bad(f+".mode", v1.ReasonInvalidValue, "%q is not System or User", *np.Mode)
	}
	minNodes := int32(0)
	if ptr.Deref(np.Mode, "") == ModeSystem {
		minNodes = 1
	}
	scaling := func(field, format string, args ...any) error {
		return bad(f+"."+field, v1.ReasonInvalidScaling, format, args...)
	}
	if np.Count != nil && (*np.Count < minNodes || *np.Count > maxPoolCount) {
		return scaling("count", "must be between %d and %d, got %d", minNodes, maxPoolCount, *np.Count)
	}
	auto := np.EnableAutoScaling
	switch {
	case auto != nil && !*auto && np.MinCount != nil:
		return scaling("minCount", "must be null (unset) when enableAutoScaling is false")
	case auto != nil && !*auto && np.MaxCount != nil:
		return scaling("maxCount", "must be null (unset) when enableAutoScaling is false")
	case np.MinCount != nil && (*np.MinCount < minNodes || *np.MinCount > maxPoolCount):
		return scaling("minCount", "must be between %d and %d, got %d", minNodes, maxPoolCount, *np.MinCount)
	case np.MaxCount != nil && (*np.MaxCount < 1 || *np.MaxCount > maxPoolCount):
		return scaling("maxCount", "must be between 1 and %d, got %d", maxPoolCount, *np.MaxCount)
	case np.MinCount != nil && np.MaxCount != nil && *np.MinCount > *np.MaxCount:
		return scaling("minCount", "minCount %d is larger than maxCount %d", *np.MinCount, *np.MaxCount)
	case ptr.Deref(auto, false) && np.Count != nil && np.MinCount != nil && *np.Count < *np.MinCount:
		return scaling("count", "count %d is below minCount %d", *np.Count, *np.MinCount)
	case ptr.Deref(auto, false) && np.Count != nil && np.MaxCount != nil && *np.Count > *np.MaxCount:
		return scaling("count", "count %d is above maxCount %d", *np.Count, *np.MaxCount)
	}
	if np.MaxPods != nil && (*np.MaxPods < 10 || *np.MaxPods > 250) {
		return bad(f+".maxPods", v1.ReasonInvalidValue, "must be between 10 and 250, got %d", *np.MaxPods)
	}
	if np.OSDiskSizeGB != nil && (*np.OSDiskSizeGB < 30 || *np.OSDiskSizeGB > 2048) {
		return bad(f+".osDiskSizeGB", v1.ReasonInvalidValue, "must be between 30 and 2048 GB, got %d", *np.OSDiskSizeGB)
	}
	if np.VMSize != nil && strings.TrimSpace(*np.VMSize) == "" {
		return bad(f+".vmSize", v1.ReasonInvalidValue, "must not be empty: a VM size such as Standard_D2s_v3")
	}
	if np.MaxSurge != nil && !maxSurgeRE.MatchString(*np.MaxSurge) {
		return bad(f+".maxSurge", v1.ReasonInvalidValue, "%q is not a node count or a percentage such as \"33%%\"", *np.MaxSurge)
	}
	for _, t := range np.NodeTaints {
		if !taintRE.MatchString(t) {
			return bad(f+".nodeTaints", v1.ReasonInvalidTaint, "%q is not a taint of the form key=value:NoSchedule|PreferNoSchedule|NoExecute", t)
		}
	}
	for _, z := range np.AvailabilityZones {
		if !zoneRE.MatchString(z) {
			return bad(f+".availabilityZones", v1.ReasonInvalidValue, "%q is not an availability zone (1, 2 or 3)", z)
		}
	}
	if np.OrchestratorVersion != nil {
		pv, ok := parseVersion(*np.OrchestratorVersion)
		if !ok {
			return bad(f+".orchestratorVersion", v1.ReasonInvalidVersion, "%q is not a Kubernetes version such as \"1.33\" or \"1.33.1\"", *np.OrchestratorVersion)
		}
		if cfg.KubernetesVersion != nil {
			if cv, ok := parseVersion(*cfg.KubernetesVersion); ok && pv.newerThan(cv) {
				return bad(f+".orchestratorVersion", v1.ReasonNodeVersionTooNew, "node pool version %s is newer than the cluster's %s: upgrade the cluster first", *np.OrchestratorVersion, *cfg.KubernetesVersion)
			}
		}
	}
	return nil
}

func bad(field, reason, format string, args ...any) error {
	return &hosted.FieldError{Field: "aksConfig." + field, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

const maxPoolCount = 1000

var (
	clusterNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?$`)
	poolNameRE    = regexp.MustCompile(`^[a-z][a-z0-9]{0,11}$`)
	dnsPrefixRE   = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,52}[a-zA-Z0-9])?$`)
	taintRE       = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?=[-A-Za-z0-9_.]*:(NoSchedule|PreferNoSchedule|NoExecute)$`)
	maxSurgeRE    = regexp.MustCompile(`^([1-9][0-9]*|[1-9][0-9]?%|100%)$`)
	zoneRE        = regexp.MustCompile(`^[1-3]$`)
	versionRE     = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?$`)
)

// version is a Kubernetes version as AKS takes it: "1.33" (an alias for the newest patch) or
// "1.33.1".
type version struct {
	major, minor, patch int
	hasPatch            bool
}

func parseVersion(s string) (version, bool) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return version{}, false
	}
	v := version{}
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.patch, _ = strconv.Atoi(m[3])
		v.hasPatch = true
	}
	return v, true
}

// newerThan reports whether v is strictly newer than o; an alias ("1.33") is as new as any
// patch of its minor.
func (v version) newerThan(o version) bool {
	if v.major != o.major {
		return v.major > o.major
	}
	if v.minor != o.minor {
		return v.minor > o.minor
	}
	return v.hasPatch && o.hasPatch && v.patch > o.patch
}

// Allowed values of the network fields.
var (
	NetworkPlugins   = []string{"azure", "kubenet", "none"}
	NetworkPolicies  = []string{"azure", "calico", "cilium", "none"}
	LoadBalancerSKUs = []string{"standard", "basic"}
	OutboundTypes    = []string{"loadBalancer", "userDefinedRouting", "managedNATGateway", "userAssignedNATGateway", "none"}
)

func normLocation(l string) string { return strings.ToLower(strings.ReplaceAll(l, " ", "")) }

// Locations are the Azure public-cloud regions with AKS (lower case, no spaces, as ARM names
// them).
var Locations = []string{
	"australiacentral", "australiacentral2", "australiaeast", "australiasoutheast", "austriaeast",
	"belgiumcentral", "brazilsouth", "brazilsoutheast", "canadacentral", "canadaeast", "centralindia",
	"centralus", "centraluseuap", "chilecentral", "eastasia", "eastus", "eastus2", "eastus2euap",
	"francecentral", "francesouth", "germanynorth", "germanywestcentral", "indonesiacentral",
	"israelcentral", "italynorth", "japaneast", "japanwest", "jioindiacentral", "jioindiawest",
	"koreacentral", "koreasouth", "malaysiawest", "mexicocentral", "newzealandnorth",
	"northcentralus", "northeurope", "norwayeast", "norwaywest", "polandcentral", "qatarcentral",
	"southafricanorth", "southafricawest", "southcentralus", "southeastasia", "southindia",
	"spaincentral", "swedencentral", "swedensouth", "switzerlandnorth", "switzerlandwest",
	"uaecentral", "uaenorth", "uksouth", "ukwest", "westcentralus", "westeurope", "westindia",
	"westus", "westus2", "westus3",
	"usgovarizona", "usgovtexas", "usgovvirginia", "chinaeast2", "chinaeast3", "chinanorth2", "chinanorth3",
}

// CreateDefaults implements hosted.Provider: what AKS itself would pick, made explicit so every
// field of a cluster drover creates is managed and the create call sends every value.
func (Provider) CreateDefaults(config map[string]any) (map[string]any, error) {
	cfg := &v1.AKSClusterConfig{}
	if err := hosted.FromTree(config, cfg); err != nil {
		return nil, err
	}
	if cfg.Tags == nil {
		cfg.Tags = map[string]string{}
	}
	if cfg.NetworkPlugin == nil {
		cfg.NetworkPlugin = ptr.To("kubenet")
	}
	if cfg.NetworkPolicy == nil {
		cfg.NetworkPolicy = ptr.To("none")
	}
	if cfg.PodCIDR == nil {
		cfg.PodCIDR = ptr.To("")
		if *cfg.NetworkPlugin == "kubenet" {
			cfg.PodCIDR = ptr.To("10.244.0.0/16")
		}
	}
	if cfg.ServiceCIDR == nil {
		cfg.ServiceCIDR = ptr.To("10.0.0.0/16")
	}
	if cfg.DNSServiceIP == nil {
		cfg.DNSServiceIP = ptr.To("10.0.0.10")
	}
	if cfg.LoadBalancerSKU == nil {
		cfg.LoadBalancerSKU = ptr.To("standard")
	}
	if cfg.OutboundType == nil {
		cfg.OutboundType = ptr.To("loadBalancer")
	}
	if cfg.AuthorizedIPRanges == nil {
		cfg.AuthorizedIPRanges = []string{}
	}
	if cfg.PrivateCluster == nil {
		cfg.PrivateCluster = ptr.To(false)
	}
	if cfg.NodePools == nil {
		cfg.NodePools = []v1.AKSNodePool{}
	}
	for i := range cfg.NodePools {
		poolDefaults(cfg, &cfg.NodePools[i])
	}
	return hosted.ToTree(cfg)
}

func poolDefaults(cfg *v1.AKSClusterConfig, np *v1.AKSNodePool) {
	if np.Mode == nil {
		np.Mode = ptr.To(ModeUser)
	}
	if np.VMSize == nil {
		np.VMSize = ptr.To("Standard_DS2_v2")
	}
	if np.OSDiskSizeGB == nil {
		np.OSDiskSizeGB = ptr.To[int32](128)
	}
	if np.OrchestratorVersion == nil {
		np.OrchestratorVersion = cfg.KubernetesVersion
	}
	if np.AvailabilityZones == nil {
		np.AvailabilityZones = []string{}
	}
	if np.EnableAutoScaling == nil {
		np.EnableAutoScaling = ptr.To(np.MinCount != nil && np.MaxCount != nil)
	}
	if np.Count == nil {
		np.Count = ptr.To[int32](3)
		if *np.EnableAutoScaling && np.MinCount != nil {
			np.Count = ptr.To(*np.MinCount)
		}
	}
	if np.MaxPods == nil {
		np.MaxPods = ptr.To[int32](110)
		if ptr.Deref(cfg.NetworkPlugin, "") == "azure" {
			np.MaxPods = ptr.To[int32](30)
		}
	}
	if np.NodeLabels == nil {
		np.NodeLabels = map[string]string{}
	}
	if np.NodeTaints == nil {
		np.NodeTaints = []string{}
	}
	if np.MaxSurge == nil {
		np.MaxSurge = ptr.To("10%")
	}
}

// Connect implements hosted.Provider.
func (p Provider) Connect(_ context.Context, c *v1.Cluster, s *corev1.Secret, transport hosted.Transport) (hosted.Session, error) {
	clients, err := p.clients(s, transport)
	if err != nil {
		return nil, err
	}
	return &session{clusters: clients.clusters, pools: clients.pools, cfg: c.Spec.AKSConfig}, nil
}
