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
	ReasonCredentialsMissing   = "CredentialsMissing"
	ReasonCredentialsInvalid   = "CredentialsInvalid"

	// Synced.
	ReasonInSync          = "InSync"
	ReasonPushing         = "Pushing"
	ReasonThrottled       = "Throttled"
	ReasonProviderError   = "ProviderError"
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
