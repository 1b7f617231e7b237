package gke_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/auth/credentials"
	container "google.golang.org/api/container/v1"

	"github.com/droverhq/drover/internal/hosted/access"
	"github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// reviewToken posts a TokenReview to the simulator's webhook path of backend.
func reviewToken(t *testing.T, ts *gke.TestServer, backend, token string) (bool, string, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": map[string]any{"token": token}})
	resp, err := http.Post(ts.URL+simcore.TokenReviewPath(backend), "application/json", bytes.NewReader(body))
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

func TestClusterAccessAndTokenReview(t *testing.T) {
	ctx := t.Context()
	clock := &simcore.ShiftedClock{}
	ts := gke.NewTestServer(t, gke.Options{Clock: clock, Delay: time.Minute})
	admin := newService(t, ts, saEmail, project)
	backend := &simcore.Backend{Name: "one", Endpoint: "https://127.0.0.1:6443"}

	_, err := admin.Projects.Locations.Clusters.Create(parent(region), &container.CreateClusterRequest{Cluster: &container.Cluster{Name: "a", InitialNodeCount: 1}}).Context(ctx).Do()
	if err != nil {
		t.Fatalf("clusters.create: %v", err)
	}
	clock.Advance(2 * time.Minute)
	// Any parseable CA will do: the simulator's own cluster CA.
	st, _ := ts.Cluster(project, region, "a")
	ca := st.Cluster.MasterAuth.ClusterCaCertificate
	backend.CAPEM = mustB64(t, ca)
	if err := ts.SetBackend(project, region, "a", backend); err != nil {
		t.Fatal(err)
	}

	key, err := ts.NewServiceAccountKey(saEmail, project)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, key, &credentials.DetectOptions{Scopes: []string{container.CloudPlatformScope}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := container.NewService(ctx, ts.ClientOptions(key)...)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := access.GKE(ctx, svc, creds, project, region, "a")
	if err != nil {
		t.Fatalf("access.GKE: %v", err)
	}
	if cr.Host != backend.Endpoint || !bytes.Equal(cr.CAData, backend.CAPEM) || time.Until(cr.Expiry) < 50*time.Minute {
		t.Fatalf("credentials %s, want the backend's endpoint and CA and a 1h token", cr)
	}
	if ok, user, why := reviewToken(t, ts, "one", cr.Token); !ok || user != saEmail {
		t.Fatalf("review: authenticated=%v user=%s (%s)", ok, user, why)
	}

	otherKey, err := ts.NewServiceAccountKey("other@elsewhere.iam.gserviceaccount.com", "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	otherCreds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, otherKey, &credentials.DetectOptions{Scopes: []string{container.CloudPlatformScope}})
	if err != nil {
		t.Fatal(err)
	}
	otherTok, err := otherCreds.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, backend, token, why string }{
		{"other backend", "two", cr.Token, "has no access"},
		{"service account of another project", "one", otherTok.Value, "has no access"},
		{"forged", "one", "ya29.c." + strings.Repeat("x", 64), "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ok, _, why := reviewToken(t, ts, tc.backend, tc.token); ok || !strings.Contains(why, tc.why) {
				t.Fatalf("authenticated=%v (%s), want refused with %q", ok, why, tc.why)
			}
		})
	}
	clock.Advance(time.Hour)
	if ok, _, why := reviewToken(t, ts, "one", cr.Token); ok || !strings.Contains(why, "expired") {
		t.Fatalf("an hour later: authenticated=%v (%s)", ok, why)
	}
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64Std(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func base64Std(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
