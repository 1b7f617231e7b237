package hosted

import (
	"fmt"
	"net/http"
	"sync"

	"golang.org/x/time/rate"
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
	// Base is the underlying transport; nil means http.DefaultTransport.
	Base http.RoundTripper

	mu      sync.Mutex
	buckets map[string]*limitedTransport
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
			base = http.DefaultTransport
		}
		lim := rate.NewLimiter(rate.Inf, 0)
		if l.QPS > 0 {
			lim = rate.NewLimiter(rate.Limit(l.QPS), max(l.Burst, 1))
		}
		t = &limitedTransport{base: base, lim: lim}
		l.buckets[key] = t
	}
	return t
}

type limitedTransport struct {
	base http.RoundTripper
	lim  *rate.Limiter
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.lim.Wait(req.Context()); err != nil {
		return nil, fmt.Errorf("rate limit: %w", err)
	}
	return t.base.RoundTrip(req)
}

// WithBase returns a transport that takes its tokens from t's bucket but sends requests through
// base: for providers that need their own TLS settings (a custom CA, as for the cloud
// simulators). A t that does not come from Limits has no bucket to keep: base is returned.
func WithBase(t Transport, base http.RoundTripper) Transport {
	if lt, ok := t.(*limitedTransport); ok {
		return &limitedTransport{base: base, lim: lt.lim}
	}
	return base
}
