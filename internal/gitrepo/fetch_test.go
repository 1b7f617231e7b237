package gitrepo

import (
	"strings"
	"testing"
)

// TestEndpointRefusesPassword: a GitRepo stored before the CRD refused passwords, http(s) users
// (a token works as one) and queries in spec.repo is not fetched with them, and the condition's
// message does not repeat the URL.
func TestEndpointRefusesPassword(t *testing.T) {
	for _, tc := range []struct {
		repo string
		ok   bool
	}{
		{"https://deploy:s3cr3t@git.example.com/org/apps.git", false},
		{"ssh://git:s3cr3t@git.example.com/org/apps.git", false},
		{"https://ghp_s3cr3t@git.example.com/org/apps.git", false},
		{"git://s3cr3t@git.example.com/org/apps.git", false},
		{"https://git.example.com/org/apps.git?private_token=s3cr3t", false},
		{"https://git.example.com/org/apps.git#s3cr3t", false},
		{"https://git.example.com:8443/org/apps@v2.git", true},
		{"ssh://git@git.example.com/org/apps.git", true},
		{"git@github.com:org/apps.git", true},
	} {
		t.Run(tc.repo, func(t *testing.T) {
			_, err := endpoint(tc.repo)
			if tc.ok != (err == nil) {
				t.Fatalf("endpoint: %v, want ok %t", err, tc.ok)
			}
			if err != nil && (strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "spec.clientSecretName")) {
				t.Errorf("error %q: want it to name spec.clientSecretName and not carry the password", err)
			}
		})
	}
}
