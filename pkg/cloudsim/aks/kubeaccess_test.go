package aks_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"

	"github.com/droverhq/drover/internal/hosted/access"
	"github.com/droverhq/drover/pkg/cloudsim/aks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// review posts a TokenReview to the simulator's webhook path of backend.
func review(t *testing.T, sim *aks.Server, backend, token string) (bool, string, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": map[string]any{"token": token}})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, sim.URL()+simcore.TokenReviewPath(backend), bytes.NewReader(body))
	resp, err := sim.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("TokenReview: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		Status struct {
			Authenticated bool
			User          struct{ Username string }
			Error         string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("TokenReview: status %d, decode error %v", resp.StatusCode, err)
	}
	return out.Status.Authenticated, out.Status.User.Username, out.Status.Error
}

func TestClusterCredentialsAndTokenReview(t *testing.T) {
	clock := &simcore.ShiftedClock{}
	backend := &simcore.Backend{Name: "one", Endpoint: "https://127.0.0.1:6443"}
	sim := newSim(t, aks.Options{Clock: clock, Backend: backend, KubeTokenLifetime: 10 * time.Minute})
	testCA := sim.CAPEM() // any parseable CA will do
	backend.CAPEM = testCA
	c := newSDK(t, sim, subID, secret, nil)
	ctx := t.Context()
	createCluster(ctx, t, c, "a", clusterBody(""))
	createCluster(ctx, t, c, "b", clusterBody(""))
	if err := sim.SetBackend(subID, rg, "b", &simcore.Backend{Name: "two", Endpoint: "https://127.0.0.1:7443", CAPEM: testCA}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		admin bool
		user  string
	}{{"user credential", false, "clusterUser"}, {"admin credential", true, "clusterAdmin"}} {
		t.Run(tc.name, func(t *testing.T) {
			cr, err := access.AKS(ctx, c.clusters, rg, "a", tc.admin, 5*time.Minute)
			if err != nil {
				t.Fatalf("access.AKS: %v", err)
			}
			if cr.Host != backend.Endpoint || !bytes.Equal(cr.CAData, testCA) {
				t.Fatalf("kubeconfig server %s CA %q, want the backend's", cr.Host, cr.CAData)
			}
			ok, user, why := review(t, sim, "one", cr.Token)
			if !ok || user != tc.user {
				t.Fatalf("review: authenticated=%v user=%s (%s)", ok, user, why)
			}
			if ok, _, why := review(t, sim, "two", cr.Token); ok || !strings.Contains(why, "does not serve") {
				t.Fatalf("a's token on b's backend: authenticated=%v (%s)", ok, why)
			}
		})
	}

	cr, err := access.AKS(ctx, c.clusters, rg, "a", false, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Repeat("0", 64)
	if ok, _, why := review(t, sim, "one", forged); ok || !strings.Contains(why, "unknown") {
		t.Fatalf("forged token: authenticated=%v (%s)", ok, why)
	}
	clock.Advance(10*time.Minute + time.Second)
	if ok, _, why := review(t, sim, "one", cr.Token); ok || !strings.Contains(why, "expired") {
		t.Fatalf("expired token: authenticated=%v (%s)", ok, why)
	}

	body := clusterBody("")
	body.Properties.DisableLocalAccounts = to.Ptr(true)
	createCluster(ctx, t, c, "nolocal", body)
	if _, err := access.AKS(ctx, c.clusters, rg, "nolocal", true, 5*time.Minute); err == nil || !strings.Contains(err.Error(), "disable local accounts") {
		t.Fatalf("disableLocalAccounts: %v", err)
	}
}
