// Package gke simulates Google Kubernetes Engine's container/v1 REST API and the OAuth2 token
// endpoint of Google service accounts, so that the unmodified google.golang.org/api/container/v1
// client can be tested against it through option.WithEndpoint.
//
// What it models:
//   - Service accounts with RSA keys (NewServiceAccountKey returns the JSON key file). The SDK
//     exchanges a JWT signed with the key for an access token at /token; self-signed JWTs sent
//     directly as bearer tokens are accepted too. Each account is granted a set of projects.
//   - Clusters and node pools, kept as the SDK's own container types so the JSON matches the
//     client byte for byte in field names and encodings.
//   - Operations: every mutation returns an Operation and the cluster is PROVISIONING,
//     RECONCILING or STOPPING until it ends after Options.Delay; the change is visible only
//     then. Only one operation runs per cluster (node pools included); a second mutation gets
//     400 FAILED_PRECONDITION "Cluster is running incompatible operation ...". Operations end
//     lazily, when the cluster or the operation is next read (see simcore).
//   - Google's error bodies ({"error":{"code","message","errors","status","details"}}), which
//     googleapi.Error parses, and injected faults from simcore (429 RESOURCE_EXHAUSTED, 500/503,
//     dropped connections, latency).
//
// The SDK does not retry any container/v1 call (see the package tests): drover must back off
// and retry throttling, 5xx and FAILED_PRECONDITION itself.
package gke
