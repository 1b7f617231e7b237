package eks_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
)

func TestValidation(t *testing.T) {
	e := newEnv(t)
	const base, ng = "base", "ng"
	e.createCluster(t, base, "1.31")
	e.settle()
	if _, err := e.client.CreateNodegroup(t.Context(), &awseks.CreateNodegroupInput{
		ClusterName: aws.String(base), NodegroupName: aws.String(ng), NodeRole: aws.String(nodeRole), Subnets: subnets,
	}); err != nil {
		t.Fatalf("CreateNodegroup: %v", err)
	}
	e.settle()
	c := e.client
	vpc := &types.VpcConfigRequest{SubnetIds: subnets}
	createCluster := func(mod func(*awseks.CreateClusterInput)) func(context.Context) error {
		return func(ctx context.Context) error {
			in := &awseks.CreateClusterInput{Name: aws.String("new"), RoleArn: aws.String(roleARN), ResourcesVpcConfig: vpc}
			mod(in)
			_, err := c.CreateCluster(ctx, in)
			return err
		}
	}
	updateConfig := func(in *awseks.UpdateClusterConfigInput) func(context.Context) error {
		return func(ctx context.Context) error {
			in.Name = aws.String(base)
			_, err := c.UpdateClusterConfig(ctx, in)
			return err
		}
	}
	createNG := func(mod func(*awseks.CreateNodegroupInput)) func(context.Context) error {
		return func(ctx context.Context) error {
			in := &awseks.CreateNodegroupInput{ClusterName: aws.String(base), NodegroupName: aws.String("ng2"), NodeRole: aws.String(nodeRole), Subnets: subnets}
			mod(in)
			_, err := c.CreateNodegroup(ctx, in)
			return err
		}
	}
	scaling := func(minSize, maxSize, desired int32) *types.NodegroupScalingConfig {
		return &types.NodegroupScalingConfig{MinSize: aws.Int32(minSize), MaxSize: aws.Int32(maxSize), DesiredSize: aws.Int32(desired)}
	}
	// raw sends a request the SDK would refuse to send because it validates required members.
	raw := func(method, path, body string) func(context.Context) error {
		return func(context.Context) error {
			resp, err := http.DefaultClient.Do(signedRequest(t, method, e.url+path, []byte(body), accessKey, secretKey, region))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			return &rawError{status: resp.StatusCode, code: resp.Header.Get("X-Amzn-Errortype")}
		}
	}

	tests := []struct {
		name     string
		call     func(context.Context) error
		wantCode string
	}{
		// Cluster creation.
		{"unknown version", createCluster(func(in *awseks.CreateClusterInput) { in.Version = aws.String("1.99") }), "InvalidParameterException"},
		{"duplicate cluster name", createCluster(func(in *awseks.CreateClusterInput) { in.Name = aws.String(base) }), "ResourceInUseException"},
		{"no subnets", createCluster(func(in *awseks.CreateClusterInput) { in.ResourcesVpcConfig = &types.VpcConfigRequest{} }), "InvalidParameterException"},
		{"bad subnet id", createCluster(func(in *awseks.CreateClusterInput) {
			in.ResourcesVpcConfig = &types.VpcConfigRequest{SubnetIds: []string{"vpc-123"}}
		}), "InvalidParameterException"},
		{"neither endpoint", createCluster(func(in *awseks.CreateClusterInput) {
			in.ResourcesVpcConfig = &types.VpcConfigRequest{SubnetIds: subnets, EndpointPublicAccess: aws.Bool(false), EndpointPrivateAccess: aws.Bool(false)}
		}), "InvalidParameterException"},
		{"private public CIDR", createCluster(func(in *awseks.CreateClusterInput) {
			in.ResourcesVpcConfig = &types.VpcConfigRequest{SubnetIds: subnets, PublicAccessCidrs: []string{"10.0.0.0/8"}}
		}), "InvalidParameterException"},
		{"bad role ARN", createCluster(func(in *awseks.CreateClusterInput) { in.RoleArn = aws.String("eks-role") }), "InvalidParameterException"},
		{"bad cluster name", createCluster(func(in *awseks.CreateClusterInput) { in.Name = aws.String("-bad") }), "InvalidParameterException"},
		{"reserved tag prefix", createCluster(func(in *awseks.CreateClusterInput) { in.Tags = map[string]string{"aws:x": "y"} }), "InvalidParameterException"},
		{"missing name", raw(http.MethodPost, "/clusters", `{"roleArn":"`+roleARN+`","resourcesVpcConfig":{"subnetIds":["subnet-1"]}}`), "InvalidParameterException"},
		{"missing role", raw(http.MethodPost, "/clusters", `{"name":"x","resourcesVpcConfig":{"subnetIds":["subnet-1"]}}`), "InvalidParameterException"},
		{"missing vpc config", raw(http.MethodPost, "/clusters", `{"name":"x","roleArn":"`+roleARN+`"}`), "InvalidParameterException"},
		{"malformed JSON", raw(http.MethodPost, "/clusters", `{"name":`), "SerializationException"},

		// Cluster version.
		{"downgrade", func(ctx context.Context) error {
			_, err := c.UpdateClusterVersion(ctx, &awseks.UpdateClusterVersionInput{Name: aws.String(base), Version: aws.String("1.30")})
			return err
		}, "InvalidParameterException"},
		{"minor skip", func(ctx context.Context) error {
			_, err := c.UpdateClusterVersion(ctx, &awseks.UpdateClusterVersionInput{Name: aws.String(base), Version: aws.String("1.33")})
			return err
		}, "InvalidParameterException"},
		{"same version", func(ctx context.Context) error {
			_, err := c.UpdateClusterVersion(ctx, &awseks.UpdateClusterVersionInput{Name: aws.String(base), Version: aws.String("1.31")})
			return err
		}, "InvalidParameterException"},
		{"version of missing cluster", func(ctx context.Context) error {
			_, err := c.UpdateClusterVersion(ctx, &awseks.UpdateClusterVersionInput{Name: aws.String("nope"), Version: aws.String("1.32")})
			return err
		}, "ResourceNotFoundException"},

		// Cluster config.
		{"unknown log type", updateConfig(&awseks.UpdateClusterConfigInput{Logging: logging(true, "kubelet")}), "InvalidParameterException"},
		{"logging unchanged", updateConfig(&awseks.UpdateClusterConfigInput{Logging: logging(false, types.LogTypeApi)}), "InvalidParameterException"},
		{"disable both endpoints", updateConfig(&awseks.UpdateClusterConfigInput{ResourcesVpcConfig: &types.VpcConfigRequest{EndpointPublicAccess: aws.Bool(false)}}), "InvalidParameterException"},
		{"endpoint unchanged", updateConfig(&awseks.UpdateClusterConfigInput{ResourcesVpcConfig: &types.VpcConfigRequest{EndpointPublicAccess: aws.Bool(true)}}), "InvalidParameterException"},
		{"logging and endpoint at once", updateConfig(&awseks.UpdateClusterConfigInput{
			Logging: logging(true, types.LogTypeApi), ResourcesVpcConfig: &types.VpcConfigRequest{EndpointPrivateAccess: aws.Bool(true)},
		}), "InvalidParameterException"},
		{"empty update", updateConfig(&awseks.UpdateClusterConfigInput{}), "InvalidParameterException"},

		// Node groups.
		{"duplicate node group", createNG(func(in *awseks.CreateNodegroupInput) { in.NodegroupName = aws.String(ng) }), "ResourceInUseException"},
		{"node group newer than cluster", createNG(func(in *awseks.CreateNodegroupInput) { in.Version = aws.String("1.32") }), "InvalidParameterException"},
		{"min above max", createNG(func(in *awseks.CreateNodegroupInput) { in.ScalingConfig = scaling(3, 2, 2) }), "InvalidParameterException"},
		{"desired above max", createNG(func(in *awseks.CreateNodegroupInput) { in.ScalingConfig = scaling(1, 2, 3) }), "InvalidParameterException"},
		{"desired below min", createNG(func(in *awseks.CreateNodegroupInput) { in.ScalingConfig = scaling(2, 4, 1) }), "InvalidParameterException"},
		{"unknown AMI type", createNG(func(in *awseks.CreateNodegroupInput) { in.AmiType = "UBUNTU" }), "InvalidParameterException"},
		{"disk size with launch template", createNG(func(in *awseks.CreateNodegroupInput) {
			in.LaunchTemplate = &types.LaunchTemplateSpecification{Name: aws.String("lt")}
			in.DiskSize = aws.Int32(50)
		}), "InvalidParameterException"},
		{"node group on missing cluster", createNG(func(in *awseks.CreateNodegroupInput) { in.ClusterName = aws.String("nope") }), "ResourceNotFoundException"},
		{"missing node role", raw(http.MethodPost, "/clusters/"+base+"/node-groups", `{"nodegroupName":"x","subnets":["subnet-1"]}`), "InvalidParameterException"},
		{"missing subnets", raw(http.MethodPost, "/clusters/"+base+"/node-groups", `{"nodegroupName":"x","nodeRole":"`+nodeRole+`"}`), "InvalidParameterException"},
		{"scale desired below min", func(ctx context.Context) error {
			_, err := c.UpdateNodegroupConfig(ctx, &awseks.UpdateNodegroupConfigInput{ClusterName: aws.String(base), NodegroupName: aws.String(ng),
				ScalingConfig: &types.NodegroupScalingConfig{MinSize: aws.Int32(2), DesiredSize: aws.Int32(1)}})
			return err
		}, "InvalidParameterException"},
		{"label added and removed", func(ctx context.Context) error {
			_, err := c.UpdateNodegroupConfig(ctx, &awseks.UpdateNodegroupConfigInput{ClusterName: aws.String(base), NodegroupName: aws.String(ng),
				Labels: &types.UpdateLabelsPayload{AddOrUpdateLabels: map[string]string{"a": "1"}, RemoveLabels: []string{"a"}}})
			return err
		}, "InvalidParameterException"},
		{"scaling unchanged", func(ctx context.Context) error {
			_, err := c.UpdateNodegroupConfig(ctx, &awseks.UpdateNodegroupConfigInput{ClusterName: aws.String(base), NodegroupName: aws.String(ng),
				ScalingConfig: scaling(1, 2, 2)})
			return err
		}, "InvalidParameterException"},
		{"node group version newer than cluster", func(ctx context.Context) error {
			_, err := c.UpdateNodegroupVersion(ctx, &awseks.UpdateNodegroupVersionInput{ClusterName: aws.String(base), NodegroupName: aws.String(ng), Version: aws.String("1.32")})
			return err
		}, "InvalidParameterException"},
		{"node group version unchanged", func(ctx context.Context) error {
			_, err := c.UpdateNodegroupVersion(ctx, &awseks.UpdateNodegroupVersionInput{ClusterName: aws.String(base), NodegroupName: aws.String(ng)})
			return err
		}, "InvalidParameterException"},
		{"describe missing node group", func(ctx context.Context) error {
			_, err := c.DescribeNodegroup(ctx, &awseks.DescribeNodegroupInput{ClusterName: aws.String(base), NodegroupName: aws.String("nope")})
			return err
		}, "ResourceNotFoundException"},
		{"describe missing update", func(ctx context.Context) error {
			_, err := c.DescribeUpdate(ctx, &awseks.DescribeUpdateInput{Name: aws.String(base), UpdateId: aws.String("00000000-0000-4000-8000-000000000000")})
			return err
		}, "ResourceNotFoundException"},
		{"delete cluster with node groups", func(ctx context.Context) error {
			_, err := c.DeleteCluster(ctx, &awseks.DeleteClusterInput{Name: aws.String(base)})
			return err
		}, "ResourceInUseException"},

		// Tags and paging.
		{"tag missing cluster", func(ctx context.Context) error {
			_, err := c.TagResource(ctx, &awseks.TagResourceInput{ResourceArn: aws.String("arn:aws:eks:" + region + ":123456789012:cluster/nope"), Tags: map[string]string{"a": "b"}})
			return err
		}, "NotFoundException"},
		{"tag with reserved prefix", func(ctx context.Context) error {
			_, err := c.TagResource(ctx, &awseks.TagResourceInput{ResourceArn: aws.String("arn:aws:eks:" + region + ":123456789012:cluster/" + base), Tags: map[string]string{"aws:a": "b"}})
			return err
		}, "BadRequestException"},
		{"tag a malformed ARN", func(ctx context.Context) error {
			_, err := c.ListTagsForResource(ctx, &awseks.ListTagsForResourceInput{ResourceArn: aws.String("not-an-arn")})
			return err
		}, "BadRequestException"},
		{"maxResults out of range", func(ctx context.Context) error {
			_, err := c.ListClusters(ctx, &awseks.ListClustersInput{MaxResults: aws.Int32(101)})
			return err
		}, "InvalidParameterException"},
		{"bad next token", func(ctx context.Context) error {
			_, err := c.ListUpdates(ctx, &awseks.ListUpdatesInput{Name: aws.String(base), NextToken: aws.String("!!")})
			return err
		}, "InvalidParameterException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(t.Context())
			var re *rawError
			if errors.As(err, &re) {
				if re.code != tt.wantCode || re.status != http.StatusBadRequest {
					t.Fatalf("got HTTP %d %q, want 400 %s", re.status, re.code, tt.wantCode)
				}
				return
			}
			wantAPIError(t, err, tt.wantCode)
		})
	}
	// Nothing above may have changed the cluster.
	st, _ := e.srv.Cluster(region, base)
	if st.Version != "1.31" || st.Status != "ACTIVE" || len(st.Updates) != 0 || len(st.Nodegroups) != 1 || len(st.Nodegroups[0].Updates) != 0 {
		t.Errorf("refused calls changed the cluster: %+v", st)
	}
}

type rawError struct {
	status int
	code   string
}

func (e *rawError) Error() string { return e.code }
