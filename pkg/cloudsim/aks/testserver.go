package aks

import "testing"

// NewTestServer starts a simulator on a loopback port for the duration of a test.
func NewTestServer(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := New(opts)
	if err != nil {
		tb.Fatalf("aks simulator: %v", err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		tb.Fatalf("aks simulator: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
