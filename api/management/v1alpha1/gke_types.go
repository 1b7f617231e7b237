package v1alpha1

// GKEClusterConfig is the desired state of a GKE cluster. Every field except clusterName,
// projectID, region/zone, imported and credentialSecret is nullable: nil means "not managed by
// drover".
// +kubebuilder:validation:XValidation:rule="(has(self.region) && size(self.region) > 0) != (has(self.zone) && size(self.zone) > 0)",message="exactly one of region and zone must be set"
type GKEClusterConfig struct {
	// ClusterName is the GKE cluster's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName cannot be changed"
	ClusterName string `json:"clusterName"`
	// ProjectID is the Google Cloud project.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="projectID cannot be changed"
	ProjectID string `json:"projectID"`
	// Region of a regional cluster, e.g. europe-west1.
	// +optional
	Region string `json:"region,omitempty"`
	// Zone of a zonal cluster, e.g. europe-west1-b.
	// +optional
	Zone string `json:"zone,omitempty"`
	// Imported means the cluster already exists; deleting the Cluster never deletes it in GKE.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="imported cannot be changed"
	// +optional
	Imported bool `json:"imported,omitempty"`
	// CredentialSecret names a Secret in the Cluster's namespace with a service-account JSON key
	// under serviceAccountJSON, and optionally endpoint.
	// +kubebuilder:validation:MinLength=1
	CredentialSecret string `json:"credentialSecret"`
	// KubernetesVersion is the master's Kubernetes version: a minor version such as "1.33", or a
	// more precise GKE version ("1.33.5", "1.33.5-gke.1162000"). upstreamSpec reports the
	// running version in the config's precision when it matches.
	// +optional
	KubernetesVersion *string `json:"kubernetesVersion,omitempty"`
	// Labels are the cluster's resource labels (the whole set).
	// +nullable
	// +optional
	Labels map[string]string `json:"labels"`
	// LoggingService is where logs go: logging.googleapis.com/kubernetes or none.
	// +optional
	LoggingService *string `json:"loggingService,omitempty"`
	// MonitoringService is where metrics go: monitoring.googleapis.com/kubernetes or none.
	// +optional
	MonitoringService *string `json:"monitoringService,omitempty"`
	// Network is the VPC network of the cluster (set at creation only).
	// +optional
	Network *string `json:"network,omitempty"`
	// Subnetwork is the subnetwork of the cluster (set at creation only).
	// +optional
	Subnetwork *string `json:"subnetwork,omitempty"`
	// MasterAuthorizedNetworks restricts which CIDR blocks reach the master.
	// +optional
	MasterAuthorizedNetworks *GKEMasterAuthorizedNetworks `json:"masterAuthorizedNetworks,omitempty"`
	// Locations are the zones the cluster's nodes run in.
	// +nullable
	// +optional
	Locations []string `json:"locations"`
	// MaintenanceWindow is the start time of the daily maintenance window, "HH:MM" in UTC; ""
	// means no window.
	// +optional
	MaintenanceWindow *string `json:"maintenanceWindow,omitempty"`
	// NodePools is the whole set of node pools, keyed by name: a pool missing here is deleted, an
	// extra one is created. nil leaves node pools unmanaged.
	// +nullable
	// +optional
	// +listType=map
	// +listMapKey=name
	NodePools []GKENodePool `json:"nodePools"`
}

// GKEMasterAuthorizedNetworks is the master authorized networks config.
type GKEMasterAuthorizedNetworks struct {
	// Enabled turns the restriction on.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// CIDRBlocks are the allowed blocks (the whole list).
	// +nullable
	// +optional
	CIDRBlocks []GKECIDRBlock `json:"cidrBlocks"`
}

// GKECIDRBlock is one authorized network.
type GKECIDRBlock struct {
	// DisplayName names the block.
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// CIDRBlock is an IPv4 CIDR, e.g. 203.0.113.0/24.
	CIDRBlock string `json:"cidrBlock"`
}

// GKENodePool is the desired state of one GKE node pool.
type GKENodePool struct {
	// Name is the node pool's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	Name string `json:"name"`
	// InitialNodeCount is the number of nodes per zone; with autoscaling on, the autoscaler owns
	// the count and drover never resizes the pool.
	// +optional
	InitialNodeCount *int64 `json:"initialNodeCount,omitempty"`
	// Version is the nodes' Kubernetes version; it may not be newer than the master's.
	// +optional
	Version *string `json:"version,omitempty"`
	// Autoscaling is the cluster autoscaler's config for the pool.
	// +optional
	Autoscaling *GKENodePoolAutoscaling `json:"autoscaling,omitempty"`
	// Management is node auto-repair and auto-upgrade.
	// +optional
	Management *GKENodePoolManagement `json:"management,omitempty"`
	// Config is the nodes' configuration.
	// +optional
	Config *GKENodeConfig `json:"config,omitempty"`
}

// GKENodePoolAutoscaling is a node pool's autoscaling config.
type GKENodePoolAutoscaling struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +optional
	MinNodeCount *int64 `json:"minNodeCount,omitempty"`
	// +optional
	MaxNodeCount *int64 `json:"maxNodeCount,omitempty"`
}

// GKENodePoolManagement is a node pool's management config.
type GKENodePoolManagement struct {
	// +optional
	AutoRepair *bool `json:"autoRepair,omitempty"`
	// +optional
	AutoUpgrade *bool `json:"autoUpgrade,omitempty"`
}

// GKENodeConfig is the configuration of a node pool's nodes.
type GKENodeConfig struct {
	// MachineType is the Compute Engine machine type, e.g. e2-medium (set at creation only).
	// +optional
	MachineType *string `json:"machineType,omitempty"`
	// DiskSizeGb is the boot disk size in GB (set at creation only).
	// +optional
	DiskSizeGb *int64 `json:"diskSizeGb,omitempty"`
	// DiskType is the boot disk type, e.g. pd-balanced (set at creation only).
	// +optional
	DiskType *string `json:"diskType,omitempty"`
	// ImageType is the node image, e.g. COS_CONTAINERD.
	// +optional
	ImageType *string `json:"imageType,omitempty"`
	// Labels are the Kubernetes labels of the nodes (the whole set).
	// +nullable
	// +optional
	Labels map[string]string `json:"labels"`
	// Taints are the Kubernetes taints of the nodes (the whole list).
	// +nullable
	// +optional
	Taints []GKENodeTaint `json:"taints"`
	// Tags are the nodes' network tags.
	// +nullable
	// +optional
	Tags []string `json:"tags"`
	// Preemptible makes the nodes preemptible VMs (set at creation only).
	// +optional
	Preemptible *bool `json:"preemptible,omitempty"`
	// ServiceAccount is the nodes' Google service account (set at creation only).
	// +optional
	ServiceAccount *string `json:"serviceAccount,omitempty"`
	// OAuthScopes are the nodes' OAuth scopes (set at creation only).
	// +nullable
	// +optional
	OAuthScopes []string `json:"oauthScopes"`
}

// GKENodeTaint is a Kubernetes taint of a node pool's nodes.
type GKENodeTaint struct {
	// Key is the taint key.
	Key string `json:"key"`
	// Value is the taint value.
	// +optional
	Value string `json:"value,omitempty"`
	// Effect is NO_SCHEDULE, PREFER_NO_SCHEDULE or NO_EXECUTE.
	// +kubebuilder:validation:Enum=NO_SCHEDULE;PREFER_NO_SCHEDULE;NO_EXECUTE
	Effect string `json:"effect"`
}

// GKEStatus is the observed state of a GKE cluster.
type GKEStatus struct {
	// UpstreamSpec is the cluster as it really is in GKE, in the config's type.
	// +optional
	UpstreamSpec *GKEClusterConfig `json:"upstreamSpec,omitempty"`
	// AppliedSpec is the config as last applied: the three-way merge base.
	// +optional
	AppliedSpec *GKEClusterConfig `json:"appliedSpec,omitempty"`
	// Status is the GKE cluster status (PROVISIONING, RUNNING, RECONCILING, STOPPING, ERROR).
	// +optional
	Status string `json:"status,omitempty"`
	// Endpoint is the master's IP address.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Version is the master's full GKE version, e.g. 1.33.5-gke.1162000.
	// +optional
	Version string `json:"version,omitempty"`
}
