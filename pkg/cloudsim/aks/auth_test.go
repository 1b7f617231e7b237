package aks_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

func TestWrongClientSecret(t *testing.T) {
	sim := newSim(t, aks.Options{})
	c := newSDK(t, sim, subID, "not-the-secret", nil)
	_, err := c.clusters.Get(t.Context(), rg, "any", nil)
	var afe *azidentity.AuthenticationFailedError
	if !errors.As(err, &afe) {
		t.Fatalf("err = %v (%T), want *azidentity.AuthenticationFailedError", err, err)
	}
	if afe.RawResponse == nil || afe.RawResponse.StatusCode != http.StatusUnauthorized || !strings.Contains(err.Error(), "AADSTS7000215") {
		t.Fatalf("err = %v, want 401 AADSTS7000215", err)
	}
	if sim.Counters().Get("Token") == 0 || sim.Counters().Get("ManagedClusters.Get") != 0 {
		t.Fatalf("counters = %v: the token call must be counted and ARM never reached", sim.Counters().Snapshot())
	}
}

func TestRotatedSecret(t *testing.T) {
	sim := newSim(t, aks.Options{})
	if err := sim.SetCredential(aks.Credential{TenantID: tenantID, ClientID: clientID, ClientSecret: "rotated", Subscriptions: []string{subID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := newSDK(t, sim, subID, secret, nil).clusters.Get(t.Context(), rg, "x", nil); err == nil || !strings.Contains(err.Error(), "AADSTS7000215") {
		t.Fatalf("old secret: err = %v", err)
	}
	if _, err := newSDK(t, sim, subID, "rotated", nil).clusters.Get(t.Context(), rg, "x", nil); errorCode(err) != "ResourceNotFound" {
		t.Fatalf("new secret: err = %v, want ResourceNotFound", err)
	}
}

func TestARMAuthentication(t *testing.T) {
	sim := newSim(t, aks.Options{})
	url := sim.URL() + "/subscriptions/" + subID + "/resourceGroups/" + rg + "/providers/Microsoft.ContainerService/managedClusters/x?api-version=2025-02-01"
	tests := []struct {
		name     string
		authz    string
		wantCode string
	}{
		{name: "bogus bearer token", authz: "Bearer bogus", wantCode: "InvalidAuthenticationToken"},
		{name: "no Authorization header", wantCode: "AuthenticationFailed"},
		{name: "not a bearer token", authz: "Basic Zm9vOmJhcg==", wantCode: "AuthenticationFailedInvalidHeader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.authz != "" {
				req.Header.Set("Authorization", tt.authz)
			}
			resp, err := sim.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusUnauthorized || body.Error.Code != tt.wantCode {
				t.Fatalf("got %d %q, want 401 %s", resp.StatusCode, body.Error.Code, tt.wantCode)
			}
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	if got := sim.Counters().Get("ManagedClusters.Get"); got != int64(len(tests)) {
		t.Fatalf("unauthenticated calls counted %d, want %d", got, len(tests))
	}
}

func TestSubscriptionNotGranted(t *testing.T) {
	sim := newSim(t, aks.Options{})
	_, err := newSDK(t, sim, otherSub, secret, nil).clusters.Get(t.Context(), rg, "x", nil)
	if statusCode(err) != http.StatusForbidden || errorCode(err) != "AuthorizationFailed" {
		t.Fatalf("err = %v, want 403 AuthorizationFailed", err)
	}
}

// TestExpiredToken: an expired token is refused with ExpiredAuthenticationToken. Expiry follows
// the wall clock (as the SDK's token cache does), so the test polls until it happens.
func TestExpiredToken(t *testing.T) {
	sim := newSim(t, aks.Options{TokenLifetime: 50 * time.Millisecond})
	cred, err := azidentity.NewClientSecretCredential(tenantID, clientID, secret, sim.CredentialOptions())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cred.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: []string{sim.URL() + "/.default"}})
	if err != nil {
		t.Fatalf("GetToken: %v", err)
	}
	get := func() (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
			sim.URL()+"/subscriptions/"+subID+"/resourceGroups/"+rg+"/providers/Microsoft.ContainerService/managedClusters/x?api-version=2025-02-01", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := sim.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Error struct{ Code string } }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Error.Code
	}
	if status, code := get(); status != http.StatusNotFound {
		t.Fatalf("fresh token: %d %s, want 404", status, code)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case <-deadline:
			t.Fatal("token never expired")
		case <-tick.C:
		}
		if status, code := get(); status == http.StatusUnauthorized {
			if code != "ExpiredAuthenticationToken" {
				t.Fatalf("expired token: code %s", code)
			}
			return
		}
	}
}

// TestFaults runs a lifecycle through each kind of injected fault: the SDK's retry policy must
// absorb them, the counters must show the extra calls, and Retry-After must not slow the test.
func TestFaults(t *testing.T) {
	tests := []struct {
		name   string
		faults simcore.FaultConfig
	}{
		{name: "30% throttling", faults: simcore.FaultConfig{Throttle: 0.3, Seed: 7}},
		{name: "20% 5xx", faults: simcore.FaultConfig{ServerError: 0.2, Seed: 11}},
		{name: "10% dropped connections", faults: simcore.FaultConfig{Drop: 0.1, Seed: 13}},
		{name: "latency", faults: simcore.FaultConfig{Latency: 2 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			sim := newSim(t, aks.Options{Faults: tt.faults, ThrottleRetryAfter: 5 * time.Millisecond, Delay: 20 * time.Millisecond})
			sc := &statusCounter{next: sim.HTTPClient()}
			c := newSDK(t, sim, subID, secret, sc)
			ctx := t.Context()

			createCluster(ctx, t, c, "faulty", clusterBody("1.31.6"))
			updateCluster(ctx, t, c, "faulty", func(mc *armcontainerservice.ManagedCluster) {
				mc.Properties.KubernetesVersion = to.Ptr("1.32.3")
			})
			if _, err := putPool(ctx, c, "faulty", "user1", func(p *armcontainerservice.ManagedClusterAgentPoolProfileProperties) { p.Count = to.Ptr[int32](2) }); err != nil {
				t.Fatalf("put pool: %v", err)
			}
			dp, err := c.clusters.BeginDelete(ctx, rg, "faulty", nil)
			if err != nil {
				t.Fatalf("BeginDelete: %v", err)
			}
			if _, err := dp.PollUntilDone(ctx, poll); err != nil {
				t.Fatalf("PollUntilDone(delete): %v", err)
			}

			total := sim.Counters().Total()
			faulted := sc.throttle.Load() + sc.failed.Load()
			t.Logf("%d calls reached the simulator, %d answered with a fault (%d throttled) in %v",
				total, faulted, sc.throttle.Load(), time.Since(start).Round(time.Millisecond))
			// The transport may resend an idempotent request whose connection was dropped, so
			// the simulator can count more calls than the client saw, never fewer.
			if total < sc.total.Load() {
				t.Errorf("simulator counted %d calls, client saw %d", total, sc.total.Load())
			}
			if successes := sc.total.Load() - faulted; tt.faults.Throttle+tt.faults.ServerError+tt.faults.Drop > 0 && total <= successes {
				t.Errorf("%d calls for %d successes: no retry recorded", total, successes)
			}
			if tt.faults.Throttle > 0 && sc.throttle.Load() == 0 {
				t.Errorf("no throttling was injected")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("lifecycle took %v; Retry-After should not slow tests", d)
			}
		})
	}
}

var _ policy.Transporter = (*statusCounter)(nil)
