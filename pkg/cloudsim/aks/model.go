package aks

// Wire types of the ARM Microsoft.ContainerService API. The JSON names follow the SDK's
// models_serde.go (armcontainerservice/v6), which is the ground truth for what clients send and
// read. The same types hold the simulator's stored state: a cluster is kept in its wire form, so
// a GET is one struct copy and one json.Marshal, and a PUT is one json.Unmarshal.
//
// Only the fields drover reads or writes are modelled; anything else a client sends is dropped,
// as if the resource provider ignored it.

type managedCluster struct {
	ETag       string             `json:"eTag,omitempty"`
	ID         string             `json:"id,omitempty"`
	Name       string             `json:"name,omitempty"`
	Type       string             `json:"type,omitempty"`
	Location   string             `json:"location,omitempty"`
	Tags       map[string]string  `json:"tags,omitempty"`
	SKU        *clusterSKU        `json:"sku,omitempty"`
	Identity   *clusterIdentity   `json:"identity,omitempty"`
	Properties *clusterProperties `json:"properties,omitempty"`
}

type clusterSKU struct {
	Name string `json:"name,omitempty"`
	Tier string `json:"tier,omitempty"`
}

type clusterIdentity struct {
	Type                   string                           `json:"type,omitempty"`
	PrincipalID            string                           `json:"principalId,omitempty"`
	TenantID               string                           `json:"tenantId,omitempty"`
	UserAssignedIdentities map[string]*userAssignedIdentity `json:"userAssignedIdentities,omitempty"`
}

type userAssignedIdentity struct {
	ClientID    string `json:"clientId,omitempty"`
	PrincipalID string `json:"principalId,omitempty"`
}

type clusterProperties struct {
	ProvisioningState        string                   `json:"provisioningState,omitempty"`
	PowerState               *powerState              `json:"powerState,omitempty"`
	KubernetesVersion        string                   `json:"kubernetesVersion,omitempty"`
	CurrentKubernetesVersion string                   `json:"currentKubernetesVersion,omitempty"`
	DNSPrefix                string                   `json:"dnsPrefix,omitempty"`
	FQDNSubdomain            string                   `json:"fqdnSubdomain,omitempty"`
	FQDN                     string                   `json:"fqdn,omitempty"`
	PrivateFQDN              string                   `json:"privateFQDN,omitempty"`
	AgentPoolProfiles        []agentPoolProfile       `json:"agentPoolProfiles,omitempty"`
	LinuxProfile             *linuxProfile            `json:"linuxProfile,omitempty"`
	ServicePrincipalProfile  *servicePrincipalProfile `json:"servicePrincipalProfile,omitempty"`
	AddonProfiles            map[string]*addonProfile `json:"addonProfiles,omitempty"`
	NodeResourceGroup        string                   `json:"nodeResourceGroup,omitempty"`
	EnableRBAC               *bool                    `json:"enableRBAC,omitempty"`
	NetworkProfile           *networkProfile          `json:"networkProfile,omitempty"`
	APIServerAccessProfile   *apiServerAccessProfile  `json:"apiServerAccessProfile,omitempty"`
	DisableLocalAccounts     *bool                    `json:"disableLocalAccounts,omitempty"`
	SupportPlan              string                   `json:"supportPlan,omitempty"`
	MaxAgentPools            int32                    `json:"maxAgentPools,omitempty"`
	// IdentityProfile is rendered (the kubelet identity of a cluster with a managed identity,
	// which az aks update reads); what a client sends is ignored.
	IdentityProfile map[string]*identityRef `json:"identityProfile,omitempty"`
}

// identityRef is a UserAssignedIdentity reference (the kubelet identity).
type identityRef struct {
	ResourceID string `json:"resourceId,omitempty"`
	ClientID   string `json:"clientId,omitempty"`
	ObjectID   string `json:"objectId,omitempty"`
}

type powerState struct {
	Code string `json:"code,omitempty"`
}

// running is shared by every rendered resource: the simulator does not model stopped clusters.
var running = &powerState{Code: "Running"}

type linuxProfile struct {
	AdminUsername string            `json:"adminUsername,omitempty"`
	SSH           *sshConfiguration `json:"ssh,omitempty"`
}

type sshConfiguration struct {
	PublicKeys []sshPublicKey `json:"publicKeys,omitempty"`
}

type sshPublicKey struct {
	KeyData string `json:"keyData,omitempty"`
}

type servicePrincipalProfile struct {
	ClientID string `json:"clientId,omitempty"`
	// Secret is accepted on input and never returned, like ARM.
	Secret string `json:"secret,omitempty"`
}

type addonProfile struct {
	Enabled bool              `json:"enabled"`
	Config  map[string]string `json:"config,omitempty"`
}

type networkProfile struct {
	NetworkPlugin     string `json:"networkPlugin,omitempty"`
	NetworkPluginMode string `json:"networkPluginMode,omitempty"`
	NetworkPolicy     string `json:"networkPolicy,omitempty"`
	PodCidr           string `json:"podCidr,omitempty"`
	ServiceCidr       string `json:"serviceCidr,omitempty"`
	DNSServiceIP      string `json:"dnsServiceIP,omitempty"`
	LoadBalancerSKU   string `json:"loadBalancerSku,omitempty"`
	OutboundType      string `json:"outboundType,omitempty"`
}

type apiServerAccessProfile struct {
	// AuthorizedIPRanges has no omitempty on purpose: an empty list sent by a client clears the
	// ranges and is echoed back as [], as ARM does.
	AuthorizedIPRanges   []string `json:"authorizedIPRanges"`
	EnablePrivateCluster *bool    `json:"enablePrivateCluster,omitempty"`
}

// poolProperties is ManagedClusterAgentPoolProfileProperties: the body of an agent pool, both
// inside a cluster's agentPoolProfiles and as the properties of an AgentPool resource.
type poolProperties struct {
	ETag                       string            `json:"eTag,omitempty"`
	Count                      *int32            `json:"count,omitempty"`
	VMSize                     string            `json:"vmSize,omitempty"`
	OSDiskSizeGB               *int32            `json:"osDiskSizeGB,omitempty"`
	OSDiskType                 string            `json:"osDiskType,omitempty"`
	OSType                     string            `json:"osType,omitempty"`
	OSSKU                      string            `json:"osSKU,omitempty"`
	Type                       string            `json:"type,omitempty"`
	Mode                       string            `json:"mode,omitempty"`
	OrchestratorVersion        string            `json:"orchestratorVersion,omitempty"`
	CurrentOrchestratorVersion string            `json:"currentOrchestratorVersion,omitempty"`
	ProvisioningState          string            `json:"provisioningState,omitempty"`
	PowerState                 *powerState       `json:"powerState,omitempty"`
	AvailabilityZones          []string          `json:"availabilityZones,omitempty"`
	EnableAutoScaling          *bool             `json:"enableAutoScaling,omitempty"`
	MinCount                   *int32            `json:"minCount,omitempty"`
	MaxCount                   *int32            `json:"maxCount,omitempty"`
	MaxPods                    *int32            `json:"maxPods,omitempty"`
	NodeLabels                 map[string]string `json:"nodeLabels,omitempty"`
	NodeTaints                 []string          `json:"nodeTaints,omitempty"`
	Tags                       map[string]string `json:"tags,omitempty"`
	UpgradeSettings            *upgradeSettings  `json:"upgradeSettings,omitempty"`
	VnetSubnetID               string            `json:"vnetSubnetID,omitempty"`
}

type upgradeSettings struct {
	MaxSurge string `json:"maxSurge,omitempty"`
}

// agentPoolProfile is one entry of a cluster's agentPoolProfiles.
type agentPoolProfile struct {
	Name string `json:"name"`
	poolProperties
}

// agentPool is the AgentPool resource of the agentPools API.
type agentPool struct {
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Type       string          `json:"type,omitempty"`
	Properties *poolProperties `json:"properties,omitempty"`
}

type clusterList struct {
	Value    []managedCluster `json:"value"`
	NextLink string           `json:"nextLink,omitempty"`
}

type poolList struct {
	Value []agentPool `json:"value"`
}

type tagsObject struct {
	Tags map[string]string `json:"tags"`
}

type credentialResults struct {
	Kubeconfigs []credentialResult `json:"kubeconfigs"`
}

type credentialResult struct {
	Name  string `json:"name"`
	Value []byte `json:"value"` // base64 (std) like the SDK's Base64StdFormat
}

// operationStatus is the body of the Azure-AsyncOperation URL.
type operationStatus struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Status    string     `json:"status"`
	StartTime string     `json:"startTime,omitempty"`
	EndTime   string     `json:"endTime,omitempty"`
	Error     *errorBody `json:"error,omitempty"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type errorResponse struct {
	Error errorBody `json:"error"`
}
