package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BundleDeploymentOptions say how the manifests are applied.
type BundleDeploymentOptions struct {
	// DefaultNamespace is used for namespaced manifests without a namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	DefaultNamespace string `json:"defaultNamespace,omitempty"`
	// ForceConflicts takes over fields another field manager owns downstream.
	// +optional
	ForceConflicts bool `json:"forceConflicts,omitempty"`
	// CorrectDrift makes the agent re-apply (with force) resources changed downstream; without
	// it drift is only reported (resource state Modified).
	// +optional
	CorrectDrift bool `json:"correctDrift,omitempty"`
	// KeepResources leaves the applied resources downstream when the BundleDeployment is deleted.
	// +optional
	KeepResources bool `json:"keepResources,omitempty"`
	// Diff says which downstream differences are not drift (the Bundle's spec.diff).
	// +optional
	Diff *BundleDiff `json:"diff,omitempty"`
}

// ContentReference names the BundleContent holding a BundleDeployment's manifests.
type ContentReference struct {
	// Namespace of the BundleContent (the workspace namespace of the cluster).
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the BundleContent ("s-" + hex sha256 of its manifests).
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BundleDeploymentSpec is the work for one cluster.
type BundleDeploymentSpec struct {
	// DeploymentID identifies this version of the manifests and options. A new ID makes the agent
	// apply the manifests again and prune what the previous ID applied and this one dropped.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DeploymentID string `json:"deploymentID"`
	// Options say how the manifests are applied.
	// +optional
	Options BundleDeploymentOptions `json:"options,omitempty"`
	// Manifests are the Kubernetes objects to apply downstream.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	Manifests []runtime.RawExtension `json:"manifests,omitempty"`
	// Content names a BundleContent whose manifests are applied after Manifests. Bundles use it
	// so that their content is stored once, not once per cluster.
	// +optional
	Content *ContentReference `json:"content,omitempty"`
}

// ResourceState is the downstream state of one manifest.
type ResourceState struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// State is Applied, Failed, Modified (changed downstream; Message names the fields),
	// Missing (deleted downstream) or NotReady (not ready by kstatus' rules, or failed: a
	// Deployment past its progress deadline; Message says what is missing or why).
	State string `json:"state"`
	// +optional
	Message string `json:"message,omitempty"`
}

// BundleDeploymentStatus is what the agent reports.
type BundleDeploymentStatus struct {
	// AppliedDeploymentID is the deploymentID last applied successfully.
	// +optional
	AppliedDeploymentID string `json:"appliedDeploymentID,omitempty"`
	// Ready is true when every resource of the applied deployment exists downstream and is
	// ready by kstatus' rules: Deployments, StatefulSets and DaemonSets rolled out and
	// available, Jobs complete, Pods ready, custom resources with a Ready condition True, no
	// resource Reconciling, Stalled or past its progress deadline.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// NonModified is true when no resource has drifted from the applied manifests.
	// +optional
	NonModified bool `json:"nonModified,omitempty"`
	// Resources is the state of each applied resource; it is also the inventory used to prune.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Resources []ResourceState `json:"resources,omitempty"`
	// Conditions: Applied, Ready.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BundleDeployment is the work for one cluster: manifests the cluster's agent applies with
// server-side apply, and the status it reports back.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bd,categories=drover
// +kubebuilder:printcolumn:name="Deployment-ID",type=string,JSONPath=`.spec.deploymentID`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.appliedDeploymentID`
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=`.status.ready`
type BundleDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BundleDeploymentSpec   `json:"spec,omitempty"`
	Status BundleDeploymentStatus `json:"status,omitempty"`
}

// BundleDeploymentList is a list of BundleDeployments.
// +kubebuilder:object:root=true
type BundleDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BundleDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BundleDeployment{}, &BundleDeploymentList{})
}
