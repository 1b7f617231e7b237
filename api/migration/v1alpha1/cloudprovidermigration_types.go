package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Distribution is the Kubernetes distribution of the downstream cluster.
// +kubebuilder:validation:Enum=rke2;rke1
type Distribution string

// Distributions.
const (
	DistributionRKE2 Distribution = "rke2"
	DistributionRKE1 Distribution = "rke1"
)

// TargetProvider is the cloud provider the cluster is migrated to.
// +kubebuilder:validation:Enum=external-aws
type TargetProvider string

// TargetProviderExternalAWS is the out-of-tree AWS cloud controller manager.
const TargetProviderExternalAWS TargetProvider = "external-aws"

// CloudProviderMigrationSpec is the desired migration. It is immutable once started: a migration
// that changes its mind half-way is how clusters end up with two cloud controllers, or none.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable; delete and recreate the migration (or roll back) to change it"
type CloudProviderMigrationSpec struct {
	// Distribution is rke2 (a provisioning.cattle.io/v1 Cluster) or rke1 (a cluster.yml, CLI only).
	Distribution Distribution `json:"distribution"`

	// ClusterRef names the provisioning.cattle.io/v1 Cluster holding the RKE2 configuration, in
	// the cluster drover runs in. Required: the controller runs rke2 migrations; RKE1 migrations
	// run through `drover migrate cloud-provider apply`, which can run `rke up` and Helm locally.
	// +optional
	ClusterRef *ClusterReference `json:"clusterRef,omitempty"`

	// KubeconfigSecretRef names a Secret key in the migration's namespace holding a kubeconfig
	// for the downstream cluster, used for every check.
	KubeconfigSecretRef SecretKeyReference `json:"kubeconfigSecretRef"`

	// TargetProvider is the provider to migrate to.
	// +kubebuilder:default=external-aws
	// +optional
	TargetProvider TargetProvider `json:"targetProvider,omitempty"`

	// KubernetesVersion optionally upgrades the cluster in the switch step (step 4), e.g.
	// v1.27.16+rke2r1. It is applied together with the provider switch, never before it.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// LeaderMigration hands the cloud controllers over through the migration Lease without
	// control-plane downtime (the default). false takes the shorter path with downtime: no
	// leader migration on kube-controller-manager, the CCM starts after the switch.
	// +kubebuilder:default=true
	// +optional
	LeaderMigration *bool `json:"leaderMigration,omitempty"`

	// CCM configures the aws-cloud-controller-manager chart.
	// +optional
	CCM CCMSettings `json:"ccm,omitempty"`
}

// ClusterReference names a namespaced object.
type ClusterReference struct {
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// SecretKeyReference names a key of a Secret in the same namespace.
type SecretKeyReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:default=value
	// +optional
	Key string `json:"key,omitempty"`
}

// CCMSettings configures the aws-cloud-controller-manager Helm chart.
type CCMSettings struct {
	// ChartVersion pins the chart version; empty installs the repository's latest.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`
	// ImageTag pins the CCM image; empty pins it to the cluster's (target) minor version,
	// v1.<minor>.0, since the CCM is only supported on its matching minor.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ImageTag string `json:"imageTag,omitempty"`
	// ExtraArgs are added to the CCM container's arguments.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ExtraArgs []string `json:"extraArgs,omitempty"`
	// KeepLeaderMigration skips step 6 and leaves --enable-leader-migration on the CCM, so a
	// later rollback needs no chart change.
	// +optional
	KeepLeaderMigration bool `json:"keepLeaderMigration,omitempty"`
}

// StepPhase is where one step is.
// +kubebuilder:validation:Enum=Pending;Running;Applied;Succeeded;Failed;Skipped;RolledBack
type StepPhase string

// Step phases. Running is recorded before the action, Applied after it, Succeeded after the
// verification: a restart in Applied never repeats the action.
const (
	StepPending    StepPhase = "Pending"
	StepRunning    StepPhase = "Running"
	StepApplied    StepPhase = "Applied"
	StepSucceeded  StepPhase = "Succeeded"
	StepFailed     StepPhase = "Failed"
	StepSkipped    StepPhase = "Skipped"
	StepRolledBack StepPhase = "RolledBack"
)

// MigrationPhase is the overall state.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;RollingBack;RolledBack
type MigrationPhase string

// Migration phases.
const (
	PhasePending     MigrationPhase = "Pending"
	PhaseRunning     MigrationPhase = "Running"
	PhaseSucceeded   MigrationPhase = "Succeeded"
	PhaseFailed      MigrationPhase = "Failed"
	PhaseRollingBack MigrationPhase = "RollingBack"
	PhaseRolledBack  MigrationPhase = "RolledBack"
)

// StepStatus records one step.
type StepStatus struct {
	// Index is the step number, 0 to 6.
	Index int32 `json:"index"`
	// Name is the step's stable name, e.g. EnableLeaderMigration.
	Name string `json:"name"`
	// Phase is where the step is.
	Phase StepPhase `json:"phase"`
	// StartedAt is when the action started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// FinishedAt is when the step succeeded, failed or was skipped.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Message says what failed and what to do, or why the step was skipped.
	// +optional
	Message string `json:"message,omitempty"`
}

// NodeFact is a node as recorded before the migration.
type NodeFact struct {
	Name       string `json:"name"`
	ProviderID string `json:"providerID"`
	// ControlPlane is true for control-plane nodes (the ones cordoned in step 2).
	// +optional
	ControlPlane bool `json:"controlPlane,omitempty"`
	// WasUnschedulable is true if the node was already cordoned before step 2; it stays cordoned.
	// +optional
	WasUnschedulable bool `json:"wasUnschedulable,omitempty"`
}

// LoadBalancerFact is a LoadBalancer Service's ingress as recorded before the migration.
type LoadBalancerFact struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Ingress lists hostnames and IPs, sorted.
	// +listType=atomic
	// +optional
	Ingress []string `json:"ingress,omitempty"`
}

// Facts are what the preflight recorded; later steps compare against them.
type Facts struct {
	// KubernetesVersion is the configured version before the migration.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// +listType=atomic
	// +optional
	Nodes []NodeFact `json:"nodes,omitempty"`
	// +listType=atomic
	// +optional
	LoadBalancers []LoadBalancerFact `json:"loadBalancers,omitempty"`
	// OriginalConfig is the configuration document before step 1 (the Cluster's spec as YAML,
	// or cluster.yml byte for byte); rollback undoes drover's edits back to it. Only the CLI's state file
	// holds it here: drover server keeps it in the Secret named by originalConfigSecret, since
	// the document may hold credentials (chart values, etcd S3 keys) that a status, readable by
	// everyone who may view migrations, must not.
	// +optional
	OriginalConfig string `json:"originalConfig,omitempty"`
	// OriginalConfigSecret is the Secret (same namespace, owned by the migration, key
	// "config") that holds the original configuration document.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	OriginalConfigSecret string `json:"originalConfigSecret,omitempty"`
}

// CloudProviderMigrationStatus is the observed state of a migration.
type CloudProviderMigrationStatus struct {
	// Phase is the overall state.
	// +optional
	Phase MigrationPhase `json:"phase,omitempty"`
	// CurrentStep is the step running now (or the last one, when finished).
	// +optional
	CurrentStep int32 `json:"currentStep"`
	// Steps records each step; written before and after each action.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=index
	// +optional
	Steps []StepStatus `json:"steps,omitempty"`
	// Facts are the pre-migration facts.
	// +optional
	Facts Facts `json:"facts,omitempty"`
	// Conditions: Ready (the migration finished), Progressing, Failed.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// CloudProviderMigration migrates a downstream RKE2 or RKE1 cluster from the in-tree AWS cloud
// provider to the out-of-tree AWS cloud controller manager, step by step (SPEC §3).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cpm,categories=drover
// +kubebuilder:printcolumn:name="Distribution",type=string,JSONPath=`.spec.distribution`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Step",type=integer,JSONPath=`.status.currentStep`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CloudProviderMigration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CloudProviderMigrationSpec   `json:"spec,omitempty"`
	Status CloudProviderMigrationStatus `json:"status,omitempty"`
}

// CloudProviderMigrationList is a list of CloudProviderMigration.
// +kubebuilder:object:root=true
type CloudProviderMigrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CloudProviderMigration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CloudProviderMigration{}, &CloudProviderMigrationList{})
}

// StepsDone is how many of the migration's steps have finished (succeeded or were skipped), as
// the CLI and the dashboard count progress.
func (m *CloudProviderMigration) StepsDone() int {
	n := 0
	for _, s := range m.Status.Steps {
		if s.Phase == StepSucceeded || s.Phase == StepSkipped {
			n++
		}
	}
	return n
}
