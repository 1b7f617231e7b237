package aks

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/droverhq/drover/internal/hosted"
)

// aadFailure is the error azidentity returns when Microsoft Entra ID refuses a token request:
// the SDK's Error() dumps the request line and the whole body, whose description ends in a trace
// ID, a correlation ID and a timestamp that change on every call.
func aadFailure(status int, code string, num int, desc, trace string) error {
	body := fmt.Sprintf(`{"error":%q,"error_description":%q,"error_codes":[%d],"trace_id":%q}`,
		code, desc+"\r\nTrace ID: "+trace+"\r\nCorrelation ID: "+trace+"\r\nTimestamp: 2026-12-03 16:2"+trace[:1]+":00Z", num, trace)
	req := &http.Request{Method: http.MethodPost, URL: &url.URL{Scheme: "https", Host: "login.microsoftonline.com", Path: "/t/oauth2/v2.0/token"}}
	resp := &http.Response{StatusCode: status, Status: http.StatusText(status), Body: io.NopCloser(strings.NewReader(body)), Request: req}
	return fmt.Errorf("get token: %w", &azidentity.AuthenticationFailedError{RawResponse: resp})
}

// TestClassifyTokenFailure: a refused token request is ErrCredentials with a one-line message —
// the OAuth code, the AADSTS code and the first line of its description, and the Secret key to
// fix — identical whatever the trace ID, so a retry does not rewrite the status.
func TestClassifyTokenFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		code        string
		num         int
		desc        string
		credentials bool
		want        string
	}{
		{"wrong client secret", http.StatusUnauthorized, "invalid_client", 7000215, "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent is the client secret value.", true,
			"invalid_client: AADSTS7000215: Invalid client secret provided. Ensure the secret being sent is the client secret value. Check the Secret's key clientSecret."},
		{"expired client secret", http.StatusUnauthorized, "invalid_client", 7000222, "AADSTS7000222: The provided client secret keys for app 'x' are expired", true,
			"invalid_client: AADSTS7000222: The provided client secret keys for app 'x' are expired. Check the Secret's key clientSecret."},
		{"unknown application", http.StatusBadRequest, "unauthorized_client", 700016, "AADSTS700016: Application with identifier 'x' was not found in the directory 't'.", true,
			"unauthorized_client: AADSTS700016: Application with identifier 'x' was not found in the directory 't'. Check the Secret's key clientID."},
		{"unknown tenant", http.StatusBadRequest, "invalid_request", 90002, "AADSTS90002: Tenant 't' not found.", true,
			"invalid_request: AADSTS90002: Tenant 't' not found. Check the Secret's key tenantID."},
		{"other refusal", http.StatusBadRequest, "invalid_scope", 1002012, "AADSTS1002012: The provided value for scope x is not valid.", true,
			"invalid_scope: AADSTS1002012: The provided value for scope x is not valid."},
		{"outage", http.StatusServiceUnavailable, "server_error", 90033, "AADSTS90033: A transient error has occurred.", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var msgs []string
			for _, trace := range []string{"1a2b3c4d-0000", "5e6f7a8b-1111"} {
				err := classify("ManagedClusters.Get", aadFailure(tt.status, tt.code, tt.num, tt.desc, trace))
				if got := errors.Is(err, hosted.ErrCredentials); got != tt.credentials {
					t.Fatalf("ErrCredentials = %v, want %v: %v", got, tt.credentials, err)
				}
				msgs = append(msgs, hosted.StableMessage(err))
			}
			if !tt.credentials {
				return
			}
			if msgs[0] != tt.want {
				t.Errorf("message\n got %q\nwant %q", msgs[0], tt.want)
			}
			if msgs[1] != msgs[0] {
				t.Errorf("the message changes with the trace ID:\n%q\n%q", msgs[0], msgs[1])
			}
		})
	}
}
