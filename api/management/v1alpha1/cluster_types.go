package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncPolicy says what drover does when the provider's state drifts from a managed field.
// +kubebuilder:validation:Enum=adopt;enforce
type SyncPolicy string

const (
	// SyncPolicyAdopt takes console/Terraform changes into the config (the default).
	SyncPolicyAdopt SyncPolicy = "adopt"
	// SyncPolicyEnforce rolls drift on managed fields back to the config, as GitOps users want.
	SyncPolicyEnforce SyncPolicy = "enforce"
)

// Phase is the lifecycle phase of a hosted cluster.
type Phase string

// Phases, as seen at the provider.
const (
	PhaseCreating  Phase = "creating"
	PhaseImporting Phase = "importing"
	PhaseActive    Phase = "active"
	PhaseUpdating  Phase = "updating"
	PhaseDeleting  Phase = "deleting"
	PhaseFailed    Phase = "failed"
)

// ClusterSpec is the desired state of a hosted cluster. Exactly one provider config is set.
// +kubebuilder:validation:XValidation:rule="(has(self.eksConfig) ? 1 : 0) + (has(self.aksConfig) ? 1 : 0) + (has(self.gkeConfig) ? 1 : 0) == 1",message="exactly one of eksConfig, aksConfig and gkeConfig must be set"
type ClusterSpec struct {
	// SyncPolicy is adopt (default: upstream changes to managed fields are adopted into the
	// config) or enforce (the config is authoritative; drift is rolled back).
	// +kubebuilder:default=adopt
	// +optional
	SyncPolicy SyncPolicy `json:"syncPolicy,omitempty"`

	// EKSConfig is the desired state of an Amazon EKS cluster.
	// +optional
	EKSConfig *EKSClusterConfig `json:"eksConfig,omitempty"`

	// AKSConfig is the desired state of an Azure AKS cluster.
	// +optional
	AKSConfig *AKSClusterConfig `json:"aksConfig,omitempty"`

	// GKEConfig is the desired state of a Google GKE cluster.
	// +optional
	GKEConfig *GKEClusterConfig `json:"gkeConfig,omitempty"`

	// Fleet says whether and how the cluster joins drover's fleet once it is active: drover
	// keeps a kubeconfig Secret for it and a fleet.drover.io Cluster of the same name, which
	// deploys the agent. Unset: join, unless the server runs with --hosted-join=false.
	// +optional
	Fleet *FleetJoin `json:"fleet,omitempty"`
}

// AKSCredential chooses the AKS credential listing drover reaches the cluster with.
// +kubebuilder:validation:Enum=user;admin
type AKSCredential string

// AKS credential listings.
const (
	// AKSCredentialUser is listClusterUserCredential (the default).
	AKSCredentialUser AKSCredential = "user"
	// AKSCredentialAdmin is listClusterAdminCredential.
	AKSCredentialAdmin AKSCredential = "admin"
)

// FleetJoin configures a hosted cluster's join to the fleet.
type FleetJoin struct {
	// Join: true joins the cluster to the fleet, false keeps it out (and makes a joined cluster
	// leave: its agent and fleet Cluster are removed). Unset: the server's default
	// (drover server --hosted-join, on by default).
	// +optional
	Join *bool `json:"join,omitempty"`
	// AgentNamespace is the agent's namespace in the cluster (default drover-agent).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	AgentNamespace string `json:"agentNamespace,omitempty"`
	// AKSCredential is user (listClusterUserCredential, the default) or admin
	// (listClusterAdminCredential): the credential of an AKS cluster drover writes into the
	// kubeconfig Secret. Ignored for EKS and GKE.
	// +optional
	AKSCredential AKSCredential `json:"aksCredential,omitempty"`
}

// FleetStatus is the hosted cluster's place in the fleet.
type FleetStatus struct {
	// ClusterName is the fleet.drover.io Cluster, in the same namespace, the cluster joined as.
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
	// KubeconfigSecret is the Secret, in the same namespace, holding the kubeconfig (key
	// "value") drover keeps fresh for the fleet Cluster.
	// +optional
	KubeconfigSecret string `json:"kubeconfigSecret,omitempty"`
	// CredentialsExpireTime is when the token in the kubeconfig Secret expires.
	// +optional
	CredentialsExpireTime *metav1.Time `json:"credentialsExpireTime,omitempty"`
	// CredentialsRefreshTime is when drover replaces that token (before it expires).
	// +optional
	CredentialsRefreshTime *metav1.Time `json:"credentialsRefreshTime,omitempty"`
	// Conditions: Joined (the kubeconfig Secret and the fleet Cluster are in place) and
	// AgentReady (the agent checked in).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EKSClusterConfig is the desired state of an EKS cluster. Every field except displayName,
// region, imported and credentialSecret is nullable: nil means "not managed by drover", a
// non-nil value is made true at the provider.
type EKSClusterConfig struct {
	// DisplayName is the EKS cluster's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern=`^[0-9A-Za-z][A-Za-z0-9\-_]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="displayName cannot be changed"
	DisplayName string `json:"displayName"`

	// Region is the AWS region, e.g. us-west-2.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="region cannot be changed"
	Region string `json:"region"`

	// Imported means the cluster already exists and drover only registers it: nothing is managed
	// until changed through drover, and deleting the Cluster never deletes the EKS cluster.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="imported cannot be changed"
	// +optional
	Imported bool `json:"imported,omitempty"`

	// CredentialSecret is the name of a Secret in the Cluster's namespace with keys accessKeyID,
	// secretAccessKey, and optionally sessionToken and endpoint.
	// +kubebuilder:validation:MinLength=1
	CredentialSecret string `json:"credentialSecret"`

	// KubernetesVersion is the control plane's Kubernetes minor version, e.g. "1.33".
	// +optional
	KubernetesVersion *string `json:"kubernetesVersion,omitempty"`
	// Tags are the cluster's AWS tags (the whole set; an empty map removes every tag).
	// +nullable
	// +optional
	Tags map[string]string `json:"tags"`
	// PublicAccess enables the public API server endpoint.
	// +optional
	PublicAccess *bool `json:"publicAccess,omitempty"`
	// PrivateAccess enables the private (VPC) API server endpoint.
	// +optional
	PrivateAccess *bool `json:"privateAccess,omitempty"`
	// PublicAccessSources are the CIDRs allowed to reach the public endpoint.
	// +nullable
	// +optional
	PublicAccessSources []string `json:"publicAccessSources"`
	// LoggingTypes are the enabled control-plane log types (api, audit, authenticator,
	// controllerManager, scheduler).
	// +nullable
	// +optional
	LoggingTypes []string `json:"loggingTypes"`
	// Subnets are the cluster's subnets (set at creation only).
	// +nullable
	// +optional
	Subnets []string `json:"subnets"`
	// SecurityGroups are the cluster's security groups (set at creation only).
	// +nullable
	// +optional
	SecurityGroups []string `json:"securityGroups"`
	// ServiceRole is the ARN of the IAM role of the control plane (set at creation only).
	// +optional
	ServiceRole *string `json:"serviceRole,omitempty"`
	// NodeGroups is the whole set of managed node groups, keyed by name: a group missing here is
	// deleted, an extra one is created. nil leaves node groups unmanaged.
	// +nullable
	// +optional
	// +listType=map
	// +listMapKey=name
	NodeGroups []EKSNodeGroup `json:"nodeGroups"`
}

// EKSNodeGroup is the desired state of one EKS managed node group.
type EKSNodeGroup struct {
	// Name is the node group's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// InstanceType is the EC2 instance type, e.g. m5.large (set at creation only).
	// +optional
	InstanceType *string `json:"instanceType,omitempty"`
	// DiskSize is the root volume size in GiB (set at creation only).
	// +optional
	DiskSize *int32 `json:"diskSize,omitempty"`
	// DesiredSize is the desired number of nodes.
	// +optional
	DesiredSize *int32 `json:"desiredSize,omitempty"`
	// MinSize is the minimum number of nodes.
	// +optional
	MinSize *int32 `json:"minSize,omitempty"`
	// MaxSize is the maximum number of nodes.
	// +optional
	MaxSize *int32 `json:"maxSize,omitempty"`
	// Labels are the Kubernetes labels of the group's nodes.
	// +nullable
	// +optional
	Labels map[string]string `json:"labels"`
	// Tags are the node group's AWS tags.
	// +nullable
	// +optional
	Tags map[string]string `json:"tags"`
	// Version is the nodes' Kubernetes minor version; it may not be newer than the cluster's.
	// +optional
	Version *string `json:"version,omitempty"`
	// Subnets are the node group's subnets (set at creation only).
	// +nullable
	// +optional
	Subnets []string `json:"subnets"`
	// NodeRole is the ARN of the nodes' IAM role (set at creation only).
	// +optional
	NodeRole *string `json:"nodeRole,omitempty"`
}

// ClusterStatus is the observed state of a hosted cluster.
type ClusterStatus struct {
	// Phase is creating, importing, active, updating, deleting or failed.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// FailureMessage says what went wrong, and what to do, when the last sync failed.
	// +optional
	FailureMessage string `json:"failureMessage,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Synced, Updating, Conflict, CredentialsValid.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// PendingOperations are provider operations drover started and has not yet seen finish
	// (EKS update IDs, ARM operation URLs, GKE operation names).
	// +optional
	PendingOperations []string `json:"pendingOperations,omitempty"`
	// PendingFields maps each pending operation to the config fields it applies, so a failed
	// operation's fields are pushed again instead of being taken back from upstream.
	// +optional
	PendingFields map[string][]string `json:"pendingFields,omitempty"`
	// RefreshRequest is the value of the management.drover.io/refresh annotation last acted on.
	// +optional
	RefreshRequest string `json:"refreshRequest,omitempty"`
	// LastRefreshTime is when the provider's state was last read.
	// +optional
	LastRefreshTime *metav1.Time `json:"lastRefreshTime,omitempty"`
	// EKSStatus is the EKS-specific status.
	// +optional
	EKSStatus *EKSStatus `json:"eksStatus,omitempty"`
	// AKSStatus is the AKS-specific status.
	// +optional
	AKSStatus *AKSStatus `json:"aksStatus,omitempty"`
	// GKEStatus is the GKE-specific status.
	// +optional
	GKEStatus *GKEStatus `json:"gkeStatus,omitempty"`
	// Fleet is the cluster's place in drover's fleet, written by the join controller only (its
	// own conditions, so the two controllers never overwrite each other's).
	// +optional
	Fleet *FleetStatus `json:"fleet,omitempty"`
}

// EKSStatus is the observed state of an EKS cluster.
type EKSStatus struct {
	// UpstreamSpec is the cluster as it really is in EKS, in the config's type.
	// +optional
	UpstreamSpec *EKSClusterConfig `json:"upstreamSpec,omitempty"`
	// AppliedSpec is the config as last applied (pushed or adopted): the base of the three-way
	// merge that tells a drover edit from an upstream change.
	// +optional
	AppliedSpec *EKSClusterConfig `json:"appliedSpec,omitempty"`
	// ARN is the cluster's ARN.
	// +optional
	ARN string `json:"arn,omitempty"`
	// Endpoint is the API server URL.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Status is the EKS cluster status (CREATING, ACTIVE, UPDATING, DELETING, FAILED).
	// +optional
	Status string `json:"status,omitempty"`
}

// Cluster is a hosted Kubernetes cluster (EKS, AKS or GKE) that drover creates or imports and
// keeps in step with the provider.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hc;hostedcluster,categories=drover
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Joined",type=string,JSONPath=`.status.fleet.conditions[?(@.type=="Joined")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec,omitempty"`
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterList is a list of Clusters.
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Cluster{}, &ClusterList{})
}
