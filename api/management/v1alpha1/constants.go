package v1alpha1

// Condition types of a hosted Cluster.
const (
	// ConditionReady: the cluster is usable.
	ConditionReady = "Ready"
	// ConditionSynced: every managed field matches the provider.
	ConditionSynced = "Synced"
	// ConditionUpdating: the provider is applying an update.
	ConditionUpdating = "Updating"
	// ConditionConflict: a field was changed both in drover and at the provider.
	ConditionConflict = "Conflict"
	// ConditionCredentialsValid: the credential Secret exists and the provider accepts it.
	ConditionCredentialsValid = "CredentialsValid"
	// ConditionConfigValid: the config can be sent to the provider.
	ConditionConfigValid = "ConfigValid"

	// ConditionJoined (in status.fleet.conditions): the kubeconfig Secret and the fleet
	// Cluster are in place, so the agent is deployed.
	ConditionJoined = "Joined"
	// ConditionAgentReady (in status.fleet.conditions): the fleet Cluster's agent checked in.
	ConditionAgentReady = "AgentReady"
)

// Reasons of the Joined and AgentReady conditions.
const (
	// Joined=True.
	ReasonJoined = "Joined"
	// ReasonJoinDisabled: spec.fleet.join is false (or unset under --hosted-join=false).
	ReasonJoinDisabled = "JoinDisabled"
	// ReasonWaitingForCluster: the cluster is not active yet (creating, failed, deleting).
	ReasonWaitingForCluster = "WaitingForCluster"
	// ReasonAccessEntryMissing: an EKS cluster has no access entry for drover's IAM principal;
	// the message names the principal and the commands that add it.
	ReasonAccessEntryMissing = "AccessEntryMissing"
	// ReasonEndpointPrivate: the API endpoint is private only; drover cannot reach it.
	ReasonEndpointPrivate = "EndpointPrivate"
	// ReasonCredentialsRejected: the cluster's API server refused drover's token.
	ReasonCredentialsRejected = "CredentialsRejected"
	// ReasonCredentialsUnavailable: the provider did not give drover credentials for the
	// cluster (the message has the provider's error).
	ReasonCredentialsUnavailable = "CredentialsUnavailable"
	// ReasonUnreachable: the cluster's API server could not be reached.
	ReasonUnreachable = "Unreachable"
	// ReasonFleetClusterConflict: a fleet Cluster of that name exists that drover did not
	// create for this hosted cluster.
	ReasonFleetClusterConflict = "FleetClusterConflict"
	// ReasonLeaving: the cluster is being deleted (or opted out); its agent and fleet Cluster
	// are being removed.
	ReasonLeaving = "Leaving"

	// AgentReady.
	ReasonAgentCheckedIn  = "AgentCheckedIn"
	ReasonWaitingForAgent = "WaitingForAgent"
)

// Condition reasons of a hosted Cluster. They are part of the API: tools and tests match on
// them; the message says the details.
const (
	// Ready.
	ReasonActive               = "Active"
	ReasonCreating             = "Creating"
	ReasonUpdating             = "Updating"
	ReasonDeleting             = "Deleting"
	ReasonProviderFailed       = "ProviderFailed"
	ReasonNotFound             = "NotFound"
	ReasonDeletedOutsideDrover = "DeletedOutsideDrover"
	// ReasonAlreadyExists: a Cluster to create names a cluster that already exists at the
	// provider, which this Cluster did not create: drover neither takes it over nor deletes it.
	ReasonAlreadyExists      = "AlreadyExists"
	ReasonCredentialsMissing = "CredentialsMissing"
	ReasonCredentialsInvalid = "CredentialsInvalid"

	// Synced.
	ReasonInSync        = "InSync"
	ReasonPushing       = "Pushing"
	ReasonThrottled     = "Throttled"
	ReasonProviderError = "ProviderError"
	// ReasonProviderTimeout (Synced=False): the provider did not answer within the pass's
	// deadline (or a request's own timeout); retried with backoff.
	ReasonProviderTimeout = "ProviderTimeout"
	ReasonInvalidConfig   = "InvalidConfig"
	ReasonOperationFailed = "OperationFailed"
	// ReasonExternalUpdate: an update drover did not start (console, Terraform) is running;
	// drover pushes nothing until it ends, then adopts its result.
	ReasonExternalUpdate = "ExternalUpdate"
	// ReasonChangedSinceRead: the provider refused drover's conditional write (AKS If-Match,
	// 412) because the cluster changed since drover read it; the next pass re-reads and
	// pushes again.
	ReasonChangedSinceRead = "ChangedSinceRead"

	// Updating.
	ReasonInProgress   = "InProgress"
	ReasonIdle         = "Idle"
	ReasonProviderBusy = "ProviderBusy"

	// Conflict.
	ReasonNoConflict         = "NoConflict"
	ReasonChangedOnBothSides = "ChangedOnBothSides"

	// CredentialsValid.
	ReasonAccepted          = "Accepted"
	ReasonRejected          = "Rejected"
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonSecretIncomplete  = "SecretIncomplete"
	ReasonSecretInvalid     = "SecretInvalid"
	ReasonInvalidCredential = "InvalidCredential"
	ReasonInvalidCAPEM      = "InvalidCAPEM"
	ReasonInvalidEndpoint   = "InvalidEndpoint"

	// ConfigValid: Valid, or what is wrong with the field the message names (RejectedByEKS,
	// RejectedByAKS, RejectedByGKE: the provider refused a value drover could not check first).
	ReasonValid                    = "Valid"
	ReasonMissingField             = "MissingField"
	ReasonImmutableField           = "ImmutableField"
	ReasonVersionDowngrade         = "VersionDowngrade"
	ReasonVersionSkip              = "VersionSkip"
	ReasonNodeVersionTooNew        = "NodeVersionTooNew"
	ReasonInvalidVersion           = "InvalidVersion"
	ReasonInvalidScaling           = "InvalidScaling"
	ReasonInvalidValue             = "InvalidValue"
	ReasonInvalidName              = "InvalidName"
	ReasonInvalidLocation          = "InvalidLocation"
	ReasonUnknownRegion            = "UnknownRegion"
	ReasonUnknownLocation          = "UnknownLocation"
	ReasonRegionAndZone            = "RegionAndZone"
	ReasonInvalidCIDR              = "InvalidCIDR"
	ReasonTooManyCIDRBlocks        = "TooManyCIDRBlocks"
	ReasonInvalidIP                = "InvalidIP"
	ReasonInvalidLabel             = "InvalidLabel"
	ReasonInvalidTaint             = "InvalidTaint"
	ReasonInvalidLogType           = "InvalidLogType"
	ReasonInvalidService           = "InvalidService"
	ReasonInvalidDiskSize          = "InvalidDiskSize"
	ReasonInvalidDNSPrefix         = "InvalidDNSPrefix"
	ReasonInvalidPoolName          = "InvalidPoolName"
	ReasonInvalidMaintenanceWindow = "InvalidMaintenanceWindow"
	ReasonNoEndpointAccess         = "NoEndpointAccess"
	ReasonDuplicateNodeGroup       = "DuplicateNodeGroup"
	ReasonDuplicateNodePool        = "DuplicateNodePool"
	ReasonDuplicatePool            = "DuplicatePool"
	ReasonLastNodePool             = "LastNodePool"
	ReasonLastSystemPool           = "LastSystemPool"
	ReasonNoSystemPool             = "NoSystemPool"
	ReasonResourceGroupNotFound    = "ResourceGroupNotFound"
	ReasonRejectedByEKS            = "RejectedByEKS"
	ReasonRejectedByAKS            = "RejectedByAKS"
	ReasonRejectedByGKE            = "RejectedByGKE"
)
