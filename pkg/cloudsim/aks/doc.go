// Package aks simulates Azure Kubernetes Service for drover's tests and the `drover cloudsim`
// command: Entra ID's client-credentials token endpoint and the ARM managedClusters and
// agentPools APIs, served over HTTPS so that the unmodified Azure SDK (azidentity and
// armcontainerservice) talks to it through a cloud configuration override:
//
//	sim := aks.NewTestServer(t, aks.Options{Credentials: []aks.Credential{{
//		TenantID: tenant, ClientID: client, ClientSecret: secret, Subscriptions: []string{sub},
//	}}})
//	cred, _ := azidentity.NewClientSecretCredential(tenant, client, secret, sim.CredentialOptions())
//	clusters, _ := armcontainerservice.NewManagedClustersClient(sub, cred, sim.ARMClientOptions())
//
// HTTPS is required, not a choice: MSAL rejects an http authority and azcore refuses to send a
// bearer token over http. The simulator generates its own CA at New; HTTPClient trusts it.
//
// Long-running operations behave as ARM's do for the SDK pollers: a PUT, PATCH or DELETE answers
// with an Azure-AsyncOperation URL (and Location for DELETE) whose status is InProgress for
// Options.Delay, then Succeeded (or Failed, see FailNextOperation); meanwhile the resource shows
// provisioningState Creating, Updating, Upgrading, Scaling or Deleting and a second mutation is
// refused with 409 OperationNotAllowed. Transitions are lazy (see simcore): nothing runs in the
// background, so one simulator holds tens of thousands of clusters.
//
// Every call is counted (Counters) and passes through the fault injector (Faults) before
// authentication, so throttling, 5xx, dropped connections and latency hit token and ARM calls
// alike.
package aks
