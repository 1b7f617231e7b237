package hosted

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/time/rate"

	"github.com/droverhq/drover/internal/metrics"
)

// Transport is the HTTP transport a session's SDK client uses: every request, retries included,
// first takes a token from the bucket of its account and location.
type Transport = http.RoundTripper

// Limits holds one token bucket per account/location key, so one busy account cannot starve
// another and no account exceeds its provider quota, however many clusters it has.
type Limits struct {
	// QPS and Burst size each bucket; QPS 0 disables limiting.
	QPS   float64
	Burst int
	// PerProvider overrides QPS and Burst for keys starting with "<provider>/" (quotas differ:
	// ARM reads refill 25/s into a bucket of 250, GKE allows about 10/s per project).
	PerProvider map[string]Rate
	// Base is the underlying transport; nil means SharedTransport().
	Base http.RoundTripper

	mu      sync.Mutex
	buckets map[string]*limitedTransport
}

// Rate is a token-bucket size and refill rate.
type Rate struct {
	QPS   float64
	Burst int
}

// Transport returns the rate-limited transport for key.
func (l *Limits) Transport(key string) Transport {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*limitedTransport{}
	}
	t, ok := l.buckets[key]
	if !ok {
		base := l.Base
		if base == nil {
			base = sharedTransport
		}
		r := Rate{QPS: l.QPS, Burst: l.Burst}
		if provider, _, ok := strings.Cut(key, "/"); ok {
			if pr, ok := l.PerProvider[provider]; ok {
				r = pr
			}
		}
		lim := rate.NewLimiter(rate.Inf, 0)
		if r.QPS > 0 {
			lim = rate.NewLimiter(rate.Limit(r.QPS), max(r.Burst, 1))
		}
		provider, _, _ := strings.Cut(key, "/")
		t = &limitedTransport{base: base, lim: lim, provider: provider}
		l.buckets[key] = t
	}
	return t
}

type limitedTransport struct {
	base http.RoundTripper
	lim  *rate.Limiter
	// provider labels the drover_cloud_api_requests_total samples of the requests sent.
	provider string
}

// RoundTrip waits for a token, sends req and counts it in drover_cloud_api_requests_total:
// every SDK request of every provider (retries included) goes through here.
func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.lim.Wait(req.Context()); err != nil {
		return nil, fmt.Errorf("rate limit: %w", err)
	}
	resp, err := t.base.RoundTrip(req)
	metrics.ObserveCloudRequest(t.provider, req, resp, err)
	return resp, err
}

// WithBase returns a transport that takes its tokens from t's bucket but sends requests through
// base: for providers that need their own TLS settings (a custom CA, as for the cloud
// simulators). A t that does not come from Limits has no bucket to keep: base is returned.
func WithBase(t Transport, base http.RoundTripper) Transport {
	if lt, ok := t.(*limitedTransport); ok {
		return &limitedTransport{base: base, lim: lt.lim, provider: lt.provider}
	}
	return base
}

// SharedTransport is the keep-alive transport provider sessions use by default.
func SharedTransport() http.RoundTripper { return sharedTransport }

// sharedTransport keeps connections to each provider endpoint open for every worker: the
// default of two idle connections per host makes concurrent workers re-dial (and re-handshake
// TLS) for most calls. A request whose response headers do not come within
// ResponseHeaderTimeout fails (the SDK may retry it; the pass deadline bounds the retries).
var sharedTransport = func() *http.Transport {
	t := NewProviderTransport()
	t.MaxIdleConns = 1000
	t.MaxIdleConnsPerHost = 100
	return t
}()

// NewProviderTransport is a new transport for provider calls (a provider's own, when it needs
// its own TLS settings): http.DefaultTransport's settings, and no wait for response headers
// longer than ResponseHeaderTimeout.
func NewProviderTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = ResponseHeaderTimeout
	return t
}
