package v1alpha1

// GKEClusterConfig is the desired state of a GKE cluster. Every field except clusterName,
// projectID, region/zone, imported and credentialSecret is nullable: nil means "not managed by
// drover".
// +kubebuilder:validation:XValidation:rule="(has(self.region) && self.region != '') != (has(self.zone) && self.zone != '')",message="exactly one of region and zone must be set"
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
	// KubernetesVersion is the master's Kubernetes version, e.g. "1.33".
	// +optional
	KubernetesVersion *string `json:"kubernetesVersion,omitempty"`
	// Labels are the cluster's resource labels (the whole set).
	// +nullable
	// +optional
	Labels map[string]string `json:"labels"`
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
}
