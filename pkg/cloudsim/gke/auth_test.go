package gke_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/auth"
	"golang.org/x/oauth2"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/droverhq/drover/pkg/cloudsim/gke"
)

// foreignKey is a service-account key the simulator did not issue.
func foreignKey(t *testing.T, email, tokenURI string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     project,
		"private_key_id": "0123456789abcdef0123456789abcdef01234567",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   email,
		"token_uri":      tokenURI,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForeignKeyIsRejected checks that the token endpoint refuses keys it did not issue the way
// Google does: 400 invalid_grant, surfaced by the SDK as *auth.Error before any API call.
func TestForeignKeyIsRejected(t *testing.T) {
	ts := gke.NewTestServer(t, gke.Options{})
	if _, err := ts.NewServiceAccountKey(saEmail, project); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, email, wantDescription string
	}{
		{"known account signed with another key", saEmail, "Invalid JWT Signature."},
		{"unknown account", "stranger@elsewhere.iam.gserviceaccount.com", "Invalid grant: account not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := foreignKey(t, tt.email, ts.URL+"/token")
			svc, err := container.NewService(t.Context(), ts.ClientOptions(key)...)
			if err != nil {
				t.Fatalf("container.NewService: %v", err)
			}
			before := ts.Counters().Get("clusters.list")
			_, err = svc.Projects.Locations.Clusters.List(parent("-")).Context(t.Context()).Do()
			var aerr *auth.Error
			if !errors.As(err, &aerr) || aerr.Response == nil {
				t.Fatalf("clusters.list with a foreign key: %v, want an *auth.Error from the token endpoint", err)
			}
			var body struct {
				Error            string `json:"error"`
				ErrorDescription string `json:"error_description"`
			}
			if jerr := json.Unmarshal(aerr.Body, &body); jerr != nil {
				t.Fatalf("token error body %q: %v", aerr.Body, jerr)
			}
			if aerr.Response.StatusCode != http.StatusBadRequest || body.Error != "invalid_grant" || body.ErrorDescription != tt.wantDescription {
				t.Errorf("token endpoint answered %d %+v, want 400 invalid_grant %q", aerr.Response.StatusCode, body, tt.wantDescription)
			}
			if after := ts.Counters().Get("clusters.list"); after != before {
				t.Errorf("the API was called without a token (%d calls)", after-before)
			}
		})
	}
}

// TestAPIAuthentication covers the API side: bearer tokens, project grants and self-signed JWTs.
func TestAPIAuthentication(t *testing.T) {
	ts := gke.NewTestServer(t, gke.Options{})
	ctx := t.Context()

	t.Run("unknown bearer token", func(t *testing.T) {
		svc, err := container.NewService(ctx, option.WithEndpoint(ts.URL+"/"),
			option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.not-issued-here"})))
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.Projects.Locations.Clusters.List(parent("-")).Context(ctx).Do()
		code, status := apiStatus(err)
		var herr *googleapi.Error
		if code != http.StatusUnauthorized || status != "UNAUTHENTICATED" || !errors.As(err, &herr) ||
			!strings.HasPrefix(herr.Message, "Request had invalid authentication credentials.") {
			t.Fatalf("clusters.list with an unknown token: %v, want 401 UNAUTHENTICATED", err)
		}
	})

	t.Run("project not granted", func(t *testing.T) {
		svc := newService(t, ts, "narrow@drover-test.iam.gserviceaccount.com", project)
		_, err := svc.Projects.Locations.Clusters.Get("projects/someone-else/locations/us-east1/clusters/x").Context(ctx).Do()
		var herr *googleapi.Error
		if code, status := apiStatus(err); code != http.StatusForbidden || status != "PERMISSION_DENIED" || !errors.As(err, &herr) ||
			herr.Message != `Required "container.clusters.get" permission(s) for "projects/someone-else/locations/us-east1/clusters/x".` {
			t.Fatalf("clusters.get in another project: %v, want 403 PERMISSION_DENIED", err)
		}
		if _, err := svc.Projects.Locations.Clusters.List(parent("-")).Context(ctx).Do(); err != nil {
			t.Fatalf("clusters.list in the granted project: %v", err)
		}
	})

	t.Run("token endpoint is used and its token cached", func(t *testing.T) {
		svc := newService(t, ts, "cached@drover-test.iam.gserviceaccount.com")
		before := ts.Counters().Get("token")
		for range 3 {
			if _, err := svc.Projects.Locations.Clusters.List(parent("-")).Context(ctx).Do(); err != nil {
				t.Fatalf("clusters.list: %v", err)
			}
		}
		if n := ts.Counters().Get("token") - before; n != 1 {
			t.Fatalf("token endpoint called %d times for 3 API calls, want 1", n)
		}
	})

	t.Run("self-signed JWT", func(t *testing.T) {
		// With an audience the auth library signs a JWT itself and sends it as the bearer
		// token instead of calling the token endpoint.
		key, err := ts.NewServiceAccountKey("selfsigned@drover-test.iam.gserviceaccount.com", project)
		if err != nil {
			t.Fatal(err)
		}
		opts := append(ts.ClientOptions(key), option.WithAudiences("https://container.googleapis.com/"))
		svc, err := container.NewService(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		before := ts.Counters().Get("token")
		if _, err := svc.Projects.Locations.Clusters.List(parent("-")).Context(ctx).Do(); err != nil {
			t.Fatalf("clusters.list with a self-signed JWT: %v", err)
		}
		if n := ts.Counters().Get("token") - before; n != 0 {
			t.Fatalf("token endpoint called %d times, want 0 with a self-signed JWT", n)
		}
	})
}
