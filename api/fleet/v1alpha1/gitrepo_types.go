package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitRepo condition types and reasons. The reasons are part of the API: tools and tests match
// on them.
const (
	// ConditionSynced (GitRepo): the latest commit of the wanted revision was fetched and rendered
	// into Bundles. When False, the Bundles of the last good commit (status.commit) stay deployed.
	ConditionSynced = "Synced"

	// ReasonAuthFailed: the Git server refused the credentials (or asked for some and the
	// GitRepo has none), or an SSH host key did not match known_hosts.
	ReasonAuthFailed = "AuthFailed"
	// ReasonClientSecretInvalid: the auth Secret is missing or lacks the keys its URL needs.
	ReasonClientSecretInvalid = "ClientSecretInvalid"
	// ReasonRevisionNotFound: the branch, tag or commit does not exist in the repository.
	ReasonRevisionNotFound = "RevisionNotFound"
	// ReasonFetchFailed: the repository could not be read (unreachable, not found, protocol error).
	ReasonFetchFailed = "FetchFailed"
	// ReasonRenderFailed: a path's content could not be turned into manifests; the message names
	// the path and the file (and the key, for drover.yaml).
	ReasonRenderFailed = "RenderFailed"
	// ReasonBundlesNotReady: the GitRepo is synced but some of its Bundles are not ready.
	ReasonBundlesNotReady = "BundlesNotReady"
	// ReasonPaused: spec.paused is set; nothing is fetched.
	ReasonPaused = "Paused"
)

// Labels and annotations of the Bundles a GitRepo makes.
const (
	// GitRepoNameLabel names the GitRepo a Bundle was rendered from.
	GitRepoNameLabel = LabelPrefix + "gitrepo-name"
	// GitRepoPathAnnotation is the repository path a Bundle was rendered from.
	GitRepoPathAnnotation = LabelPrefix + "gitrepo-path"
	// GitRepoCommitAnnotation is the commit a Bundle was rendered from.
	GitRepoCommitAnnotation = LabelPrefix + "commit"
	// FetchRequestedAnnotation on a GitRepo asks for a fetch now, whatever its polling
	// interval: every new value (the push webhook writes the time) makes the controller fetch
	// once. Users may set it too (kubectl annotate --overwrite).
	FetchRequestedAnnotation = LabelPrefix + "fetch-requested"
)

// Keys of a GitRepo's auth Secret (spec.clientSecretName).
const (
	// GitKeyUsername and GitKeyPassword are HTTP(S) basic-auth credentials; GitKeyToken is an
	// access token, sent as the password (with username GitKeyUsername, default "git").
	GitKeyUsername = "username"
	GitKeyPassword = "password"
	GitKeyToken    = "token"
	// GitKeySSHPrivateKey is a PEM/OpenSSH private key for ssh:// and scp-style URLs (the key
	// of kubernetes.io/ssh-auth Secrets); GitKeySSHPassphrase decrypts it if needed.
	GitKeySSHPrivateKey = "ssh-privatekey"
	GitKeySSHPassphrase = "ssh-passphrase"
	// GitKeyKnownHosts holds the SSH server's host keys in known_hosts format. It is required
	// for SSH: host keys are always checked.
	GitKeyKnownHosts = "known_hosts"
	// GitKeyCACerts holds PEM CA certificates trusted for an HTTPS server, in addition to the
	// system roots (a Git server with a private CA). A Secret may hold only this key.
	GitKeyCACerts = "cacerts"
)

// GitRepoSpec is a Git repository whose paths become Bundles.
// +kubebuilder:validation:XValidation:rule="[has(self.branch), has(self.tag), has(self.revision)].filter(x, x).size() <= 1",message="set at most one of branch, tag and revision"
type GitRepoSpec struct {
	// Repo is the repository URL: https://, http://, ssh://, git:// or scp-style
	// (git@host:org/repo.git).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://') || self.startsWith('ssh://') || self.startsWith('git://') || self.matches('^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:')",message="repo must be an https://, http://, ssh://, git:// or user@host:path URL",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/@]*:[^/@]*@')",message="repo must not carry a password (it would show wherever the URL does): put the credentials in a Secret named by spec.clientSecretName",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(?i)(https?|git)://[^/?#]*@')",message="an http(s) or git:// repo must not carry a user or token (https://TOKEN@host works with some providers, and would show wherever the URL does): put the credentials in a Secret named by spec.clientSecretName",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(?i)(https?|git)://[^?#]*[?#]')",message="an http(s) or git:// repo must not carry a query or fragment (where tokens such as ?private_token= sit): put the credentials in a Secret named by spec.clientSecretName",reason=FieldValueForbidden
	Repo string `json:"repo"`
	// Branch to follow (default: the repository's default branch).
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Branch string `json:"branch,omitempty"`
	// Tag to deploy (annotated or lightweight).
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Tag string `json:"tag,omitempty"`
	// Revision is a commit SHA (7 to 40 hex digits) to deploy.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{7,40}$`
	// +optional
	Revision string `json:"revision,omitempty"`
	// Paths are directory globs (path.Match syntax, relative to the repository root, e.g.
	// "apps/*"); every matching directory becomes one Bundle. Default: the repository root.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	// +listType=atomic
	// +optional
	Paths []string `json:"paths,omitempty"`
	// ClientSecretName names a Secret in the GitRepo's namespace with the credentials:
	// username + password (or token) for HTTP(S), ssh-privatekey + known_hosts for SSH.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClientSecretName string `json:"clientSecretName,omitempty"`
	// HelmSecretName names a Secret in the GitRepo's namespace with the credentials for the
	// Helm repositories and OCI registries its paths' helm.repo / helm.chart name: username and
	// password (or token), and cacerts (PEM) to trust a private CA. They are sent only to
	// repositories whose URL matches HelmRepoURLRegex.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	HelmSecretName string `json:"helmSecretName,omitempty"`
	// HelmRepoURLRegex limits where HelmSecretName's credentials go: only to Helm repositories
	// and OCI registries whose URL (https://… or oci://…) matches this regular expression
	// (default: every one the repository names; set it when paths may name public charts).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	HelmRepoURLRegex string `json:"helmRepoURLRegex,omitempty"`
	// PollingInterval is how often the revision is checked for new commits (default 15s).
	// +optional
	PollingInterval *metav1.Duration `json:"pollingInterval,omitempty"`
	// Targets select the clusters of every Bundle of this GitRepo: a Cluster matching any
	// target is targeted.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	Targets []BundleTarget `json:"targets,omitempty"`
	// Paused stops fetching: the Bundles of the last commit stay as they are.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// ForceSyncGeneration, when changed (drover gitrepo redeploy increments it; Fleet's
	// GitRepo field of that name), is copied to every Bundle of the GitRepo: each re-applies its
	// resources on its clusters once, undoing changes made downstream (Bundle
	// spec.forceSyncGeneration).
	// +kubebuilder:validation:Minimum=0
	// +optional
	ForceSyncGeneration int64 `json:"forceSyncGeneration,omitempty"`
}

// Follows says which revision the GitRepo follows: "branch main", "tag v1.2.0", "revision
// 0a1b2c3" or "the default branch" (the CLI, the dashboard and the controller's messages).
func (s *GitRepoSpec) Follows() string {
	switch {
	case s.Branch != "":
		return "branch " + s.Branch
	case s.Tag != "":
		return "tag " + s.Tag
	case s.Revision != "":
		return "revision " + s.Revision
	}
	return "the default branch"
}

// GitRepoBundle is the readiness of one Bundle of a GitRepo.
type GitRepoBundle struct {
	// Name of the Bundle.
	Name string `json:"name"`
	// Path in the repository it was rendered from.
	Path string `json:"path"`
	// Ready and DesiredReady count its clusters (Bundle status.summary).
	// +optional
	Ready int `json:"ready,omitempty"`
	// +optional
	DesiredReady int `json:"desiredReady,omitempty"`
	// Message says why it is not ready (its Ready condition's message).
	// +optional
	Message string `json:"message,omitempty"`
}

// GitRepoSummary counts a GitRepo's Bundles.
type GitRepoSummary struct {
	// Bundles is the number of Bundles rendered from the repository.
	// +optional
	Bundles int `json:"bundles"`
	// ReadyBundles is the number of them ready on every targeted cluster.
	// +optional
	ReadyBundles int `json:"readyBundles"`
}

// GitRepoStatus is what was deployed from the repository.
type GitRepoStatus struct {
	// ObservedGeneration is the generation last synced (successfully or not).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Commit is the commit the Bundles were last rendered from (the last good one: a commit
	// that fails to render leaves it, and the Bundles, unchanged).
	// +optional
	Commit string `json:"commit,omitempty"`
	// Summary counts the Bundles.
	// +optional
	Summary GitRepoSummary `json:"summary,omitempty"`
	// Bundles lists the Bundles with their readiness, by path.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	Bundles []GitRepoBundle `json:"bundles,omitempty"`
	// Conditions: Synced (the wanted revision's latest commit is rendered into Bundles; reasons
	// AuthFailed, ClientSecretInvalid, RevisionNotFound, FetchFailed, RenderFailed, Paused) and
	// Ready (synced and every Bundle ready; BundlesNotReady otherwise).
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GitRepo deploys the manifests in paths of a Git repository: every matching path becomes a
// Bundle owned by the GitRepo, targeted at the GitRepo's targets, and follows the revision's
// new commits.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=gitrepos,singular=gitrepo,categories={drover,fleet}
// +kubebuilder:printcolumn:name="Repo",type=string,JSONPath=`.spec.repo`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.status.commit`
// +kubebuilder:printcolumn:name="Bundles-Ready",type=integer,JSONPath=`.status.summary.readyBundles`
// +kubebuilder:printcolumn:name="Bundles",type=integer,JSONPath=`.status.summary.bundles`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitRepo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitRepoSpec   `json:"spec,omitempty"`
	Status GitRepoStatus `json:"status,omitempty"`
}

// GitRepoList is a list of GitRepos.
// +kubebuilder:object:root=true
type GitRepoList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitRepo `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitRepo{}, &GitRepoList{})
}
