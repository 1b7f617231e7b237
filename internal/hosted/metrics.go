package hosted

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/metrics"
)

// HostedCredentials counts hosted Clusters by provider and the state of their cloud
// credentials, from the CredentialsValid condition: "valid" (the provider accepted them),
// "rejected" (the provider refused them: reason Rejected), "unusable" (the Secret is missing
// or malformed: SecretNotFound, SecretIncomplete, SecretInvalid, ...) or "unknown" (not used
// yet); reason is the condition's reason ("" while unknown). The phase in drover_hosted_clusters
// is the last one read, so a cluster whose credentials are refused still counts as active
// there: this gauge is what to alert on. Kept by the hosted-cluster reconciler as
// drover_hosted_clusters is (the leader; use max).
var HostedCredentials = metrics.HostedCredentials

// Credentials states (HostedCredentials' state label).
const (
	CredentialsValid    = "valid"
	CredentialsRejected = "rejected"
	CredentialsUnusable = "unusable"
	CredentialsUnknown  = "unknown"
)

// CredentialsState is the HostedCredentials state and reason of conditions.
func CredentialsState(conds []metav1.Condition) (state, reason string) {
	cv := meta.FindStatusCondition(conds, CondCredentials)
	switch {
	case cv == nil || cv.Status == metav1.ConditionUnknown:
		return CredentialsUnknown, ""
	case cv.Status == metav1.ConditionTrue:
		return CredentialsValid, cv.Reason
	case cv.Reason == v1.ReasonRejected:
		return CredentialsRejected, cv.Reason
	}
	return CredentialsUnusable, cv.Reason
}
