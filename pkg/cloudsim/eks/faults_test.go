package eks_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"

	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// fastRetries is the SDK's standard retryer with more attempts and a 1 ms backoff, so a test
// with injected faults finishes quickly; the retry decisions are still the SDK's own.
func fastRetries(o *awseks.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 10
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		so.RateLimiter = ratelimit.None
	})
}

// TestLifecycleUnderFaults drives a whole lifecycle through 30% throttling and 10% server
// errors; the SDK's retryer must absorb them all, and the counters must show the retries.
func TestLifecycleUnderFaults(t *testing.T) {
	faults := simcore.NewFaults(simcore.FaultConfig{Throttle: 0.3, ServerError: 0.1, Seed: 7})
	e := newEnv(t, func(o *eksim.Options) { o.Faults = faults })
	client := eksim.NewClient(e.url, region, accessKey, secretKey, fastRetries)
	ctx := t.Context()
	name, ng := aws.String("flaky"), aws.String("pool")

	succeeded := 0
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		succeeded++
	}
	status := func() types.ClusterStatus {
		out, err := client.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: name})
		must("DescribeCluster", err)
		return out.Cluster.Status
	}

	_, err := client.CreateCluster(ctx, &awseks.CreateClusterInput{Name: name, Version: aws.String("1.32"), RoleArn: aws.String(roleARN),
		ResourcesVpcConfig: &types.VpcConfigRequest{SubnetIds: subnets}})
	must("CreateCluster", err)
	e.settle()
	if s := status(); s != types.ClusterStatusActive {
		t.Fatalf("status = %s, want ACTIVE", s)
	}
	_, err = client.UpdateClusterVersion(ctx, &awseks.UpdateClusterVersionInput{Name: name, Version: aws.String("1.33")})
	must("UpdateClusterVersion", err)
	if s := status(); s != types.ClusterStatusUpdating {
		t.Fatalf("status = %s, want UPDATING", s)
	}
	e.settle()
	_, err = client.CreateNodegroup(ctx, &awseks.CreateNodegroupInput{ClusterName: name, NodegroupName: ng, NodeRole: aws.String(nodeRole), Subnets: subnets})
	must("CreateNodegroup", err)
	e.settle()
	_, err = client.UpdateNodegroupConfig(ctx, &awseks.UpdateNodegroupConfigInput{ClusterName: name, NodegroupName: ng,
		ScalingConfig: &types.NodegroupScalingConfig{MaxSize: aws.Int32(4), DesiredSize: aws.Int32(3)}})
	must("UpdateNodegroupConfig", err)
	e.settle()
	out, err := client.DescribeNodegroup(ctx, &awseks.DescribeNodegroupInput{ClusterName: name, NodegroupName: ng})
	must("DescribeNodegroup", err)
	if d := aws.ToInt32(out.Nodegroup.ScalingConfig.DesiredSize); d != 3 {
		t.Fatalf("desired size = %d, want 3", d)
	}
	_, err = client.DeleteNodegroup(ctx, &awseks.DeleteNodegroupInput{ClusterName: name, NodegroupName: ng})
	must("DeleteNodegroup", err)
	e.settle()
	_, err = client.DeleteCluster(ctx, &awseks.DeleteClusterInput{Name: name})
	must("DeleteCluster", err)
	e.settle()
	_, err = client.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: name})
	wantAPIError(t, err, "ResourceNotFoundException")
	succeeded++

	total := e.srv.Counters().Total()
	if total <= int64(succeeded) {
		t.Errorf("simulator saw %d calls for %d SDK operations; want more (retries of injected faults)", total, succeeded)
	}
	t.Logf("%d SDK operations took %d calls: %v", succeeded, total, e.srv.Counters().Snapshot())
}

// TestFaultsSurfaceAsAWSErrors checks the wire shape of each injected fault when the SDK does
// not retry: the typed exception, the HTTP status, and that every attempt is counted.
func TestFaultsSurfaceAsAWSErrors(t *testing.T) {
	e := newEnv(t)
	noRetry := eksim.NewClient(e.url, region, accessKey, secretKey, func(o *awseks.Options) { o.RetryMaxAttempts = 1 })
	tests := []struct {
		name       string
		cfg        simcore.FaultConfig
		wantCode   string
		wantStatus int
	}{
		{name: "throttle", cfg: simcore.FaultConfig{Throttle: 1}, wantCode: "ThrottlingException", wantStatus: http.StatusTooManyRequests},
		{name: "server error", cfg: simcore.FaultConfig{ServerError: 1}, wantCode: "ServerException", wantStatus: http.StatusInternalServerError},
		{name: "dropped connection", cfg: simcore.FaultConfig{Drop: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.srv.Faults().Set(tt.cfg)
			e.srv.Counters().Reset()
			_, err := noRetry.ListClusters(t.Context(), &awseks.ListClustersInput{})
			if tt.wantCode == "" {
				if err == nil {
					t.Fatal("got no error from a dropped connection")
				}
			} else {
				wantAPIError(t, err, tt.wantCode)
				var re *awshttp.ResponseError
				if !errors.As(err, &re) || re.HTTPStatusCode() != tt.wantStatus {
					t.Errorf("error %v, want HTTP %d", err, tt.wantStatus)
				}
			}
			// net/http itself may resend an idempotent request once after a dropped reused
			// connection, so a drop can be counted twice.
			if got := e.srv.Counters().Get("ListClusters"); got < 1 || (got > 1 && tt.wantCode != "") {
				t.Errorf("counted %d calls, want 1", got)
			}
		})
	}
	e.srv.Faults().Set(simcore.FaultConfig{Latency: 20 * time.Millisecond})
	start := time.Now()
	if _, err := noRetry.ListClusters(t.Context(), &awseks.ListClustersInput{}); err != nil {
		t.Fatalf("ListClusters with latency: %v", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("call took %v, want at least the injected 20ms", d)
	}
}
