package hosted

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestLimitsPerProviderAndKey(t *testing.T) {
	l := &Limits{QPS: 10, Burst: 50, PerProvider: map[string]Rate{"aks": {QPS: 25, Burst: 250}, "gke": {}}}
	tests := []struct {
		key   string
		limit rate.Limit
		burst int
	}{
		{"eks/AKIA1/us-west-2", 10, 50},
		{"aks/sub-1", 25, 250},
		{"gke/project", rate.Inf, 0}, // QPS 0: unlimited
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			lt := l.Transport(tt.key).(*limitedTransport)
			if lt.lim.Limit() != tt.limit || lt.lim.Burst() != tt.burst {
				t.Fatalf("bucket %v/%d, want %v/%d", lt.lim.Limit(), lt.lim.Burst(), tt.limit, tt.burst)
			}
		})
	}
	if l.Transport("aks/sub-1") != l.Transport("aks/sub-1") || l.Transport("aks/sub-1") == l.Transport("aks/sub-2") {
		t.Fatal("want one bucket per key, shared by every cluster of that key")
	}
}

type countingTransport struct{ calls atomic.Int32 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// Requests past the burst wait for a token: with a bucket refilling once an hour, the request
// after the burst cannot get one before its context's deadline and never reaches the network,
// whichever transport (Transport or WithBase) of the key it goes through.
func TestTransportWaitsForAToken(t *testing.T) {
	t.Parallel()
	base := &countingTransport{}
	l := &Limits{QPS: 1.0 / 3600, Burst: 2, Base: base}
	send := func(rt http.RoundTripper) error {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://provider.invalid/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	other := &countingTransport{}
	for i, rt := range []http.RoundTripper{l.Transport("eks/a"), WithBase(l.Transport("eks/a"), other)} {
		if err := send(rt); err != nil {
			t.Fatalf("request %d within the burst: %v", i, err)
		}
	}
	for _, rt := range []http.RoundTripper{l.Transport("eks/a"), WithBase(l.Transport("eks/a"), other)} {
		if err := send(rt); err == nil || !strings.Contains(err.Error(), "rate limit") {
			t.Errorf("request past the burst: err %v, want a rate limit error", err)
		}
	}
	if got := base.calls.Load() + other.calls.Load(); got != 2 {
		t.Fatalf("%d requests reached the network, want the 2 of the burst", got)
	}
	// Another key has its own bucket.
	if err := send(l.Transport("eks/b")); err != nil {
		t.Fatalf("first request of another key: %v", err)
	}
}
