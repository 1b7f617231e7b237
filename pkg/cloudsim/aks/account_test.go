package aks_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
)

// TestAccountEndpoints: what a CLI needs besides the cluster APIs, through MSAL (azidentity) and
// plain HTTPS: ARM's /metadata/endpoints names an ADFS-style authority (https://host/adfs/) and
// the simulator as audience; a client-credentials token from that authority, found by client ID
// without a tenant in the path and without instance discovery; GET /subscriptions lists the
// application's subscriptions (with "*": also those holding clusters), GET /tenants its tenant;
// a cluster with a managed identity shows its kubelet identity (identityProfile).
func TestAccountEndpoints(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const anySecret = "any-subscription-secret"
	anyClient := "55555555-5555-4555-8555-555555555555"
	sim := newSim(t, aks.Options{Credentials: []aks.Credential{
		{TenantID: tenantID, ClientID: clientID, ClientSecret: secret, Subscriptions: []string{subID}},
		{TenantID: tenantID, ClientID: anyClient, ClientSecret: anySecret, Subscriptions: []string{"*"}},
	}})
	hc := sim.HTTPClient()
	get := func(path, token string, v any) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, sim.URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		if v != nil && resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		return resp.StatusCode
	}

	var md struct {
		Authentication struct {
			LoginEndpoint string
			Audiences     []string
		}
	}
	if code := get("/metadata/endpoints?api-version=2015-01-01", "", &md); code != http.StatusOK ||
		md.Authentication.LoginEndpoint != sim.URL()+"/adfs/" || len(md.Authentication.Audiences) != 1 || md.Authentication.Audiences[0] != sim.URL()+"/" {
		t.Fatalf("metadata/endpoints: %d %+v", code, md)
	}

	// The ADFS authority: the host with tenant "adfs". Instance discovery stays on: MSAL skips
	// it for ADFS (were it sent, it would go to login.microsoftonline.com and fail here).
	token := func(client, secret string) string {
		t.Helper()
		opts := sim.ClientOptions()
		cred, err := azidentity.NewClientSecretCredential("adfs", client, secret, &azidentity.ClientSecretCredentialOptions{ClientOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{md.Authentication.Audiences[0] + ".default"}})
		if err != nil {
			t.Fatalf("token from the ADFS authority: %v", err)
		}
		return tok.Token
	}
	tok, anyTok := token(clientID, secret), token(anyClient, anySecret)

	type subs struct {
		Value []struct{ SubscriptionID, TenantID, State string }
	}
	var got subs
	if code := get("/subscriptions?api-version=2022-12-01", tok, &got); code != http.StatusOK || len(got.Value) != 1 ||
		got.Value[0].SubscriptionID != subID || got.Value[0].TenantID != tenantID || got.Value[0].State != "Enabled" {
		t.Fatalf("GET /subscriptions: %d %+v, want %s only", code, got, subID)
	}
	var tenants struct{ Value []struct{ TenantID string } }
	if code := get("/tenants?api-version=2022-12-01", tok, &tenants); code != http.StatusOK || len(tenants.Value) != 1 || tenants.Value[0].TenantID != tenantID {
		t.Fatalf("GET /tenants: %d %+v", code, tenants)
	}
	if code := get("/subscriptions?api-version=2022-12-01", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("GET /subscriptions without a token: %d, want 401", code)
	}

	// "*": the subscriptions that hold clusters (none yet, then otherSub).
	if code := get("/subscriptions?api-version=2022-12-01", anyTok, &got); code != http.StatusOK || len(got.Value) != 0 {
		t.Fatalf("GET /subscriptions for \"*\" with no cluster: %d %+v", code, got)
	}
	api := newSDK(t, sim, subID, secret, nil)
	p, err := api.clusters.BeginCreateOrUpdate(ctx, rg, "c", clusterBody("1.32"), nil)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := p.PollUntilDone(ctx, poll)
	if err != nil {
		t.Fatal(err)
	}
	if code := get("/subscriptions?api-version=2022-12-01", anyTok, &got); code != http.StatusOK || len(got.Value) != 1 || got.Value[0].SubscriptionID != subID {
		t.Fatalf("GET /subscriptions for \"*\": %d %+v, want %s (it has a cluster)", code, got, subID)
	}

	kubelet := mc.Properties.IdentityProfile["kubeletidentity"]
	if kubelet == nil || kubelet.ClientID == nil || kubelet.ObjectID == nil || kubelet.ResourceID == nil ||
		!strings.HasSuffix(*kubelet.ResourceID, "/userAssignedIdentities/c-agentpool") {
		t.Fatalf("identityProfile.kubeletidentity of a cluster with a system-assigned identity: %+v", kubelet)
	}
}
