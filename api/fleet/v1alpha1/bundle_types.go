package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BundleTarget selects Clusters of the Bundle's namespace. A target with both fields set
// matches a Cluster that satisfies both; an empty target matches nothing.
type BundleTarget struct {
	// ClusterName selects the Cluster of that name.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
	// ClusterSelector selects Clusters by label.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// BundleRollout limits how a new version of the Bundle reaches clusters that already have it.
type BundleRollout struct {
	// Paused stops updating existing BundleDeployments; newly matching clusters still get the
	// current version, and clusters that stop matching still lose theirs.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// MaxUnavailable is how many clusters (a number or a percentage of the targeted clusters)
	// may be updating or not ready at once while a new version rolls out. Default: all.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// BundleDependency names Bundles of the same namespace that must be ready on a cluster before
// this Bundle is deployed (or updated) there: the Bundle of Name, or every Bundle whose labels
// match Selector. Set exactly one.
// +kubebuilder:validation:XValidation:rule="has(self.name) != has(self.selector)",message="set exactly one of name and selector"
type BundleDependency struct {
	// Name of a Bundle in the same namespace.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
	// Selector selects Bundles of the same namespace by label.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// BundleHelm makes a Bundle a Helm release: each targeted cluster's agent installs the chart
// with the values as release ReleaseName in the Bundle's defaultNamespace (created if missing),
// and upgrades it when the chart or values change, with Helm's Go SDK, so `helm list` and
// `helm history` downstream show it.
type BundleHelm struct {
	// Chart is the packaged chart (a .tgz archive, as `helm package` writes it).
	// +kubebuilder:validation:MinLength=1
	Chart []byte `json:"chart"`
	// ReleaseName is the Helm release's name (default: the Bundle's name, cut to 53
	// characters with a hash of the whole name).
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`
	// Values override the chart's values.yaml (helm install --values). They may hold secrets:
	// drover never copies them into status, events or logs.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`
	// TemplateValues renders the values (and a target customization's helmValues) for each
	// targeted cluster, as Fleet's fleet.yaml does: a Go template with ${ } delimiters over the
	// values as YAML, with Sprig's functions (not env, expandenv, include, tpl or
	// getHostByName) and the data .ClusterName, .ClusterNamespace, .ClusterLabels,
	// .ClusterAnnotations and .ClusterValues (the Cluster's spec.templateValues); a key missing
	// from them is an error. A whole string value
	// "global.fleet.clusterLabels.NAME" becomes the cluster's label NAME ("" without it).
	// A GitRepo sets it for a fleet.yaml's templated values unless helm.disablePreProcess.
	// +optional
	TemplateValues bool `json:"templateValues,omitempty"`
	// ValuesFrom are values the agent reads on its downstream cluster when it installs or
	// upgrades the release, as Fleet's helm.valuesFrom: each entry's ConfigMap key, then its
	// Secret key (default key "values.yaml", namespace the release's), holds YAML values merged
	// in order over the values above. Secrets stay on the downstream cluster: drover never sees
	// them and the agent never shows them. They are read at each install or upgrade, not
	// watched: a change takes effect with the Bundle's next update (drover bundle redeploy).
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ValuesFrom []HelmValuesFrom `json:"valuesFrom,omitempty"`
}

// HelmValuesFrom names a ConfigMap key and/or a Secret key on the downstream cluster.
type HelmValuesFrom struct {
	// +optional
	ConfigMapKeyRef *ValuesKeyRef `json:"configMapKeyRef,omitempty"`
	// +optional
	SecretKeyRef *ValuesKeyRef `json:"secretKeyRef,omitempty"`
}

// ValuesKeyRef is a key of a ConfigMap or Secret on the downstream cluster.
type ValuesKeyRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace defaults to the release's.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Key defaults to "values.yaml".
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// BundleTargetCustomization gives the targeted Clusters it matches their own content or
// options. The first customization of spec.targetCustomizations a Cluster matches applies to it
// (Fleet's rule); a Cluster matching none gets the Bundle's own. A customization selects no
// Cluster outside spec.targets: it only changes what targeted Clusters get. One with neither
// clusterName nor clusterSelector matches nothing; both set, a Cluster must satisfy both.
type BundleTargetCustomization struct {
	// Name identifies the customization (unique in the Bundle).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// ClusterName matches the Cluster of that name.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
	// ClusterSelector matches Clusters by label.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// DefaultNamespace replaces the Bundle's defaultNamespace on the matching Clusters (the
	// namespace of resources without one, and of a Helm release).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	DefaultNamespace string `json:"defaultNamespace,omitempty"`
	// Resources, when set, replace the Bundle's resources on the matching Clusters (for example
	// a Kustomize overlay rendered for them). Only for Bundles of resources, not Helm. They are
	// stored once, in their own BundleContent.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	Resources []runtime.RawExtension `json:"resources,omitempty"`
	// HelmValues, when set, are the complete values of the Helm release on the matching
	// Clusters (already merged over the Bundle's values), instead of spec.helm.values. Only for
	// Helm Bundles. They may hold secrets: drover never copies them into status, events or logs.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	HelmValues *runtime.RawExtension `json:"helmValues,omitempty"`
	// HelmValuesFrom are added after spec.helm.valuesFrom on the matching Clusters (an entry
	// the Bundle has already is not repeated), as Fleet merges a customization's.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	HelmValuesFrom []HelmValuesFrom `json:"helmValuesFrom,omitempty"`
}

// BundleSpec is a set of manifests and the clusters they go to.
// +kubebuilder:validation:XValidation:rule="!has(self.helm) || !has(self.resources) || size(self.resources) == 0",message="a Bundle has either resources or helm, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.helm) || !has(self.targetCustomizations) || self.targetCustomizations.all(t, !has(t.resources) || size(t.resources) == 0)",message="targetCustomizations of a Helm Bundle set helmValues, not resources"
// +kubebuilder:validation:XValidation:rule="has(self.helm) || !has(self.targetCustomizations) || self.targetCustomizations.all(t, !has(t.helmValues))",message="targetCustomizations of a Bundle without helm set resources, not helmValues"
type BundleSpec struct {
	// Resources are the Kubernetes objects to deploy. They are stored once, in a BundleContent
	// (one of the Bundle's content slots), which every BundleDeployment of the Bundle references.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	Resources []runtime.RawExtension `json:"resources,omitempty"`
	// Helm, instead of Resources, deploys a Helm chart as a Helm release. Chart and values are
	// stored in the BundleContent like resources.
	// +optional
	Helm *BundleHelm `json:"helm,omitempty"`
	// DefaultNamespace is used for namespaced resources without a namespace, and is the
	// namespace of a Helm release (default "default").
	// +kubebuilder:validation:MaxLength=63
	// +optional
	DefaultNamespace string `json:"defaultNamespace,omitempty"`
	// Targets select the clusters: a Cluster matching any target is targeted.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	Targets []BundleTarget `json:"targets,omitempty"`
	// Exclude removes Clusters matching any of these from the targeted set.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	Exclude []BundleTarget `json:"exclude,omitempty"`
	// ForceConflicts takes over fields another field manager owns downstream.
	// +optional
	ForceConflicts bool `json:"forceConflicts,omitempty"`
	// CorrectDrift makes agents re-apply resources changed downstream.
	// +optional
	CorrectDrift bool `json:"correctDrift,omitempty"`
	// KeepResources leaves applied resources downstream when a cluster stops being targeted.
	// +optional
	KeepResources bool `json:"keepResources,omitempty"`
	// ForceSyncGeneration, when changed (drover bundle redeploy increments it), re-applies
	// every resource on every targeted cluster: deleted ones are created again and fields
	// changed downstream are set back, taking them over from whoever changed them, once
	// (correctDrift does it on every drift). It is a new version: the rollout settings apply.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ForceSyncGeneration int64 `json:"forceSyncGeneration,omitempty"`
	// Rollout limits how updates reach clusters.
	// +optional
	Rollout BundleRollout `json:"rollout,omitempty"`
	// DependsOn holds the Bundle on each cluster until every dependency is ready on that
	// cluster: its BundleDeployment there is neither created nor updated before. The Ready
	// condition says which dependency it waits for (reason DependencyNotReady).
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	DependsOn []BundleDependency `json:"dependsOn,omitempty"`
	// Diff says which downstream differences are not drift (fields another controller owns).
	// +optional
	Diff *BundleDiff `json:"diff,omitempty"`
	// TargetCustomizations give some targeted Clusters other content (resources or Helm
	// values) or another defaultNamespace: the first one a Cluster matches applies to it. Each
	// distinct content is stored once, in its own BundleContent.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	TargetCustomizations []BundleTargetCustomization `json:"targetCustomizations,omitempty"`
}

// NonReadyCluster is one cluster whose BundleDeployment is not ready.
type NonReadyCluster struct {
	Name string `json:"name"`
	// State is Pending, ErrApplied, Modified or NotReady.
	State string `json:"state"`
	// +optional
	Message string `json:"message,omitempty"`
}

// BundleSummary counts the Bundle's BundleDeployments by state.
type BundleSummary struct {
	// DesiredReady is the number of targeted clusters.
	// +optional
	DesiredReady int `json:"desiredReady"`
	// Ready BundleDeployments applied the current version and are ready and unmodified.
	// +optional
	Ready int `json:"ready"`
	// Pending BundleDeployments have not applied their current deployment ID yet.
	Pending int `json:"pending,omitempty"`
	// Modified BundleDeployments have resources changed downstream.
	// +optional
	Modified int `json:"modified"`
	// ErrApplied BundleDeployments failed to apply.
	ErrApplied int `json:"errApplied,omitempty"`
	// OutOfDate BundleDeployments are held at an older version (paused or maxUnavailable).
	OutOfDate int `json:"outOfDate,omitempty"`
	// NotReady BundleDeployments applied the current version but a workload in it is not
	// ready (not rolled out or available, a Job not complete).
	// +optional
	NotReady int `json:"notReady,omitempty"`
	// NonReadyClusters lists up to 20 clusters that are not ready, by name.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	NonReadyClusters []NonReadyCluster `json:"nonReadyClusters,omitempty"`
}

// CustomizationStatus is the current version of one target customization.
type CustomizationStatus struct {
	// Name of the customization (spec.targetCustomizations[].name).
	Name string `json:"name"`
	// Content is the BundleContent of its Clusters.
	Content string `json:"content"`
	// DeploymentID of its Clusters' current version.
	DeploymentID string `json:"deploymentID"`
	// Clusters is how many targeted Clusters it applies to.
	Clusters int `json:"clusters"`
}

// BundleStatus is the Bundle's rollout state.
type BundleStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Content is the BundleContent of the current version.
	// +optional
	Content string `json:"content,omitempty"`
	// Contents lists every BundleContent this Bundle's BundleDeployments may reference (the
	// current one and older ones still rolling out, in slots and, for older agents,
	// content-addressed). A BundleContent no Bundle lists is deleted.
	// +kubebuilder:validation:MaxItems=300
	// +listType=atomic
	// +optional
	Contents []string `json:"contents,omitempty"`
	// DeploymentID of the current version (of the Clusters no target customization matches).
	// +optional
	DeploymentID string `json:"deploymentID,omitempty"`
	// Customizations are the content and deployment ID of the current version of each target
	// customization some targeted Cluster uses.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	Customizations []CustomizationStatus `json:"customizations,omitempty"`
	// Summary counts the BundleDeployments by state.
	// +optional
	Summary BundleSummary `json:"summary,omitempty"`
	// Conditions: Ready (every targeted cluster ready).
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Bundle is a set of manifests deployed to the Clusters it targets, through one
// BundleDeployment per cluster.
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a Bundle's name is at most 63 characters: it is the value of the fleet.drover.io/bundle-name label of its BundleDeployments and contents"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories={drover,fleet}
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.summary.ready`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.summary.desiredReady`
// +kubebuilder:printcolumn:name="Modified",type=integer,JSONPath=`.status.summary.modified`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Bundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BundleSpec   `json:"spec,omitempty"`
	Status BundleStatus `json:"status,omitempty"`
}

// BundleList is a list of Bundles.
// +kubebuilder:object:root=true
type BundleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bundle `json:"items"`
}

// BundleContent is the manifests (or Helm chart and values) of a Bundle version, stored once in
// the workspace namespace and referenced by every BundleDeployment of that version. It is
// either one of a Bundle's content slots (per target customization, a few names reused by its
// versions, so that a cluster's access Role names the same slots from commit to commit; the
// BundleDeployment names the sha256 it must hold), or, for older agents, immutable and named
// "s-" + the hex sha256 of the JSON-encoded manifests (with Helm: of manifests and helm).
// Not in the drover or fleet kubectl categories: it is storage, and large.
// +kubebuilder:object:root=true
type BundleContent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// SHA256 is the hex sha256 of the JSON-encoded manifests (and helm, when set).
	SHA256 string `json:"sha256"`
	// Manifests are the Kubernetes objects.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	Manifests []runtime.RawExtension `json:"manifests,omitempty"`
	// Helm is the chart and values of a Helm Bundle.
	// +optional
	Helm *BundleHelm `json:"helm,omitempty"`
}

// BundleContentList is a list of BundleContents.
// +kubebuilder:object:root=true
type BundleContentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BundleContent `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Bundle{}, &BundleList{}, &BundleContent{}, &BundleContentList{})
}
