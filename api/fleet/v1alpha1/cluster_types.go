package v1alpha1

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterSpec is the desired state of a registered downstream cluster.
type ClusterSpec struct {
	// TemplateValues are this cluster's own values for Bundles' Helm values templates
	// (spec.helm.templateValues), read there as .ClusterValues, as Fleet's Cluster
	// spec.templateValues: per-cluster settings that are not labels (a hostname, a size). A
	// change re-renders that cluster's values only. Not for secrets: templates copy them into
	// BundleDeployments.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	TemplateValues *runtime.RawExtension `json:"templateValues,omitempty"`

	// ClientID identifies the downstream cluster's agent. Set it to pre-create a Cluster that an
	// agent-initiated registration with the same clientID lands on; left empty, the importer
	// generates one (manager-initiated) or the first registration sets it (agent-initiated).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClientID string `json:"clientID,omitempty"`

	// KubeConfigSecret names a Secret in the Cluster's namespace whose key "value" is a kubeconfig
	// for the downstream cluster (manager-initiated registration). Keys apiServerURL and
	// apiServerCA, if present, override drover's configured management API server URL and CA.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	KubeConfigSecret string `json:"kubeConfigSecret,omitempty"`

	// AgentNamespace is the downstream namespace of the agent (default drover-agent).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	AgentNamespace string `json:"agentNamespace,omitempty"`

	// AgentImage overrides the agent's container image.
	// +optional
	AgentImage string `json:"agentImage,omitempty"`

	// RedeployAgentGeneration forces the importer to redeploy the agent when it changes.
	// +optional
	RedeployAgentGeneration int64 `json:"redeployAgentGeneration,omitempty"`

	// AgentEnv is added to the agent container's environment. Changing it, AgentImage,
	// AgentTolerations or AgentResources rolls the agent out through its drover-agent-<cluster>
	// Bundle.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	AgentEnv []corev1.EnvVar `json:"agentEnv,omitempty"`

	// AgentTolerations are the agent pod's tolerations.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	AgentTolerations []corev1.Toleration `json:"agentTolerations,omitempty"`

	// AgentResources are the agent container's resource requests and limits.
	// +optional
	AgentResources *corev1.ResourceRequirements `json:"agentResources,omitempty"`

	// AgentRBAC is what the agent may do on its own cluster. Unset: every resource,
	// cluster-wide, for clusters drover installs the agent on (kubeConfigSecret set); for
	// agent-initiated clusters drover then leaves the agent's RBAC as it was installed (Helm
	// chart values or drover agent install flags), so a narrowed installation stays narrow.
	// +optional
	AgentRBAC *AgentRBAC `json:"agentRBAC,omitempty"`
}

// AgentRBAC narrows the agent's rights on its own cluster.
type AgentRBAC struct {
	// Rules of the agent's ClusterRole (default: every verb on every resource).
	// +optional
	Rules []rbacv1.PolicyRule `json:"rules,omitempty"`
	// Namespaces, when set, grant Rules only in these existing namespaces (RoleBindings instead
	// of a ClusterRoleBinding): Bundles with cluster-scoped objects or other namespaces then fail
	// with Forbidden.
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
}

// AgentFeatureHelmValues means the agent installs a BundleDeployment's spec.options.helmValues (Helm
// values rendered for its cluster from a values template) as its release's values. An agent
// without it would install the template itself.
const AgentFeatureHelmValues = "helmValues"

// AgentFeatureHelmValuesFrom means the agent reads a Helm release's spec.helm.valuesFrom on its
// cluster. An agent without it would install the release without those values.
const AgentFeatureHelmValuesFrom = "helmValuesFrom"

// AgentFeatureContentSlots means the agent reads a BundleDeployment's content from a content
// slot, checking the sha256 it names (spec.content.sha256). An agent without it keeps the
// contents it read by name and would apply an older version from a reused slot: it gets
// immutable content-addressed BundleContents instead.
const AgentFeatureContentSlots = "contentSlots"

// ReportedFeatures are the features the agent's last check-in reported (nil: none, or a list
// left by an earlier agent).
func (a *AgentStatus) ReportedFeatures() []string {
	if a.LastSeen == nil || a.FeaturesSeen == nil || !a.FeaturesSeen.Equal(a.LastSeen) {
		return nil
	}
	return a.Features
}

// HasFeature tells whether the agent's last check-in reported feature.
func (a *AgentStatus) HasFeature(feature string) bool {
	return slices.Contains(a.ReportedFeatures(), feature)
}

// AgentStatus is what the agent reports.
type AgentStatus struct {
	// LastSeen is the agent's last heartbeat.
	// +optional
	LastSeen *metav1.Time `json:"lastSeen,omitempty"`
	// Namespace is the agent's downstream namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Version is the version of the running agent, as it reports it with each heartbeat (empty:
	// an agent older than this field). The characters of a version only: it is printed in
	// terminals and pages, and the agent's identity writes it.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._+-]*$`
	// +optional
	Version string `json:"version,omitempty"`
	// Features are what the agent can do beyond the first agents (AgentFeature* constants), as
	// it reports them with each heartbeat: drover sends a BundleDeployment that needs one only
	// to an agent that reports it, so an older agent never applies what it would misread.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z][A-Za-z0-9]*$`
	// +listType=set
	// +optional
	Features []string `json:"features,omitempty"`
	// FeaturesSeen is the check-in (lastSeen) that reported Features. They count only while it
	// is the last one: an agent rolled back to a version that reports no features leaves the
	// newer agent's list behind, which must not be taken for its own.
	// +optional
	FeaturesSeen *metav1.Time `json:"featuresSeen,omitempty"`
	// DownstreamError is why the agent could not reach its own cluster's API server when it
	// last checked in (empty: it answered). An agent can keep checking in while its cluster's
	// control plane is down; nothing it applies gets there then.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	DownstreamError string `json:"downstreamError,omitempty"`
}

// ClusterStatus is the observed state of a registered cluster.
//
// The agent's identity may patch its Cluster's status (to check in), so the namespace drover
// derives for the cluster cannot be changed or removed once set: a compromised agent pointing it
// at another cluster's namespace would have drover move that cluster's BundleDeployments and
// content rights to it.
// +kubebuilder:validation:XValidation:rule="has(self.namespace) || !has(oldSelf.namespace)",message="status.namespace cannot change once set: it is the cluster's namespace, derived by drover"
type ClusterStatus struct {
	// Namespace is the cluster namespace holding this cluster's BundleDeployments.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="status.namespace cannot change once set: it is the cluster's namespace, derived by drover"
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Conditions: Ready (namespace and RBAC in place), Imported (manager-initiated only).
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Agent is the agent's own report.
	// +optional
	Agent AgentStatus `json:"agent,omitempty"`
	// APIServerURL is the management API server URL the deployed agent was given.
	// +optional
	APIServerURL string `json:"apiServerURL,omitempty"`
	// APIServerCAHash is the sha256 of the CA the deployed agent was given.
	// +optional
	APIServerCAHash string `json:"apiServerCAHash,omitempty"`
	// AgentDeployedGeneration is the redeployAgentGeneration the agent was last deployed for.
	// +optional
	AgentDeployedGeneration *int64 `json:"agentDeployedGeneration,omitempty"`
	// BootstrapTokenUID is the UID of the import ClusterRegistrationToken whose token the
	// bootstrap secret deployed downstream holds (manager-initiated registration).
	// +optional
	BootstrapTokenUID string `json:"bootstrapTokenUID,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Cluster is a downstream Kubernetes cluster registered with drover; its agent applies the
// BundleDeployments in the cluster namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fc;fleetcluster,categories={drover,fleet}
// +kubebuilder:printcolumn:name="Cluster-Namespace",type=string,JSONPath=`.status.namespace`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last-Seen",type=date,JSONPath=`.status.agent.lastSeen`
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
