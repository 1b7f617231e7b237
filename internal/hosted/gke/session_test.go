package gke

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/auth"

	"github.com/droverhq/drover/internal/hosted"
)

// TestClassifyTokenFailure: a refused token exchange is ErrCredentials with a one-line message
// (the OAuth code and description, and the Secret key to fix), not the SDK's text with the
// response body on a second line.
func TestClassifyTokenFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		body        string
		credentials bool
		want        string
	}{
		{"bad signature", http.StatusBadRequest, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`, true,
			"invalid_grant: Invalid JWT Signature. Check the Secret's key serviceAccountJSON (a deleted or disabled key, or another service account's)."},
		{"multi-line description", http.StatusBadRequest, `{"error":"invalid_grant","error_description":"Invalid grant: account not found\nsee https://example"}`, true,
			"invalid_grant: Invalid grant: account not found. Check the Secret's key serviceAccountJSON (a deleted or disabled key, or another service account's)."},
		{"no JSON body", http.StatusUnauthorized, `nope`, true,
			"token 401: Unauthorized. Check the Secret's key serviceAccountJSON (a deleted or disabled key, or another service account's)."},
		{"outage", http.StatusServiceUnavailable, `{"error":"internal_failure"}`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ae := &auth.Error{Response: &http.Response{StatusCode: tt.status, Status: http.StatusText(tt.status)}, Body: []byte(tt.body)}
			err := classify("clusters.get", fmt.Errorf("retrieve token: %w", ae))
			if got := errors.Is(err, hosted.ErrCredentials); got != tt.credentials {
				t.Fatalf("ErrCredentials = %v, want %v: %v", got, tt.credentials, err)
			}
			if !tt.credentials {
				return
			}
			got := hosted.StableMessage(err)
			if got != tt.want {
				t.Errorf("message\n got %q\nwant %q", got, tt.want)
			}
			if strings.ContainsAny(got, "\r\n") {
				t.Errorf("multi-line message %q", got)
			}
		})
	}
}
