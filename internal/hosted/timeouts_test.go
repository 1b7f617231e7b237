package hosted

import (
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestControllerBackoff: the hosted controller is set up with a per-cluster backoff from 1s to
// 5m (controller-runtime's default starts at 5ms and ends at 1000s): the first retry of a failing
// cluster waits a second, the backoff doubles, stops at five minutes, and one cluster's failures
// do not delay another's.
func TestControllerBackoff(t *testing.T) {
	t.Parallel()
	opts := (&Reconciler{Workers: 3}).controllerOptions()
	if opts.MaxConcurrentReconciles != 3 || opts.RateLimiter == nil {
		t.Fatalf("controller options %+v; want the workers and a rate limiter", opts)
	}
	rl := opts.RateLimiter
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	b := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i, w := range want {
		if got := rl.When(a); got != w {
			t.Fatalf("failure %d: retry after %s, want %s", i+1, got, w)
		}
	}
	if got := rl.When(b); got != time.Second {
		t.Fatalf("another cluster's first retry after %s, want 1s", got)
	}
	for range 20 {
		rl.When(a)
	}
	if got := rl.When(a); got != 5*time.Minute {
		t.Fatalf("backoff capped at %s, want 5m", got)
	}
	rl.Forget(a)
	if got := rl.When(a); got != time.Second {
		t.Fatalf("after a success, retry after %s, want 1s", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"120"}}, 2 * time.Minute},
		{"milliseconds first", http.Header{"Retry-After": {"1"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"x-ms", http.Header{"X-Ms-Retry-After-Ms": {"1500"}}, 1500 * time.Millisecond},
		{"date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	} {
		if got := ParseRetryAfter(tt.h, now); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	if got := RetryAfterOf(Throttled(ErrThrottled, 48*time.Hour)); got != maxRetryAfter {
		t.Errorf("a Retry-After of two days is honoured as %s, want the cap %s", got, maxRetryAfter)
	}
}

// TestWaitMessagesAreStable: Retry-Afters a few seconds apart read the same, so passes throttled
// alike write the same condition.
func TestWaitMessagesAreStable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{1500 * time.Millisecond, "2s"}, {30 * time.Second, "30s"}, {118 * time.Second, "2m"}, {2 * time.Minute, "2m"}, {121 * time.Second, "2m"}, {10 * time.Minute, "10m"},
	} {
		if got := roughDuration(tt.d); got != tt.want {
			t.Errorf("roughDuration(%s) = %s, want %s", tt.d, got, tt.want)
		}
	}
	if got, want := TimeoutMessage("Observe", 3*time.Minute), "The provider did not answer within 180s (Observe)"; got[:len(want)] != want {
		t.Errorf("TimeoutMessage: %q", got)
	}
}

// TestProviderTransportsGiveUp: the shared transport (and a provider's own, from
// NewProviderTransport) does not wait for response headers for ever.
func TestProviderTransportsGiveUp(t *testing.T) {
	t.Parallel()
	for name, rt := range map[string]http.RoundTripper{"shared": SharedTransport(), "provider": NewProviderTransport()} {
		if tr, ok := rt.(*http.Transport); !ok || tr.ResponseHeaderTimeout != ResponseHeaderTimeout {
			t.Errorf("%s transport: %T without ResponseHeaderTimeout %s", name, rt, ResponseHeaderTimeout)
		}
	}
}
