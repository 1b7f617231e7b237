package gke

import (
	"net/http/httptest"
	"testing"

	"google.golang.org/api/option"
)

// TestServer is a Server listening on a loopback port for the duration of a test.
type TestServer struct {
	*Server
	// URL is the base URL, e.g. http://127.0.0.1:41234.
	URL string
}

// NewTestServer starts a simulator on a loopback port and stops it when the test ends.
func NewTestServer(tb testing.TB, opts Options) *TestServer {
	tb.Helper()
	s := New(opts)
	hs := httptest.NewServer(s)
	tb.Cleanup(hs.Close)
	s.SetBaseURL(hs.URL)
	return &TestServer{Server: s, URL: hs.URL}
}

// ClientOptions returns the options that point container.NewService at the simulator and
// authenticate with keyJSON (from NewServiceAccountKey).
func (s *Server) ClientOptions(keyJSON []byte) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(s.BaseURL() + "/"),
		option.WithAuthCredentialsJSON(option.ServiceAccount, keyJSON),
	}
}
