package v1alpha1

// AKSClusterConfig is the desired state of an AKS cluster. Every field except clusterName,
// resourceGroup, resourceLocation, imported and credentialSecret is nullable: nil means "not
// managed by drover".
type AKSClusterConfig struct {
	// ClusterName is the AKS managed cluster's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName cannot be changed"
	ClusterName string `json:"clusterName"`
	// ResourceGroup holds the managed cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="resourceGroup cannot be changed"
	ResourceGroup string `json:"resourceGroup"`
	// ResourceLocation is the Azure region, e.g. westeurope.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="resourceLocation cannot be changed"
	ResourceLocation string `json:"resourceLocation"`
	// Imported means the cluster already exists; deleting the Cluster never deletes it in Azure.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="imported cannot be changed"
	// +optional
	Imported bool `json:"imported,omitempty"`
	// CredentialSecret names a Secret in the Cluster's namespace with tenantID, subscriptionID,
	// clientID, clientSecret and optionally authorityHost, resourceManagerEndpoint and caPEM.
	// +kubebuilder:validation:MinLength=1
	CredentialSecret string `json:"credentialSecret"`
	// KubernetesVersion is the control plane's Kubernetes version, "1.33" (newest patch) or
	// "1.33.1". Upgrades go one minor at a time; downgrades are refused.
	// +optional
	KubernetesVersion *string `json:"kubernetesVersion,omitempty"`
	// Tags are the managed cluster's Azure tags (the whole set).
	// +nullable
	// +optional
	Tags map[string]string `json:"tags"`
	// DNSPrefix is the prefix of the API server's FQDN (set at creation only).
	// +optional
	DNSPrefix *string `json:"dnsPrefix,omitempty"`
	// NetworkPlugin is azure, kubenet or none (set at creation only).
	// +optional
	NetworkPlugin *string `json:"networkPlugin,omitempty"`
	// NetworkPolicy is azure, calico, cilium or none (set at creation only).
	// +optional
	NetworkPolicy *string `json:"networkPolicy,omitempty"`
	// PodCIDR is the pods' address range (kubenet or overlay; set at creation only).
	// +optional
	PodCIDR *string `json:"podCidr,omitempty"`
	// ServiceCIDR is the services' address range (set at creation only).
	// +optional
	ServiceCIDR *string `json:"serviceCidr,omitempty"`
	// DNSServiceIP is the cluster DNS service's IP, inside serviceCidr (set at creation only).
	// +optional
	DNSServiceIP *string `json:"dnsServiceIP,omitempty"`
	// LoadBalancerSKU is standard or basic (set at creation only).
	// +optional
	LoadBalancerSKU *string `json:"loadBalancerSku,omitempty"`
	// OutboundType is loadBalancer, userDefinedRouting, managedNATGateway,
	// userAssignedNATGateway or none (set at creation only).
	// +optional
	OutboundType *string `json:"outboundType,omitempty"`
	// AuthorizedIPRanges are the IP ranges allowed to reach the API server (the whole set;
	// empty means every address).
	// +nullable
	// +optional
	AuthorizedIPRanges []string `json:"authorizedIPRanges"`
	// PrivateCluster makes the API server reachable on a private endpoint only (set at
	// creation only).
	// +optional
	PrivateCluster *bool `json:"privateCluster,omitempty"`
	// NodePools are the cluster's agent pools (the whole set: a pool missing here is deleted,
	// an extra one created). At least one must be a System pool.
	// +nullable
	// +optional
	// +listType=map
	// +listMapKey=name
	NodePools []AKSNodePool `json:"nodePools"`
}

// AKSNodePool is one AKS agent pool.
type AKSNodePool struct {
	// Name is the pool's name: lowercase letters and digits, starting with a letter, at most
	// 12 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=12
	Name string `json:"name"`
	// Count is the number of nodes. With autoscaling on it is owned by the cluster autoscaler:
	// drover never pushes it and never adopts the autoscaler's value.
	// +optional
	Count *int32 `json:"count,omitempty"`
	// VMSize is the nodes' VM size, e.g. Standard_D2s_v3 (set at creation only).
	// +optional
	VMSize *string `json:"vmSize,omitempty"`
	// OSDiskSizeGB is the OS disk size in GB (set at creation only).
	// +optional
	OSDiskSizeGB *int32 `json:"osDiskSizeGB,omitempty"`
	// Mode is System or User; a cluster keeps at least one System pool.
	// +kubebuilder:validation:Enum=System;User
	// +optional
	Mode *string `json:"mode,omitempty"`
	// OrchestratorVersion is the nodes' Kubernetes version; it may not be newer than the
	// control plane's.
	// +optional
	OrchestratorVersion *string `json:"orchestratorVersion,omitempty"`
	// AvailabilityZones are the zones the nodes are spread over (set at creation only).
	// +nullable
	// +optional
	AvailabilityZones []string `json:"availabilityZones"`
	// EnableAutoScaling turns the cluster autoscaler on for the pool.
	// +optional
	EnableAutoScaling *bool `json:"enableAutoScaling,omitempty"`
	// MinCount is the autoscaler's lower bound (autoscaling only).
	// +optional
	MinCount *int32 `json:"minCount,omitempty"`
	// MaxCount is the autoscaler's upper bound (autoscaling only).
	// +optional
	MaxCount *int32 `json:"maxCount,omitempty"`
	// MaxPods is the maximum number of pods per node (set at creation only).
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// NodeLabels are the Kubernetes labels of the pool's nodes.
	// +nullable
	// +optional
	NodeLabels map[string]string `json:"nodeLabels"`
	// NodeTaints are the taints of the pool's nodes, key=value:Effect.
	// +nullable
	// +optional
	NodeTaints []string `json:"nodeTaints"`
	// MaxSurge is how many extra nodes an upgrade may add, a number or a percentage ("33%").
	// +optional
	MaxSurge *string `json:"maxSurge,omitempty"`
}

// AKSStatus is the observed state of an AKS cluster.
type AKSStatus struct {
	// UpstreamSpec is the cluster as it really is in Azure, in the config's type.
	// +optional
	UpstreamSpec *AKSClusterConfig `json:"upstreamSpec,omitempty"`
	// AppliedSpec is the config as last applied: the three-way merge base.
	// +optional
	AppliedSpec *AKSClusterConfig `json:"appliedSpec,omitempty"`
	// ProvisioningState is the managed cluster's ARM provisioning state.
	// +optional
	ProvisioningState string `json:"provisioningState,omitempty"`
	// ID is the managed cluster's ARM resource ID.
	// +optional
	ID string `json:"id,omitempty"`
	// FQDN is the API server's FQDN (the private one for a private cluster).
	// +optional
	FQDN string `json:"fqdn,omitempty"`
}
