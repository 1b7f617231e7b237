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
	// KubernetesVersion is the control plane's Kubernetes version, e.g. "1.33".
	// +optional
	KubernetesVersion *string `json:"kubernetesVersion,omitempty"`
	// Tags are the managed cluster's Azure tags (the whole set).
	// +nullable
	// +optional
	Tags map[string]string `json:"tags"`
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
}
