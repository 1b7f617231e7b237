// Package names derives the names of registration objects. Names are part of the protocol: the
// agent computes its registration secret's name itself, and the controllers find objects by name.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// RegistrationSecretName is "c-" + hex(sha256(clientID ‖ clientRandom)), cut to 63 characters.
func RegistrationSecretName(clientID, clientRandom string) string {
	sum := sha256.Sum256([]byte(clientID + clientRandom))
	n := "c-" + hex.EncodeToString(sum[:])
	return n[:min(len(n), 63)]
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

// ClusterNamespace is the cluster namespace of a Cluster. The UID is part of the hash, so a
// Cluster re-created under the same name gets a fresh namespace and none of the old rights.
func ClusterNamespace(workspace, name, uid string) string {
	return SafeConcat("cluster", workspace, name, KeyHash(workspace+"::"+name+"::"+uid))
}

// ClusterNameForClientID is the name of a Cluster created for an agent-initiated registration.
func ClusterNameForClientID(clientID string) string {
	return "cluster-" + KeyHash(clientID)
}

// ImportServiceAccount is the import identity of a token.
func ImportServiceAccount(token, uid string) string {
	return SafeConcat("import", token, KeyHash(uid)[:8])
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
