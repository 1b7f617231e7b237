package v1alpha1

// Well-known namespaces.
const (
	// DefaultWorkspaceNamespace holds Clusters, tokens and registrations by default.
	DefaultWorkspaceNamespace = "drover-default"
	// LocalWorkspaceNamespace holds the local cluster.
	LocalWorkspaceNamespace = "drover-local"
	// SystemRegistrationNamespace holds the registration secrets (c-<hash>).
	SystemRegistrationNamespace = "drover-clusters-system"
	// LocalClusterName is the name of the Cluster drover registers for the cluster it runs in.
	LocalClusterName = "local"
)

// Labels and annotations. Everything under LabelPrefix is reserved: agents cannot set such
// labels on their Cluster through a ClusterRegistration.
const (
	LabelPrefix = "fleet.drover.io/"
	// ClusterLabel names the Cluster an object belongs to.
	ClusterLabel = LabelPrefix + "cluster"
	// ClusterUIDLabel carries the UID of that Cluster, so a re-created Cluster of the same name
	// never adopts (or inherits the rights of) its predecessor's objects.
	ClusterUIDLabel = LabelPrefix + "cluster-uid"
	// ClusterNamespaceLabel names the workspace namespace of that Cluster.
	ClusterNamespaceLabel = LabelPrefix + "cluster-namespace"
	// RegistrationLabel names the ClusterRegistration an object was created for.
	RegistrationLabel = LabelPrefix + "cluster-registration"
	// TokenLabel names the ClusterRegistrationToken a registration or import identity belongs to.
	TokenLabel = LabelPrefix + "registration-token"
	// ManagedLabel marks objects drover created and will delete.
	ManagedLabel = LabelPrefix + "managed"
	// RegistrationTokenAnnotation (Cluster) is the UID of the registration token whose
	// registration created or last registered the Cluster. A registration of its clientID with
	// another token is refused (ReasonClusterRegistered): clientIDs are not secrets, and without
	// this the holder of any token of the workspace could take a registered cluster's identity
	// (its BundleDeployments, its content) and cut its agent off.
	RegistrationTokenAnnotation = LabelPrefix + "registration-token-uid"
	// AllowRegistrationTokenAnnotation (Cluster), set by an admin to a token's name, lets one
	// registration with that token take the Cluster over (an agent re-installed with a new
	// token); drover removes it once used.
	AllowRegistrationTokenAnnotation = LabelPrefix + "allow-registration-token"
)

// Secret types and keys.
const (
	// SecretTypeRegistrationValues is the type of a token's values secret.
	SecretTypeRegistrationValues = "fleet.drover.io/cluster-registration-values"
	// SecretTypeAgentCredential is the type of registration secrets and the agent credential.
	SecretTypeAgentCredential = "fleet.drover.io/agent-credential"
	// SecretTypeAgentBootstrap is the type of the downstream bootstrap secret.
	SecretTypeAgentBootstrap = "fleet.drover.io/agent-bootstrap"

	KeyAPIServerURL                = "apiServerURL"
	KeyAPIServerCA                 = "apiServerCA"
	KeyToken                       = "token"
	KeyTokenName                   = "tokenName"
	KeyTokenExpiry                 = "tokenExpiry"
	KeyClusterNamespace            = "clusterNamespace"
	KeyClusterName                 = "clusterName"
	KeyDeploymentNamespace         = "deploymentNamespace"
	KeyServiceAccount              = "serviceAccount"
	KeySystemRegistrationNamespace = "systemRegistrationNamespace"
	KeyClientID                    = "clientID"
	KeyKubeconfig                  = "value"
	// KeyRenewalToken is the renewal identity's token (register-only), KeyRenewalTokenExpiry its expiry.
	KeyRenewalToken       = "renewalToken"
	KeyRenewalTokenExpiry = "renewalTokenExpiry"
	// KeyRefusedReason and KeyRefusedMessage are a refused registration's answer: its Granted
	// condition's reason and message. A grant replaces them with the credential.
	KeyRefusedReason  = "refusedReason"
	KeyRefusedMessage = "refusedMessage"
)

// Condition types.
const (
	// ConditionReady: the object has done its job (token issued, cluster checked in, ...).
	ConditionReady = "Ready"
	// ConditionImported: the agent and bootstrap secret were deployed to the downstream cluster.
	ConditionImported = "Imported"
	// ConditionGranted: the registration was granted and its secret written.
	ConditionGranted = "Granted"
	// ConditionAgentCredential (Cluster): whether the agent's request credential is current, and
	// if not, why and how it recovers.
	ConditionAgentCredential = "AgentCredential"
	// ConditionApplied: the BundleDeployment's manifests were applied downstream.
	ConditionApplied = "Applied"
	// ConditionDriftCorrected (BundleDeployment): the agent last re-applied resources changed
	// downstream (correctDrift) at the condition's lastTransitionTime; the message names them.
	ConditionDriftCorrected = "DriftCorrected"
)

// Condition reasons. They are part of the API: tools and tests match on them.
const (
	ReasonSucceeded           = "Succeeded"
	ReasonPending             = "Pending"
	ReasonMissingTTL          = "MissingTTL"
	ReasonExpired             = "Expired"
	ReasonMissingAPIServerURL = "MissingAPIServerURL"
	ReasonKubeconfigMissing   = "KubeconfigSecretMissing"
	ReasonKubeconfigInvalid   = "KubeconfigInvalid"
	ReasonCertificateInvalid  = "CertificateInvalid"
	ReasonUnreachable         = "Unreachable"
	ReasonUnauthorized        = "Unauthorized"
	ReasonDeployFailed        = "AgentDeployFailed"
	ReasonReservedLabel       = "ReservedLabel"
	ReasonInvalidClientID     = "InvalidClientID"
	ReasonClusterConflict     = "ClusterConflict"
	// ReasonTokenForOtherCluster: the registration was made with the import token drover made
	// for one Cluster (manager-initiated import), for another cluster.
	ReasonTokenForOtherCluster = "TokenForOtherCluster"
	// ReasonClusterRegistered: the clientID's Cluster was registered with another token (see
	// RegistrationTokenAnnotation).
	ReasonClusterRegistered = "ClusterAlreadyRegistered"
	// ReasonTokenMaxClusters: the token has registered spec.maxClusters clusters already.
	ReasonTokenMaxClusters    = "TokenMaxClustersReached"
	ReasonWaitingForNamespace = "WaitingForNamespace"
	ReasonApplyFailed         = "ApplyFailed"
	ReasonResourcesNotReady   = "ResourcesNotReady"
	// ReasonModified (Bundle Ready=False): resources were changed or deleted downstream since
	// drover applied them, and drover does not correct drift for the Bundle.
	ReasonModified           = "Modified"
	ReasonWaitCheckIn        = "WaitCheckIn"
	ReasonCredentialRevoked  = "CredentialRevoked"
	ReasonBootstrapMissing   = "BootstrapSecretMissing"
	ReasonRegistrationFailed = "RegistrationFailed"
	ReasonRegistered         = "Registered"
	// AgentCredential reasons: the agent checked in within its request token's life; it has not
	// (the token has expired: it re-registers with its renewal identity when it is back); it has
	// not within the renewal identity's life either (it needs a new bootstrap); it re-registered.
	ReasonCredentialCurrent = "Current"
	ReasonCredentialExpired = "CredentialExpired"
	ReasonRenewalExpired    = "RenewalExpired"
	ReasonReregistered      = "Reregistered"
	// ReasonRebootstrapped (Imported): drover deployed a new bootstrap secret to an imported
	// cluster whose agent had been away for longer than its renewal identity lives.
	ReasonRebootstrapped = "Rebootstrapped"
	// ReasonSecretNameConflict: a registration's legacy-named answer would replace another's.
	ReasonSecretNameConflict = "SecretNameConflict"
	// ReasonUnknownKind: a BundleDeployment holds a kind its cluster does not serve yet (a custom
	// resource whose CRD is not established, or a typo); the agent keeps retrying.
	ReasonUnknownKind = "UnknownKind"
	// ReasonContentNotReadable: the agent may not read (Forbidden) or does not find (NotFound)
	// the BundleContent a BundleDeployment references. Usually the cluster's access Role, which
	// drover updates when a Bundle gets new content, is not in effect on the API server yet: the
	// agent retries within seconds and the condition is Applied=Unknown (the Bundle counts it
	// pending). Still not readable after the agent's wait (2 minutes), it turns Applied=False with
	// this reason (errored): the cluster's access Role lacks the content.
	ReasonContentNotReadable = "ContentNotReadable"
	// ReasonAgentDisconnected (Cluster Ready=False): the agent checked in before but has missed
	// its heartbeats for longer than drover server's --agent-disconnect-after. Rollouts do not
	// wait for such a cluster (docs/registration.md).
	ReasonAgentDisconnected = "AgentDisconnected"
	// ReasonDownstreamUnreachable (Cluster Ready=False): the agent checks in but cannot reach
	// its own cluster's API server.
	ReasonDownstreamUnreachable = "DownstreamUnreachable"
	// ReasonDependencyNotReady (Bundle Ready=False): clusters are held because a Bundle of
	// spec.dependsOn is not ready on them (the message names it and the clusters).
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonTemplateFailed (Bundle Ready=False): the Helm values template (spec.helm.
	// templateValues) does not render for some clusters, which keep what they run; the message
	// names the clusters and the error.
	ReasonTemplateFailed = "TemplateFailed"
	// ReasonAgentUpgradeRequired (Bundle Ready=False): the Bundle needs an agent feature
	// (AgentFeatureHelmValues for templated Helm values) that some clusters' agents do not
	// report; they keep what they run until their agent is upgraded. The message names them.
	ReasonAgentUpgradeRequired = "AgentUpgradeRequired"
	// ConditionConfigSupported (GitRepo): every key of the rendered paths' settings files is
	// used. False (reason UnsupportedFleetKeys) names, per path and file, the fleet.yaml keys
	// drover does not support, which were not used; the rest is deployed.
	ConditionConfigSupported = "ConfigSupported"
	// ReasonUnsupportedFleetKeys: a fleet.yaml sets keys drover does not support.
	ReasonUnsupportedFleetKeys = "UnsupportedFleetKeys"
)

// Event reasons (Events on Clusters, ClusterRegistrations, Bundles and GitRepos). Like condition
// reasons they are part of the API. Event messages never carry secret values.
const (
	// EventAgentReconnected (Normal, Cluster): a disconnected agent checked in again.
	EventAgentReconnected = "AgentReconnected"
	// EventDownstreamReachable (Normal, Cluster): the agent reaches its cluster's API server again.
	EventDownstreamReachable = "DownstreamReachable"
	// EventRegistrationGranted (Normal, ClusterRegistration and its Cluster): the agent's
	// credential was issued.
	EventRegistrationGranted = "RegistrationGranted"
	// EventRegistrationDenied (Warning, ClusterRegistration): the registration was refused; the
	// message has the Granted condition's reason and message.
	EventRegistrationDenied = "RegistrationDenied"
	// EventRegistrationSuperseded (Normal, ClusterRegistration): a newer registration of the
	// same clientID replaced it; it is deleted.
	EventRegistrationSuperseded = "RegistrationSuperseded"
	// EventCredentialRevoked (Normal, Cluster): a request identity replaced by a new
	// registration was deleted, so its tokens no longer work.
	EventCredentialRevoked = "CredentialRevoked"
	// EventRolloutHalted (Warning, Bundle): clusters are held at the old version because
	// maxUnavailable clusters are already updating or not ready.
	EventRolloutHalted = "RolloutHalted"
	// EventAgentUpgradeWaiting (Cluster, Normal): its agent's upgrade waits for the fleet's agent
	// rollout budget (drover server --agent-rollout-max-unavailable); once per upgrade.
	EventAgentUpgradeWaiting = "AgentUpgradeWaiting"
	// EventResourcesNotReady (Warning, Bundle): a cluster's resources were applied but a
	// workload is not ready (the message names the cluster and what is missing).
	EventResourcesNotReady = "ResourcesNotReady"
	// EventDriftCorrected (Normal, Bundle): an agent re-applied resources changed downstream
	// (correctDrift); the message names the cluster and the resources, never values.
	EventDriftCorrected = "DriftCorrected"
	// EventGitRepoDeployed (Normal, GitRepo): a new commit was rendered into the GitRepo's
	// Bundles (the note names the commit, the revision and the number of Bundles).
	EventGitRepoDeployed = "Deployed"
	// EventGitRepoSyncFailed (Warning, GitRepo): fetching or rendering failed; the note has the
	// Synced condition's reason and message. Recorded when the failure changes, not on every poll.
	EventGitRepoSyncFailed = "SyncFailed"
)
