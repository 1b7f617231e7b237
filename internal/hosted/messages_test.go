package hosted

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSentence: a message goes on after exactly one period, whether or not the provider's ended
// in one (no "details.. drover tries again").
func TestSentence(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"with period", "See the service documentation for details.", "See the service documentation for details."},
		{"without period", "Invalid JWT Signature", "Invalid JWT Signature."},
		{"ellipsis and space", "Timed out... ", "Timed out."},
		{"empty", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Sentence(tt.in); got != tt.want {
				t.Errorf("Sentence(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestCredentialsState: drover_hosted_credentials' state and reason from CredentialsValid.
func TestCredentialsState(t *testing.T) {
	t.Parallel()
	cond := func(s metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: CondReady, Status: metav1.ConditionFalse, Reason: "CredentialsInvalid"}, {Type: CondCredentials, Status: s, Reason: reason}}
	}
	for _, tt := range []struct {
		name          string
		conds         []metav1.Condition
		state, reason string
	}{
		{"not used yet", nil, CredentialsUnknown, ""},
		{"accepted", cond(metav1.ConditionTrue, "Accepted"), CredentialsValid, "Accepted"},
		{"rejected", cond(metav1.ConditionFalse, "Rejected"), CredentialsRejected, "Rejected"},
		{"secret missing", cond(metav1.ConditionFalse, "SecretNotFound"), CredentialsUnusable, "SecretNotFound"},
		{"secret incomplete", cond(metav1.ConditionFalse, "SecretIncomplete"), CredentialsUnusable, "SecretIncomplete"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if state, reason := CredentialsState(tt.conds); state != tt.state || reason != tt.reason {
				t.Errorf("CredentialsState = %s, %s; want %s, %s", state, reason, tt.state, tt.reason)
			}
		})
	}
}

// TestTokenRefusal: a refused token request is one stable line: the OAuth code and the first
// line of the description, falling back to the HTTP status.
func TestTokenRefusal(t *testing.T) {
	for _, tc := range []struct {
		name, code, desc  string
		status            int
		wantCode, wantMsg string
	}{
		{"oauth body", "invalid_client", "AADSTS7000215: Invalid client secret provided.\r\nTrace ID: 1\r\nTimestamp: x", 401, "invalid_client", "AADSTS7000215: Invalid client secret provided."},
		{"no body", "", "", 400, "token 400", "Bad Request"},
		{"no response", "", "", 0, "token", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := TokenRefusal(tc.code, tc.desc, tc.status)
			if code != tc.wantCode || msg != tc.wantMsg {
				t.Errorf("TokenRefusal = %q, %q; want %q, %q", code, msg, tc.wantCode, tc.wantMsg)
			}
		})
	}
}
