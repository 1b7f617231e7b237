package hosted

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
)

// DefaultPassTimeout bounds one pass's provider work (Reconciler.PassTimeout): a provider, or a
// proxy in front of it, that accepts connections and never answers must not hold a worker.
const DefaultPassTimeout = 3 * time.Minute

// ResponseHeaderTimeout bounds the wait for the response headers of one provider request on the
// shared transport (and the providers' own transports): the SDKs retry a request that timed out,
// and the pass deadline bounds them all.
const ResponseHeaderTimeout = time.Minute

// RequestTimeout bounds one whole provider request, its response body included (an SDK's
// per-try timeout, or its HTTP client's Timeout).
const RequestTimeout = 2 * time.Minute

// ReasonProviderTimeout is the Synced reason of a pass the provider did not answer in time.
const ReasonProviderTimeout = v1.ReasonProviderTimeout

// Backoff of a failing cluster's passes (the controller's per-item rate limiter): the first
// retry after BackoffBase, doubling up to BackoffMax.
const (
	BackoffBase = time.Second
	BackoffMax  = 5 * time.Minute
)

// RateLimiter is the hosted controller's work-queue rate limiter: per cluster, an exponential
// backoff from BackoffBase to BackoffMax (controller-runtime's default starts at 5ms, which
// sends a failing cluster's calls in bursts, and ends at 1000s, which delays recovery after a
// long outage by up to 16 minutes), combined with the default overall bucket (10/s, burst 100).
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](BackoffBase, BackoffMax),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// maxRetryAfter caps a provider's Retry-After: a wrong header must not park a cluster for days.
const maxRetryAfter = time.Hour

// ThrottleError is a throttled call (errors.Is ErrThrottled) with the wait the provider asked
// for (its Retry-After; 0 when it gave none).
type ThrottleError struct {
	RetryAfter time.Duration
	Err        error
}

func (e *ThrottleError) Error() string        { return e.Err.Error() }
func (e *ThrottleError) Unwrap() error        { return e.Err }
func (e *ThrottleError) Is(target error) bool { return target == ErrThrottled }

// Throttled marks err as throttling with the provider's Retry-After (0: none given).
func Throttled(err error, retryAfter time.Duration) error {
	return &ThrottleError{RetryAfter: retryAfter, Err: err}
}

// RetryAfterOf is the Retry-After a throttled error carries (0 if none).
func RetryAfterOf(err error) time.Duration {
	var te *ThrottleError
	if errors.As(err, &te) {
		return min(te.RetryAfter, maxRetryAfter)
	}
	return 0
}

// ParseRetryAfter reads the wait a response asks for: retry-after-ms or x-ms-retry-after-ms
// (milliseconds, as Azure sends), else Retry-After (seconds or an HTTP date). 0 when none.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	for _, k := range []string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		if v := strings.TrimSpace(h.Get(k)); v != "" {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
				return time.Duration(ms) * time.Millisecond
			}
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// roughDuration shows a wait so that waits a few seconds apart read the same (the Throttled
// message must not change from one throttled pass to the next): whole seconds under a minute,
// whole minutes above.
func roughDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", max(int((d+time.Second-1)/time.Second), 1))
	}
	return fmt.Sprintf("%dm", int((d+30*time.Second)/time.Minute))
}

// IsTimeout reports an error of a call that got no answer in time: a deadline, or a network
// timeout (no response headers within ResponseHeaderTimeout, a TLS handshake that never ends).
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// Some SDKs (MSAL under azidentity) keep only the text of the error they wrap; the rate
	// limiter refuses a wait for a token that would end after the pass's deadline.
	msg := err.Error()
	for _, s := range []string{"context deadline exceeded", "timeout awaiting response headers", "Client.Timeout exceeded", "would exceed context deadline"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// seconds shows a timeout as whole seconds ("180s").
func seconds(d time.Duration) string {
	return fmt.Sprintf("%ds", max(int((d+time.Second-1)/time.Second), 1))
}

// TimeoutMessage is the Synced message of a pass whose provider did not answer within limit
// (0: a call's own timeout) during op: stable, so passes that time out alike write nothing.
func TimeoutMessage(op string, limit time.Duration) string {
	within := "in time"
	if limit > 0 {
		within = "within " + seconds(limit)
	}
	return fmt.Sprintf("The provider did not answer %s (%s): drover gave up on this pass and retries with backoff. Check the provider's status and the network (proxy, firewall) between drover and the provider.", within, op)
}
