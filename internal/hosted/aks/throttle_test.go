package aks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/droverhq/drover/internal/hosted"
)

// TestClassifyThrottledCarriesRetryAfter: a 429 from ARM or from the sign-in endpoint is
// ErrThrottled with the wait the response asks for (azcore gives up on a Retry-After above its
// 60s cap and returns the 429), for the engine to requeue no sooner.
func TestClassifyThrottledCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "https", Host: "management.azure.com", Path: "/x"}}
	arm := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"120"}}, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"error":{"code":"SubscriptionRequestsThrottled","message":"Number of 'read' requests exceeded."}}`))}
	token := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"120"}}, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"error":"temporarily_unavailable","error_description":"AADSTS50196: loop.\r\nTrace ID: 1"}`))}
	for name, err := range map[string]error{
		"ARM":     &azcore.ResponseError{StatusCode: http.StatusTooManyRequests, ErrorCode: "SubscriptionRequestsThrottled", RawResponse: arm},
		"sign-in": &azidentity.AuthenticationFailedError{RawResponse: token},
	} {
		got := classify("ManagedClusters.Get", err)
		if !errors.Is(got, hosted.ErrThrottled) || errors.Is(got, hosted.ErrCredentials) {
			t.Errorf("%s: %v; want ErrThrottled only", name, got)
		}
		if d := hosted.RetryAfterOf(got); d != 2*time.Minute {
			t.Errorf("%s: Retry-After %s, want 2m", name, d)
		}
		if msg := hosted.StableMessage(got); strings.ContainsAny(msg, "\r\n") {
			t.Errorf("%s: message spans lines: %q", name, msg)
		}
	}
}

// TestClassifySignInTimeout: a sign-in (token) request that gets no answer in time is neither a
// credentials problem nor a multi-line SDK dump ("unable to resolve an endpoint: server response
// error:\n context deadline exceeded"): a timeout, described in one stable line.
func TestClassifySignInTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); ts.Close() })
	cfg := cloud.AzurePublic
	cfg.ActiveDirectoryAuthorityHost = ts.URL + "/"
	var msgs []string
	for range 2 {
		cred, err := azidentity.NewClientSecretCredential("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "s3cret", &azidentity.ClientSecretCredentialOptions{
			ClientOptions:            policy.ClientOptions{Cloud: cfg, Transport: ts.Client(), Retry: policy.RetryOptions{MaxRetries: -1}},
			DisableInstanceDiscovery: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err = cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{"https://management.azure.com/.default"}})
		cancel()
		if err == nil {
			t.Fatal("got a token from a server that never answers")
		}
		got := classify("ManagedClusters.Get", err)
		if errors.Is(got, hosted.ErrCredentials) || !hosted.IsTimeout(got) {
			t.Fatalf("%v: want a timeout, not refused credentials", got)
		}
		msg := hosted.StableMessage(got)
		if strings.ContainsAny(msg, "\r\n") || !strings.Contains(msg, "did not answer in time") {
			t.Fatalf("message %q; want one line saying the sign-in endpoint did not answer in time", msg)
		}
		msgs = append(msgs, msg)
	}
	if msgs[0] != msgs[1] {
		t.Errorf("the message changes between attempts: %q, %q", msgs[0], msgs[1])
	}
}
