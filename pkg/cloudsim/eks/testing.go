package eks

import (
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
)

// NewTestServer starts a Server on a loopback port for the duration of the test.
func NewTestServer(tb testing.TB, opts Options) (*Server, *httptest.Server) {
	tb.Helper()
	s := New(opts)
	ts := httptest.NewServer(s)
	tb.Cleanup(ts.Close)
	return s, ts
}

// NewClient returns an unmodified SDK eks client that talks to the simulator at endpoint,
// built the way drover builds its own: NewFromConfig with static credentials and BaseEndpoint.
func NewClient(endpoint, region, accessKey, secretKey string, optFns ...func(*awseks.Options)) *awseks.Client {
	cfg := aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	}
	opts := append([]func(*awseks.Options){func(o *awseks.Options) { o.BaseEndpoint = aws.String(endpoint) }}, optFns...)
	return awseks.NewFromConfig(cfg, opts...)
}
