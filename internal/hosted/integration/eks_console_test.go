package integration

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// consoleClient is "someone in the AWS console": another client of the same EKS API.
type consoleClient struct{ api *awseks.Client }

func (c *consoleClient) setPrivateAccess(t *testing.T, name string, on bool) {
	t.Helper()
	_, err := c.api.UpdateClusterConfig(context.Background(), &awseks.UpdateClusterConfigInput{Name: aws.String(name),
		ResourcesVpcConfig: &types.VpcConfigRequest{EndpointPrivateAccess: aws.Bool(on), EndpointPublicAccess: aws.Bool(true)}})
	if err != nil {
		t.Fatalf("console: %v", err)
	}
}

func (c *consoleClient) setLogging(t *testing.T, name string, enabled ...types.LogType) {
	t.Helper()
	_, err := c.api.UpdateClusterConfig(context.Background(), &awseks.UpdateClusterConfigInput{Name: aws.String(name),
		Logging: &types.Logging{ClusterLogging: []types.LogSetup{{Enabled: aws.Bool(true), Types: enabled}}}})
	if err != nil {
		t.Fatalf("console: %v", err)
	}
}

func (c *consoleClient) tag(t *testing.T, arn string, tags map[string]string) {
	t.Helper()
	if _, err := c.api.TagResource(context.Background(), &awseks.TagResourceInput{ResourceArn: aws.String(arn), Tags: tags}); err != nil {
		t.Fatalf("console: %v", err)
	}
}

func (c *consoleClient) scale(t *testing.T, cluster, ng string, desired int32) {
	t.Helper()
	_, err := c.api.UpdateNodegroupConfig(context.Background(), &awseks.UpdateNodegroupConfigInput{ClusterName: aws.String(cluster), NodegroupName: aws.String(ng),
		ScalingConfig: &types.NodegroupScalingConfig{DesiredSize: aws.Int32(desired)}})
	if err != nil {
		t.Fatalf("console: %v", err)
	}
}

func (c *consoleClient) createCluster(t *testing.T, name, version string) {
	t.Helper()
	_, err := c.api.CreateCluster(context.Background(), &awseks.CreateClusterInput{Name: aws.String(name), Version: aws.String(version),
		RoleArn: aws.String("arn:aws:iam::123456789012:role/eks"), ResourcesVpcConfig: &types.VpcConfigRequest{SubnetIds: []string{"subnet-x", "subnet-y"}},
		Tags: map[string]string{"owner": "terraform"}})
	if err != nil {
		t.Fatalf("console: %v", err)
	}
}
