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
	// ForceSyncGeneration is the Bundle's spec.forceSyncGeneration: while it differs from
	// status.appliedSyncGeneration the agent re-applies every resource, taking over fields
	// changed downstream, as with correctDrift, once.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ForceSyncGeneration int64 `json:"forceSyncGeneration,omitempty"`
	// HelmValues, when set, replace the content's Helm values for this cluster: the Bundle's
	// templated values (BundleHelm.TemplateValues) rendered for it, so the content (the chart)
	// is still stored once. They may hold secrets: never copied into status, events or logs.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	HelmValues *runtime.RawExtension `json:"helmValues,omitempty"`
}

// ContentReference names the BundleContent holding a BundleDeployment's manifests.
type ContentReference struct {
	// Namespace of the BundleContent (the workspace namespace of the cluster).
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the BundleContent: one of its Bundle's content slots ("BUNDLE-HASH-N", reused by
	// later versions once nothing references it) when sha256 is set, else "s-" + hex sha256 of
	// its manifests (immutable; for agents without AgentFeatureContentSlots).
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// SHA256 is the content's sha256 when Name is a content slot: the agent applies the content
	// only when the slot holds this version (a slot is reused, so it may hold a later one).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	SHA256 string `json:"sha256,omitempty"`
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
	// AppliedSyncGeneration is the spec.options.forceSyncGeneration of that apply.
	// +optional
	AppliedSyncGeneration int64 `json:"appliedSyncGeneration,omitempty"`
	// Ready is true when every resource of the applied deployment exists downstream and is
	// ready by kstatus' rules: Deployments, StatefulSets and DaemonSets rolled out and
	// available, Jobs complete, Pods ready, custom resources with a Ready condition True, no
	// resource Reconciling, Stalled or past its progress deadline.
	// +optional
	Ready bool `json:"ready"`
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
	// Display is the state as the Bundle's summary counts it, computed by the agent with every
	// status write; the printer columns show it (kubectl get bundledeployments -o wide), and a
	// reader that lists BundleDeployments as a server-side Table gets it without the objects.
	// +optional
	Display *BundleDeploymentDisplay `json:"display,omitempty"`
}

// BundleDeploymentDisplay is a BundleDeployment's state in a few strings, for printer columns.
// The priority-1 columns (kubectl get -o wide) carry what the web dashboard shows, so that it
// lists BundleDeployments as a server-side Table without the objects (includeObject=None: the
// rows carry no metadata, hence the namespace and the labels as columns); renaming one makes
// the dashboard fall back to listing the objects.
type BundleDeploymentDisplay struct {
	// DeploymentID is the spec.deploymentID the state was computed for: for another one (a newer
	// spec the agent has not reported on yet) the state is Pending.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	DeploymentID string `json:"deploymentID,omitempty"`
	// State is Ready, Pending, ErrApplied, Modified or NotReady (the agent never writes
	// OutOfDate: that compares spec.deploymentID with the Bundle's).
	// +kubebuilder:validation:MaxLength=32
	// +optional
	State string `json:"state,omitempty"`
	// Message says why the state is not Ready (never a Secret value).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
	// DriftCorrected, when the DriftCorrected condition is True: its lastTransitionTime (RFC
	// 3339) and message ("2026-01-02T15:04:05Z: Re-applied after changes downstream: ...").
	// +kubebuilder:validation:MaxLength=1100
	// +optional
	DriftCorrected string `json:"driftCorrected,omitempty"`
}

// BundleDeployment is the work for one cluster: manifests the cluster's agent applies with
// server-side apply, and the status it reports back.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bd,categories={drover,fleet}
// +kubebuilder:printcolumn:name="Deployment-ID",type=string,JSONPath=`.spec.deploymentID`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.appliedDeploymentID`
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.display.state`
// +kubebuilder:printcolumn:name="BD-Namespace",type=string,JSONPath=`.metadata.namespace`,priority=1
// +kubebuilder:printcolumn:name="Bundle",type=string,JSONPath=`.metadata.labels.fleet\.drover\.io/bundle-name`,priority=1
// +kubebuilder:printcolumn:name="Bundle-Namespace",type=string,JSONPath=`.metadata.labels.fleet\.drover\.io/bundle-namespace`,priority=1
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels.fleet\.drover\.io/cluster`,priority=1
// +kubebuilder:printcolumn:name="Cluster-Namespace",type=string,JSONPath=`.metadata.labels.fleet\.drover\.io/cluster-namespace`,priority=1
// +kubebuilder:printcolumn:name="Customization",type=string,JSONPath=`.metadata.labels.fleet\.drover\.io/target-customization`,priority=1
// +kubebuilder:printcolumn:name="State-Deployment-ID",type=string,JSONPath=`.status.display.deploymentID`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.display.message`,priority=1
// +kubebuilder:printcolumn:name="Drift-Corrected",type=string,JSONPath=`.status.display.driftCorrected`,priority=1
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
