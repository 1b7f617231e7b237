package join

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/access"
)

// hangingProvider is a provider whose Access and MissingAccess calls get no answer: they return
// only when their context ends.
type hangingProvider struct{ hosted.Provider }

func (hangingProvider) Name() string                                    { return "eks" }
func (hangingProvider) CredentialSecret(*v1.Cluster) string             { return "cred" }
func (hangingProvider) RateLimitKey(*v1.Cluster, *corev1.Secret) string { return "eks/key/us-west-2" }

func (hangingProvider) Access(ctx context.Context, _ *v1.Cluster, _ *corev1.Secret, _ hosted.Transport) (*access.Credentials, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hangingProvider) MissingAccess(ctx context.Context, _ *v1.Cluster, _ *corev1.Secret, _ hosted.Transport) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// TestProviderCallsHaveADeadline: a provider that never answers holds a join's worker no longer
// than ProviderTimeout, and the Joined condition says so in a stable message.
func TestProviderCallsHaveADeadline(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cred"}}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret).Build()
	r := &Reconciler{Client: cl, ProviderTimeout: 200 * time.Millisecond}
	r.defaults()
	c := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop"}}
	ps := &pass{r: r, p: hangingProvider{}, c: c, fleet: &v1.FleetStatus{}}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, done, err := ps.writeCredentials(ctx, time.Now())
	if took := time.Since(start); took > 10*time.Second || done || err == nil {
		t.Fatalf("writeCredentials returned after %s: done %v, err %v; want an error soon after ProviderTimeout", took, done, err)
	}
	j := meta.FindStatusCondition(ps.fleet.Conditions, v1.ConditionJoined)
	if j == nil || j.Reason != v1.ReasonCredentialsUnavailable || !strings.Contains(j.Message, "did not answer within 1s") {
		t.Fatalf("Joined %+v; want CredentialsUnavailable saying the provider did not answer within 1s", j)
	}

	// The token was refused: asking the provider which access entry is missing gives up too.
	start = time.Now()
	if _, done, _ := ps.probeFailed(ctx, secret, apierrors.NewUnauthorized("token refused")); done || time.Since(start) > 10*time.Second {
		t.Fatalf("probeFailed returned after %s (done %v); want soon after ProviderTimeout", time.Since(start), done)
	}
	if j := meta.FindStatusCondition(ps.fleet.Conditions, v1.ConditionJoined); j == nil || j.Reason != v1.ReasonCredentialsRejected {
		t.Fatalf("Joined %+v; want CredentialsRejected", j)
	}
}

// throttledProvider is a provider that answers every Access call with a throttle and a
// Retry-After.
type throttledProvider struct {
	hangingProvider
	retryAfter time.Duration
}

func (p throttledProvider) Access(context.Context, *v1.Cluster, *corev1.Secret, hosted.Transport) (*access.Credentials, error) {
	return nil, hosted.Throttled(errors.New("TooManyRequestsException: Rate exceeded"), p.retryAfter)
}

// TestThrottledJoinWaitsForRetryAfter: a provider throttling the join's credential calls with a
// Retry-After is not called again before it (no error, whose backoff would retry within
// seconds), and the Joined condition says how long drover waits.
func TestThrottledJoinWaitsForRetryAfter(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cred"}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret).Build()}
	r.defaults()
	ps := &pass{r: r, p: throttledProvider{retryAfter: 2 * time.Minute}, c: &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop"}}, fleet: &v1.FleetStatus{}}
	res, done, err := ps.writeCredentials(t.Context(), time.Now())
	if err != nil || done || res.RequeueAfter < 2*time.Minute {
		t.Fatalf("writeCredentials: %+v, done %v, err %v; want no error and the next pass after the 2m Retry-After", res, done, err)
	}
	if j := meta.FindStatusCondition(ps.fleet.Conditions, v1.ConditionJoined); j == nil || j.Reason != v1.ReasonCredentialsUnavailable ||
		!strings.Contains(j.Message, "Retry-After of 2m0s") {
		t.Fatalf("Joined %+v; want CredentialsUnavailable naming the provider's Retry-After", j)
	}
}
