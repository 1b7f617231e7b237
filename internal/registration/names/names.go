// Package names derives the names of registration objects. Names are part of the protocol: the
// agent computes its registration secret's name itself, and the controllers find objects by name.
package names

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
)

// RegistrationSecretName is "r-" + hex(sha256(len(clientID) ‖ clientID ‖ len(clientRandom) ‖
// clientRandom)), lengths as 8-byte big-endian integers, cut to 63 characters. The length
// prefixes make the encoding unambiguous: ("ab", "c") and ("a", "bc") get different names. The
// prefix differs from the legacy "c-" so that no legacy name (a hash of arbitrary bytes) can
// equal a current one.
func RegistrationSecretName(clientID, clientRandom string) string {
	h := sha256.New()
	for _, f := range []string{clientID, clientRandom} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(f))) // a hash.Hash never fails to write
		h.Write([]byte(f))
	}
	n := "r-" + hex.EncodeToString(h.Sum(nil))
	return n[:min(len(n), 63)]
}

// LegacyRegistrationSecretName is the name agents before the length-prefixed encoding wait for:
// "c-" + hex(sha256(clientID ‖ clientRandom)), ambiguous where the two fields meet. drover
// answers a registration under it only when the registration lacks SecretNameAnnotation.
func LegacyRegistrationSecretName(clientID, clientRandom string) string {
	sum := sha256.Sum256([]byte(clientID + clientRandom))
	n := "c-" + hex.EncodeToString(sum[:])
	return n[:min(len(n), 63)]
}

// SecretNameAnnotation on a ClusterRegistration says which name the agent waits for its answer
// under; agents set it to SecretNameLengthPrefixed. Without it the agent predates the
// length-prefixed encoding and waits for LegacyRegistrationSecretName.
const (
	SecretNameAnnotation     = "fleet.drover.io/secret-name-encoding"
	SecretNameLengthPrefixed = "length-prefixed"
)

// AnswerSecretName is the registration secret answering a registration with these annotations.
func AnswerSecretName(annotations map[string]string, clientID, clientRandom string) string {
	if annotations[SecretNameAnnotation] == SecretNameLengthPrefixed {
		return RegistrationSecretName(clientID, clientRandom)
	}
	return LegacyRegistrationSecretName(clientID, clientRandom)
}

// KeyHash is the first 12 hex characters of the sha256 of s.
func KeyHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// SafeConcat joins parts with "-" and keeps the result a valid DNS label (≤ 63 characters):
// a longer result is cut and suffixed with a hash of the whole, so distinct inputs stay distinct.
func SafeConcat(parts ...string) string {
	s := strings.Join(parts, "-")
	if len(s) <= 63 {
		return s
	}
	return strings.TrimRight(s[:50], "-.") + "-" + KeyHash(s)
}

// ReaderRole is the Role (and RoleBinding) in the registration namespace that lets import
// identity importSA of namespace ns read its answers of one window and shard. Names there are
// shared by every namespace, so the owner is identified by a hash of its unambiguous encoding:
// joining "ns-token" with "-" made namespace "team" with token "pay-edge" and namespace
// "team-pay" with token "edge" share one reader, and one team's import identity read the
// other's answers (128 bits: no second owner can be found for a name).
func ReaderRole(ns, importSA, window string, shard int) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(len(ns)) + ":" + ns + "/" + importSA))
	return "reader-" + hex.EncodeToString(sum[:16]) + "-" + window + "-" + strconv.Itoa(shard)
}

// ClusterNamespace is the cluster namespace of a Cluster. The UID is part of the hash, so a
// Cluster re-created under the same name gets a fresh namespace and none of the old rights.
func ClusterNamespace(workspace, name, uid string) string {
	return SafeConcat("cluster", workspace, name, KeyHash(workspace+"::"+name+"::"+uid))
}

// ClusterNameForClientID is the name of a Cluster created for an agent-initiated registration.
func ClusterNameForClientID(clientID string) string {
	return "cluster-" + KeyHash(clientID)
}

// ImportServiceAccount is the import identity of a token: "import-" + the token's name + "-" +
// 8 hex characters of its UID. A token's name has at most 63 characters (it is a label value),
// so this is never cut, and the token's name can be read back from the identity's username: the admission policy config/admission/import-identity-registrations.yaml
// checks that an import identity registers only with its own token.
func ImportServiceAccount(token, uid string) string {
	return "import-" + token + "-" + KeyHash(uid)[:8]
}

// ImportTokenName is the ClusterRegistrationToken the importer creates for a Cluster.
func ImportTokenName(cluster string) string { return SafeConcat("import", cluster) }

// ClusterAccessRole is the per-cluster Role (and RoleBinding) in the workspace namespace for
// the current request identity: patch its own Cluster's status, and get exactly the
// BundleContents its BundleDeployments reference. Registration creates it with the status rule
// and binds it; the bundle controller keeps the content rule's resourceNames up to date. One
// Role and one binding per cluster, not two: every request an agent makes in the workspace
// namespace is authorized by scanning that namespace's RoleBindings.
func ClusterAccessRole(cluster string) string { return SafeConcat("drover-cluster", cluster) }

// AgentRole is the Role (and RoleBinding) in a cluster namespace for the request identity.
const AgentRole = "drover-agent"

// RenewalServiceAccount is the renewal identity in a cluster namespace (and its Role and
// RoleBinding): it may only create ClusterRegistrations there, which re-register that one
// cluster. Its token stays with the agent, so an agent whose request token expired (offline for
// longer than its life) registers again without a bootstrap secret.
const RenewalServiceAccount = "drover-renewal"

// RenewalPrefix is the generateName of renewal registrations, which drover tells apart by it:
// their request ServiceAccounts share the cluster namespace with those of other registrations
// ("request-").
const RenewalPrefix = "renew-"

// RenewalTokenLabelValue is the registration-token label of objects made for renewal
// registrations, which come with no ClusterRegistrationToken.
const RenewalTokenLabelValue = "renewal"
