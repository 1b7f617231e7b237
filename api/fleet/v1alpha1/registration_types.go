package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ClusterRegistrationTokenSpec is the desired state of a registration token.
type ClusterRegistrationTokenSpec struct {
	// TTL is how long the token (and its import identity) lives. drover refuses tokens without
	// one unless it runs with registration tokens without TTL allowed.
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty"`
	// MaxClusters is how many clusters (distinct clientIDs) may register with this token; unset,
	// any number may until it expires. A cluster that registers again (an agent reinstalled)
	// counts once. With 1, a token that leaks after its cluster registered registers nothing
	// more. It may be raised later; clusters registered before it was set are not counted.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxClusters *int32 `json:"maxClusters,omitempty"`
}

// ClusterRegistrationTokenStatus is the observed state of a registration token.
type ClusterRegistrationTokenStatus struct {
	// Expires is when the token and everything created for it are deleted.
	// +optional
	Expires *metav1.Time `json:"expires,omitempty"`
	// SecretName is the Secret holding the values an agent installation needs.
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// ServiceAccountName is the import identity.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// RegisteredClientIDs are the clientIDs registered with this token while it had
	// spec.maxClusters: each registration of a new clientID takes one of them.
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	RegisteredClientIDs []string `json:"registeredClientIDs,omitempty"`
	// Conditions: Ready.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterRegistrationToken issues an import identity: it may create ClusterRegistrations in this
// namespace and read only the registration secrets answering them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=crt,categories={drover,fleet}
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.status.secretName`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expires`
// +kubebuilder:printcolumn:name="Max-Clusters",type=integer,JSONPath=`.spec.maxClusters`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a token's name has at most 63 characters: it labels the objects made for it"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type ClusterRegistrationToken struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterRegistrationTokenSpec   `json:"spec,omitempty"`
	Status ClusterRegistrationTokenStatus `json:"status,omitempty"`
}

// ClusterRegistrationTokenList is a list of ClusterRegistrationTokens.
// +kubebuilder:object:root=true
type ClusterRegistrationTokenList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterRegistrationToken `json:"items"`
}

// ClusterRegistrationSpec is an agent's request to be registered. It is immutable.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
type ClusterRegistrationSpec struct {
	// ClientID identifies the downstream cluster (preset, or its kube-system namespace UID).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClientID string `json:"clientID"`
	// ClientRandom is a fresh random value; with clientID it names the registration secret.
	// +kubebuilder:validation:MinLength=16
	// +kubebuilder:validation:MaxLength=128
	ClientRandom string `json:"clientRandom"`
	// ClusterLabels are put on a Cluster created for this registration. Labels under
	// fleet.drover.io/ are reserved.
	// +optional
	ClusterLabels map[string]string `json:"clusterLabels,omitempty"`
}

// ClusterRegistrationStatus is the observed state of a registration.
type ClusterRegistrationStatus struct {
	// Granted is true once the registration secret was written.
	// +optional
	Granted bool `json:"granted"`
	// ClusterName is the Cluster the registration was matched to.
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
	// Conditions: Granted.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterRegistration is created by an agent with its import identity; drover answers it with a
// registration secret holding the request identity.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=creg,categories={drover,fleet}
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.status.clusterName`
// +kubebuilder:printcolumn:name="Granted",type=boolean,JSONPath=`.status.granted`
type ClusterRegistration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterRegistrationSpec   `json:"spec"`
	Status ClusterRegistrationStatus `json:"status,omitempty"`
}

// ClusterRegistrationList is a list of ClusterRegistrations.
// +kubebuilder:object:root=true
type ClusterRegistrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterRegistration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterRegistrationToken{}, &ClusterRegistrationTokenList{},
		&ClusterRegistration{}, &ClusterRegistrationList{})
}

// BoundCluster is the Cluster a token registers alone — drover's per-cluster import token for
// manager-initiated registration, labelled with the Cluster's UID (fleet.drover.io/cluster-uid)
// and name — and whether it is one; a token made for people registers any cluster.
func (t *ClusterRegistrationToken) BoundCluster() (name string, uid types.UID, bound bool) {
	u := t.Labels[ClusterUIDLabel]
	if u == "" {
		return "", "", false
	}
	return t.Labels[ClusterLabel], types.UID(u), true
}
