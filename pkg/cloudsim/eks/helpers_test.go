package eks_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/smithy-go"

	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

const (
	region    = "us-west-2"
	accessKey = "AKIATESTDROVER000001"
	secretKey = "test-secret-key"
	roleARN   = "arn:aws:iam::123456789012:role/eks-cluster"
	nodeRole  = "arn:aws:iam::123456789012:role/eks-node"
	// delay is long on purpose: tests run on a manual clock and advance it explicitly.
	delay = time.Minute
)

var subnets = []string{"subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"}

type env struct {
	srv    *eksim.Server
	url    string
	clock  *simcore.ManualClock
	client *awseks.Client
}

// newEnv starts a simulator on a manual clock and returns an SDK client for it.
func newEnv(t testing.TB, optFns ...func(*eksim.Options)) *env {
	t.Helper()
	clock := simcore.NewManualClock(time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC))
	opts := eksim.Options{
		Credentials: map[string]string{accessKey: secretKey},
		Delay:       delay,
		Clock:       clock,
	}
	for _, fn := range optFns {
		fn(&opts)
	}
	srv, ts := eksim.NewTestServer(t, opts)
	return &env{srv: srv, url: ts.URL, clock: clock, client: eksim.NewClient(ts.URL, region, accessKey, secretKey)}
}

func (e *env) createCluster(t *testing.T, name, version string) *types.Cluster {
	t.Helper()
	out, err := e.client.CreateCluster(t.Context(), &awseks.CreateClusterInput{
		Name:               aws.String(name),
		Version:            aws.String(version),
		RoleArn:            aws.String(roleARN),
		ResourcesVpcConfig: &types.VpcConfigRequest{SubnetIds: subnets},
	})
	if err != nil {
		t.Fatalf("CreateCluster(%s): %v", name, err)
	}
	return out.Cluster
}

// settle moves the clock past the simulator's delay, so every running transition ends.
func (e *env) settle() { e.clock.Advance(delay + time.Second) }

func (e *env) describe(t *testing.T, name string) *types.Cluster {
	t.Helper()
	out, err := e.client.DescribeCluster(t.Context(), &awseks.DescribeClusterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeCluster(%s): %v", name, err)
	}
	return out.Cluster
}

func (e *env) describeNodegroup(t *testing.T, cluster, ng string) *types.Nodegroup {
	t.Helper()
	out, err := e.client.DescribeNodegroup(t.Context(), &awseks.DescribeNodegroupInput{ClusterName: aws.String(cluster), NodegroupName: aws.String(ng)})
	if err != nil {
		t.Fatalf("DescribeNodegroup(%s/%s): %v", cluster, ng, err)
	}
	return out.Nodegroup
}

// waitActive waits with the SDK's own waiter; the first attempt is immediate, so on a manual
// clock that has been advanced it returns at once.
func (e *env) waitActive(t *testing.T, name string) *types.Cluster {
	t.Helper()
	out, err := awseks.NewClusterActiveWaiter(e.client, func(o *awseks.ClusterActiveWaiterOptions) {
		o.MinDelay, o.MaxDelay = 5*time.Millisecond, 50*time.Millisecond
	}).WaitForOutput(t.Context(), &awseks.DescribeClusterInput{Name: aws.String(name)}, 5*time.Second)
	if err != nil {
		t.Fatalf("waiting for cluster %s to be ACTIVE: %v", name, err)
	}
	return out.Cluster
}

// wantAPIError checks that err is the SDK's typed error for code (errors.As), or at least a
// smithy.APIError with that code for codes the EKS model does not type.
func wantAPIError(t *testing.T, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	var typed bool
	switch code {
	case "InvalidParameterException":
		var e *types.InvalidParameterException
		typed = errors.As(err, &e)
	case "ResourceInUseException":
		var e *types.ResourceInUseException
		typed = errors.As(err, &e)
	case "ResourceNotFoundException":
		var e *types.ResourceNotFoundException
		typed = errors.As(err, &e)
	case "InvalidRequestException":
		var e *types.InvalidRequestException
		typed = errors.As(err, &e)
	case "NotFoundException":
		var e *types.NotFoundException
		typed = errors.As(err, &e)
	case "BadRequestException":
		var e *types.BadRequestException
		typed = errors.As(err, &e)
	case "ThrottlingException":
		var e *types.ThrottlingException
		typed = errors.As(err, &e)
	case "ServerException":
		var e *types.ServerException
		typed = errors.As(err, &e)
	default:
		var ae smithy.APIError
		typed = errors.As(err, &ae) && ae.ErrorCode() == code
	}
	if !typed {
		t.Fatalf("got error %v (%T), want %s", err, err, code)
	}
}

// signedRequest builds a raw SigV4-signed request, for calls the SDK would refuse to send
// (it validates required members client-side) and for the benchmarks.
func signedRequest(tb testing.TB, method, url string, body []byte, ak, sk, reg string) *http.Request {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("building request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}
	if err := v4.NewSigner().SignHTTP(tb.Context(), creds, req, hex.EncodeToString(sum[:]), "eks", reg, time.Now()); err != nil {
		tb.Fatalf("signing request: %v", err)
	}
	return req
}
