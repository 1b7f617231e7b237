package eks_test

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"

	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
)

func enabledLogs(c *types.Cluster) []string {
	var out []string
	for _, s := range c.Logging.ClusterLogging {
		if aws.ToBool(s.Enabled) {
			for _, t := range s.Types {
				out = append(out, string(t))
			}
		}
	}
	return out
}

func logging(enabled bool, ts ...types.LogType) *types.Logging {
	return &types.Logging{ClusterLogging: []types.LogSetup{{Types: ts, Enabled: aws.Bool(enabled)}}}
}

// runUpdate starts an update and checks what EKS shows while it runs: the resource is UPDATING,
// the update is listed and InProgress, and a second change is refused with
// ResourceInUseException. Then it lets the update finish and checks it succeeded.
func runUpdate(t *testing.T, e *env, cluster, ng string, wantType types.UpdateType,
	start func(context.Context) (*types.Update, error), concurrent func(context.Context) error,
) {
	t.Helper()
	ctx := t.Context()
	u, err := start(ctx)
	if err != nil {
		t.Fatalf("starting update: %v", err)
	}
	if u.Status != types.UpdateStatusInProgress || u.Type != wantType {
		t.Fatalf("update = %s %s, want InProgress %s", u.Status, u.Type, wantType)
	}
	var ngName *string
	if ng != "" {
		ngName = aws.String(ng)
		if got := e.describeNodegroup(t, cluster, ng).Status; got != types.NodegroupStatusUpdating {
			t.Fatalf("node group status during update = %s, want UPDATING", got)
		}
	} else if got := e.describe(t, cluster).Status; got != types.ClusterStatusUpdating {
		t.Fatalf("cluster status during update = %s, want UPDATING", got)
	}
	list, err := e.client.ListUpdates(ctx, &awseks.ListUpdatesInput{Name: aws.String(cluster), NodegroupName: ngName})
	if err != nil {
		t.Fatalf("ListUpdates: %v", err)
	}
	if !slices.Contains(list.UpdateIds, aws.ToString(u.Id)) {
		t.Fatalf("ListUpdates = %v, want it to contain %s", list.UpdateIds, aws.ToString(u.Id))
	}
	describe := func() *types.Update {
		out, err := e.client.DescribeUpdate(ctx, &awseks.DescribeUpdateInput{Name: aws.String(cluster), UpdateId: u.Id, NodegroupName: ngName})
		if err != nil {
			t.Fatalf("DescribeUpdate: %v", err)
		}
		return out.Update
	}
	if got := describe().Status; got != types.UpdateStatusInProgress {
		t.Fatalf("DescribeUpdate status = %s, want InProgress", got)
	}
	wantAPIError(t, concurrent(ctx), "ResourceInUseException")

	e.settle()
	if got := describe().Status; got != types.UpdateStatusSuccessful {
		t.Fatalf("DescribeUpdate status after the delay = %s, want Successful", got)
	}
	if ng != "" {
		if got := e.describeNodegroup(t, cluster, ng).Status; got != types.NodegroupStatusActive {
			t.Fatalf("node group status after update = %s, want ACTIVE", got)
		}
	} else {
		e.waitActive(t, cluster)
	}
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const name = "prod-1"
	created := e.clock.Now()

	out, err := e.client.CreateCluster(ctx, &awseks.CreateClusterInput{
		Name:               aws.String(name),
		Version:            aws.String("1.32"),
		RoleArn:            aws.String(roleARN),
		ResourcesVpcConfig: &types.VpcConfigRequest{SubnetIds: subnets, SecurityGroupIds: []string{"sg-0123456789abcdef0"}},
		Tags:               map[string]string{"team": "platform"},
	})
	if err != nil {
		t.Fatalf("CreateCluster: %v", err)
	}
	if c := out.Cluster; c.Status != types.ClusterStatusCreating || aws.ToString(c.Endpoint) != "" {
		t.Fatalf("new cluster: status %s endpoint %q, want CREATING without endpoint", c.Status, aws.ToString(c.Endpoint))
	}
	if got := e.describe(t, name).Status; got != types.ClusterStatusCreating {
		t.Fatalf("status before the delay = %s, want CREATING", got)
	}
	_, err = e.client.UpdateClusterVersion(ctx, &awseks.UpdateClusterVersionInput{Name: aws.String(name), Version: aws.String("1.33")})
	wantAPIError(t, err, "ResourceInUseException")

	e.settle()
	c := e.waitActive(t, name)
	wantARN := "arn:aws:eks:" + region + ":" + eksim.DefaultAccountID + ":cluster/" + name
	switch {
	case aws.ToString(c.Arn) != wantARN:
		t.Errorf("arn = %s, want %s", aws.ToString(c.Arn), wantARN)
	case aws.ToString(c.Version) != "1.32" || aws.ToString(c.RoleArn) != roleARN:
		t.Errorf("version %s role %s, want 1.32 %s", aws.ToString(c.Version), aws.ToString(c.RoleArn), roleARN)
	case !strings.HasPrefix(aws.ToString(c.Endpoint), "https://") || aws.ToString(c.PlatformVersion) == "":
		t.Errorf("endpoint %q platform %q, want both set once ACTIVE", aws.ToString(c.Endpoint), aws.ToString(c.PlatformVersion))
	case !c.CreatedAt.Equal(created):
		t.Errorf("createdAt = %v, want %v", c.CreatedAt, created)
	case !slices.Equal(c.ResourcesVpcConfig.SubnetIds, subnets) || !strings.HasPrefix(aws.ToString(c.ResourcesVpcConfig.VpcId), "vpc-"):
		t.Errorf("vpc config = %+v", c.ResourcesVpcConfig)
	case !c.ResourcesVpcConfig.EndpointPublicAccess || c.ResourcesVpcConfig.EndpointPrivateAccess ||
		!slices.Equal(c.ResourcesVpcConfig.PublicAccessCidrs, []string{"0.0.0.0/0"}):
		t.Errorf("endpoint access defaults = %+v, want public only from 0.0.0.0/0", c.ResourcesVpcConfig)
	case len(enabledLogs(c)) != 0:
		t.Errorf("enabled logs = %v, want none", enabledLogs(c))
	}
	if c.CertificateAuthority == nil {
		t.Fatal("ACTIVE cluster has no certificateAuthority")
	}
	if pemBytes, err := base64.StdEncoding.DecodeString(aws.ToString(c.CertificateAuthority.Data)); err != nil {
		t.Errorf("CA data is not base64: %v", err)
	} else if b, _ := pem.Decode(pemBytes); b == nil || b.Type != "CERTIFICATE" {
		t.Errorf("CA data is not a PEM certificate")
	}

	// Every supported cluster field, one update at a time.
	concurrentCluster := func(ctx context.Context) error {
		_, err := e.client.UpdateClusterConfig(ctx, &awseks.UpdateClusterConfigInput{Name: aws.String(name), Logging: logging(true, types.LogTypeScheduler)})
		return err
	}
	clusterSteps := []struct {
		name    string
		typ     types.UpdateType
		in      *awseks.UpdateClusterConfigInput
		version string
		check   func(*types.Cluster) bool
	}{
		{name: "version 1.32 to 1.33", typ: types.UpdateTypeVersionUpdate, version: "1.33",
			check: func(c *types.Cluster) bool { return aws.ToString(c.Version) == "1.33" }},
		{name: "enable api and audit logs", typ: types.UpdateTypeLoggingUpdate,
			in:    &awseks.UpdateClusterConfigInput{Logging: logging(true, types.LogTypeApi, types.LogTypeAudit)},
			check: func(c *types.Cluster) bool { return slices.Equal(enabledLogs(c), []string{"api", "audit"}) }},
		{name: "disable audit logs", typ: types.UpdateTypeLoggingUpdate,
			in:    &awseks.UpdateClusterConfigInput{Logging: logging(false, types.LogTypeAudit)},
			check: func(c *types.Cluster) bool { return slices.Equal(enabledLogs(c), []string{"api"}) }},
		{name: "enable private access", typ: types.UpdateTypeEndpointAccessUpdate,
			in: &awseks.UpdateClusterConfigInput{ResourcesVpcConfig: &types.VpcConfigRequest{EndpointPrivateAccess: aws.Bool(true)}},
			check: func(c *types.Cluster) bool {
				return c.ResourcesVpcConfig.EndpointPrivateAccess && c.ResourcesVpcConfig.EndpointPublicAccess
			}},
		{name: "restrict public CIDRs", typ: types.UpdateTypeEndpointAccessUpdate,
			in: &awseks.UpdateClusterConfigInput{ResourcesVpcConfig: &types.VpcConfigRequest{PublicAccessCidrs: []string{"203.0.113.0/24", "198.51.100.7/32"}}},
			check: func(c *types.Cluster) bool {
				return slices.Equal(c.ResourcesVpcConfig.PublicAccessCidrs, []string{"203.0.113.0/24", "198.51.100.7/32"})
			}},
		{name: "disable public access", typ: types.UpdateTypeEndpointAccessUpdate,
			in: &awseks.UpdateClusterConfigInput{ResourcesVpcConfig: &types.VpcConfigRequest{EndpointPublicAccess: aws.Bool(false)}},
			check: func(c *types.Cluster) bool {
				return !c.ResourcesVpcConfig.EndpointPublicAccess && c.ResourcesVpcConfig.EndpointPrivateAccess
			}},
	}
	for _, st := range clusterSteps {
		t.Run("cluster/"+st.name, func(t *testing.T) {
			before := e.describe(t, name)
			runUpdate(t, e, name, "", st.typ, func(ctx context.Context) (*types.Update, error) {
				var u *types.Update
				if st.version != "" {
					out, err := e.client.UpdateClusterVersion(ctx, &awseks.UpdateClusterVersionInput{Name: aws.String(name), Version: aws.String(st.version)})
					if err != nil {
						return nil, err
					}
					u = out.Update
				} else {
					in := *st.in
					in.Name = aws.String(name)
					out, err := e.client.UpdateClusterConfig(ctx, &in)
					if err != nil {
						return nil, err
					}
					u = out.Update
				}
				// EKS shows the old values until the update completes.
				if during := e.describe(t, name); st.check(during) && !st.check(before) {
					t.Errorf("the change is visible while the update is still InProgress")
				}
				return u, nil
			}, concurrentCluster)
			if got := e.describe(t, name); !st.check(got) {
				t.Errorf("after the update the cluster is %+v", got)
			}
		})
	}

	// Tags change at once, without an update.
	t.Run("cluster/tags", func(t *testing.T) {
		updates, _ := e.client.ListUpdates(ctx, &awseks.ListUpdatesInput{Name: aws.String(name)})
		if _, err := e.client.TagResource(ctx, &awseks.TagResourceInput{ResourceArn: aws.String(wantARN), Tags: map[string]string{"env": "prod", "cost": "42"}}); err != nil {
			t.Fatalf("TagResource: %v", err)
		}
		if _, err := e.client.UntagResource(ctx, &awseks.UntagResourceInput{ResourceArn: aws.String(wantARN), TagKeys: []string{"team", "cost"}}); err != nil {
			t.Fatalf("UntagResource: %v", err)
		}
		want := map[string]string{"env": "prod"}
		if c := e.describe(t, name); !maps.Equal(c.Tags, want) || c.Status != types.ClusterStatusActive {
			t.Errorf("after tagging: tags %v status %s, want %v ACTIVE", c.Tags, c.Status, want)
		}
		lt, err := e.client.ListTagsForResource(ctx, &awseks.ListTagsForResourceInput{ResourceArn: aws.String(wantARN)})
		if err != nil || !maps.Equal(lt.Tags, want) {
			t.Errorf("ListTagsForResource = %v, %v; want %v", lt, err, want)
		}
		after, _ := e.client.ListUpdates(ctx, &awseks.ListUpdatesInput{Name: aws.String(name)})
		if len(after.UpdateIds) != len(updates.UpdateIds) {
			t.Errorf("tagging created updates: %d before, %d after", len(updates.UpdateIds), len(after.UpdateIds))
		}
	})

	// Node groups.
	const ng = "workers"
	ngOut, err := e.client.CreateNodegroup(ctx, &awseks.CreateNodegroupInput{
		ClusterName:   aws.String(name),
		NodegroupName: aws.String(ng),
		NodeRole:      aws.String(nodeRole),
		Subnets:       subnets,
		Version:       aws.String("1.32"),
		ScalingConfig: &types.NodegroupScalingConfig{MinSize: aws.Int32(1), MaxSize: aws.Int32(3), DesiredSize: aws.Int32(2)},
		InstanceTypes: []string{"m5.large"},
		Labels:        map[string]string{"role": "worker"},
		Tags:          map[string]string{"team": "platform"},
	})
	if err != nil {
		t.Fatalf("CreateNodegroup: %v", err)
	}
	if ngOut.Nodegroup.Status != types.NodegroupStatusCreating {
		t.Fatalf("new node group status = %s, want CREATING", ngOut.Nodegroup.Status)
	}
	_, err = e.client.CreateNodegroup(ctx, &awseks.CreateNodegroupInput{
		ClusterName: aws.String(name), NodegroupName: aws.String(ng), NodeRole: aws.String(nodeRole), Subnets: subnets,
	})
	wantAPIError(t, err, "ResourceInUseException")
	e.settle()
	if err := awseks.NewNodegroupActiveWaiter(e.client, func(o *awseks.NodegroupActiveWaiterOptions) {
		o.MinDelay, o.MaxDelay = 5*time.Millisecond, 50*time.Millisecond
	}).Wait(ctx, &awseks.DescribeNodegroupInput{ClusterName: aws.String(name), NodegroupName: aws.String(ng)}, 5*time.Second); err != nil {
		t.Fatalf("waiting for the node group: %v", err)
	}
	n := e.describeNodegroup(t, name, ng)
	if aws.ToString(n.Version) != "1.32" || !strings.HasPrefix(aws.ToString(n.ReleaseVersion), "1.32.") ||
		aws.ToString(n.NodeRole) != nodeRole || !slices.Equal(n.InstanceTypes, []string{"m5.large"}) ||
		aws.ToInt32(n.DiskSize) != 20 || n.AmiType != types.AMITypesAl2023X8664Standard || n.CapacityType != types.CapacityTypesOnDemand ||
		!strings.Contains(aws.ToString(n.NodegroupArn), ":nodegroup/"+name+"/"+ng+"/") || n.Health == nil {
		t.Errorf("new node group = %+v", n)
	}
	ngs, err := e.client.ListNodegroups(ctx, &awseks.ListNodegroupsInput{ClusterName: aws.String(name)})
	if err != nil || !slices.Equal(ngs.Nodegroups, []string{ng}) {
		t.Fatalf("ListNodegroups = %v, %v", ngs, err)
	}

	concurrentNG := func(ctx context.Context) error {
		_, err := e.client.UpdateNodegroupConfig(ctx, &awseks.UpdateNodegroupConfigInput{
			ClusterName: aws.String(name), NodegroupName: aws.String(ng),
			ScalingConfig: &types.NodegroupScalingConfig{DesiredSize: aws.Int32(1)},
		})
		return err
	}
	ngSteps := []struct {
		name    string
		typ     types.UpdateType
		config  *awseks.UpdateNodegroupConfigInput
		version string
		check   func(*types.Nodegroup) bool
	}{
		{name: "scale", typ: types.UpdateTypeConfigUpdate,
			config: &awseks.UpdateNodegroupConfigInput{ScalingConfig: &types.NodegroupScalingConfig{MinSize: aws.Int32(2), MaxSize: aws.Int32(5), DesiredSize: aws.Int32(4)}},
			check: func(n *types.Nodegroup) bool {
				s := n.ScalingConfig
				return aws.ToInt32(s.MinSize) == 2 && aws.ToInt32(s.MaxSize) == 5 && aws.ToInt32(s.DesiredSize) == 4
			}},
		{name: "add labels", typ: types.UpdateTypeConfigUpdate,
			config: &awseks.UpdateNodegroupConfigInput{Labels: &types.UpdateLabelsPayload{AddOrUpdateLabels: map[string]string{"env": "prod", "role": "edge"}}},
			check: func(n *types.Nodegroup) bool {
				return maps.Equal(n.Labels, map[string]string{"env": "prod", "role": "edge"})
			}},
		{name: "remove a label", typ: types.UpdateTypeConfigUpdate,
			config: &awseks.UpdateNodegroupConfigInput{Labels: &types.UpdateLabelsPayload{RemoveLabels: []string{"role"}}},
			check:  func(n *types.Nodegroup) bool { return maps.Equal(n.Labels, map[string]string{"env": "prod"}) }},
		{name: "version 1.32 to 1.33", typ: types.UpdateTypeVersionUpdate, version: "1.33",
			check: func(n *types.Nodegroup) bool {
				return aws.ToString(n.Version) == "1.33" && strings.HasPrefix(aws.ToString(n.ReleaseVersion), "1.33.")
			}},
	}
	for _, st := range ngSteps {
		t.Run("nodegroup/"+st.name, func(t *testing.T) {
			runUpdate(t, e, name, ng, st.typ, func(ctx context.Context) (*types.Update, error) {
				if st.version != "" {
					out, err := e.client.UpdateNodegroupVersion(ctx, &awseks.UpdateNodegroupVersionInput{
						ClusterName: aws.String(name), NodegroupName: aws.String(ng), Version: aws.String(st.version)})
					if err != nil {
						return nil, err
					}
					return out.Update, nil
				}
				in := *st.config
				in.ClusterName, in.NodegroupName = aws.String(name), aws.String(ng)
				out, err := e.client.UpdateNodegroupConfig(ctx, &in)
				if err != nil {
					return nil, err
				}
				return out.Update, nil
			}, concurrentNG)
			if got := e.describeNodegroup(t, name, ng); !st.check(got) {
				t.Errorf("after the update the node group is %+v", got)
			}
		})
	}
	t.Run("nodegroup/updates are listed per node group", func(t *testing.T) {
		ngUpdates, err := e.client.ListUpdates(ctx, &awseks.ListUpdatesInput{Name: aws.String(name), NodegroupName: aws.String(ng)})
		if err != nil || len(ngUpdates.UpdateIds) != len(ngSteps) {
			t.Errorf("node group updates = %v, %v; want %d", ngUpdates, err, len(ngSteps))
		}
		clUpdates, err := e.client.ListUpdates(ctx, &awseks.ListUpdatesInput{Name: aws.String(name)})
		if err != nil || len(clUpdates.UpdateIds) != len(clusterSteps) {
			t.Errorf("cluster updates = %v, %v; want %d", clUpdates, err, len(clusterSteps))
		}
	})
	t.Run("nodegroup/tags", func(t *testing.T) {
		arn := e.describeNodegroup(t, name, ng).NodegroupArn
		if _, err := e.client.TagResource(ctx, &awseks.TagResourceInput{ResourceArn: arn, Tags: map[string]string{"env": "prod"}}); err != nil {
			t.Fatalf("TagResource: %v", err)
		}
		if _, err := e.client.UntagResource(ctx, &awseks.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"team"}}); err != nil {
			t.Fatalf("UntagResource: %v", err)
		}
		if got := e.describeNodegroup(t, name, ng).Tags; !maps.Equal(got, map[string]string{"env": "prod"}) {
			t.Errorf("node group tags = %v", got)
		}
		if got := e.describe(t, name).Tags; !maps.Equal(got, map[string]string{"env": "prod"}) {
			t.Errorf("node group tagging changed the cluster's tags: %v", got)
		}
	})

	t.Run("inspection returns a deep copy", func(t *testing.T) {
		st, ok := e.srv.Cluster(region, name)
		if !ok || st.Version != "1.33" || len(st.Nodegroups) != 1 || st.Nodegroups[0].DesiredSize != 4 ||
			len(st.Updates) != len(clusterSteps) || len(st.Nodegroups[0].Updates) != len(ngSteps) {
			t.Fatalf("Cluster() = %+v, %v", st, ok)
		}
		st.Tags["mutated"] = "yes"
		st.Nodegroups[0].Labels["mutated"] = "yes"
		st.SubnetIDs[0] = "subnet-mutated"
		again, _ := e.srv.Cluster(region, name)
		if _, ok := again.Tags["mutated"]; ok || again.Nodegroups[0].Labels["mutated"] != "" || again.SubnetIDs[0] != subnets[0] {
			t.Errorf("changing the returned state changed the simulator: %+v", again)
		}
	})

	// Deletion: node groups first, as EKS insists.
	_, err = e.client.DeleteCluster(ctx, &awseks.DeleteClusterInput{Name: aws.String(name)})
	wantAPIError(t, err, "ResourceInUseException")
	del, err := e.client.DeleteNodegroup(ctx, &awseks.DeleteNodegroupInput{ClusterName: aws.String(name), NodegroupName: aws.String(ng)})
	if err != nil || del.Nodegroup.Status != types.NodegroupStatusDeleting {
		t.Fatalf("DeleteNodegroup = %v, %v; want DELETING", del, err)
	}
	if got := e.describeNodegroup(t, name, ng).Status; got != types.NodegroupStatusDeleting {
		t.Fatalf("node group status = %s, want DELETING", got)
	}
	e.settle()
	_, err = e.client.DescribeNodegroup(ctx, &awseks.DescribeNodegroupInput{ClusterName: aws.String(name), NodegroupName: aws.String(ng)})
	wantAPIError(t, err, "ResourceNotFoundException")

	dc, err := e.client.DeleteCluster(ctx, &awseks.DeleteClusterInput{Name: aws.String(name)})
	if err != nil || dc.Cluster.Status != types.ClusterStatusDeleting {
		t.Fatalf("DeleteCluster = %v, %v; want DELETING", dc, err)
	}
	if got := e.describe(t, name).Status; got != types.ClusterStatusDeleting {
		t.Fatalf("status = %s, want DELETING", got)
	}
	e.settle()
	_, err = e.client.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String(name)})
	wantAPIError(t, err, "ResourceNotFoundException")
	if n := e.srv.ClusterCount(); n != 0 {
		t.Errorf("ClusterCount = %d after deletion, want 0", n)
	}
	if _, ok := e.srv.Cluster(region, name); ok {
		t.Error("Cluster() still finds the deleted cluster")
	}
}

// TestRealClockWaiters runs the transitions on the wall clock with a short delay, waited for
// with the SDK's waiters as drover's tests of the sync controller would.
func TestRealClockWaiters(t *testing.T) {
	_, ts := eksim.NewTestServer(t, eksim.Options{Delay: 20 * time.Millisecond})
	client := eksim.NewClient(ts.URL, region, eksim.DefaultAccessKeyID, eksim.DefaultSecretAccessKey)
	ctx := t.Context()
	in := &awseks.DescribeClusterInput{Name: aws.String("quick")}
	if _, err := client.CreateCluster(ctx, &awseks.CreateClusterInput{
		Name: in.Name, RoleArn: aws.String(roleARN), ResourcesVpcConfig: &types.VpcConfigRequest{SubnetIds: subnets},
	}); err != nil {
		t.Fatalf("CreateCluster: %v", err)
	}
	out, err := awseks.NewClusterActiveWaiter(client, func(o *awseks.ClusterActiveWaiterOptions) {
		o.MinDelay, o.MaxDelay = 5*time.Millisecond, 20*time.Millisecond
	}).WaitForOutput(ctx, in, 5*time.Second)
	if err != nil {
		t.Fatalf("waiting for ACTIVE: %v", err)
	}
	if v := aws.ToString(out.Cluster.Version); v != eksim.DefaultVersion {
		t.Errorf("version = %s, want the default %s", v, eksim.DefaultVersion)
	}
	if _, err := client.DeleteCluster(ctx, &awseks.DeleteClusterInput{Name: in.Name}); err != nil {
		t.Fatalf("DeleteCluster: %v", err)
	}
	if err := awseks.NewClusterDeletedWaiter(client, func(o *awseks.ClusterDeletedWaiterOptions) {
		o.MinDelay, o.MaxDelay = 5*time.Millisecond, 20*time.Millisecond
	}).Wait(ctx, in, 5*time.Second); err != nil {
		t.Fatalf("waiting for deletion: %v", err)
	}
}

func TestListClustersPaginatesPerRegion(t *testing.T) {
	e := newEnv(t)
	want := []string{"a", "b", "c", "d", "e"}
	for _, n := range slices.Backward(want) {
		e.createCluster(t, n, "1.33")
	}
	var got []string
	p := awseks.NewListClustersPaginator(e.client, &awseks.ListClustersInput{MaxResults: aws.Int32(2)})
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatalf("ListClusters: %v", err)
		}
		pages++
		got = append(got, out.Clusters...)
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("listed %v in %d pages, want %v in 3", got, pages, want)
	}
	other := eksim.NewClient(e.url, "eu-central-1", accessKey, secretKey)
	out, err := other.ListClusters(t.Context(), &awseks.ListClustersInput{})
	if err != nil || len(out.Clusters) != 0 {
		t.Errorf("another region lists %v, %v; want nothing", out, err)
	}
	_, err = other.DescribeCluster(t.Context(), &awseks.DescribeClusterInput{Name: aws.String("a")})
	wantAPIError(t, err, "ResourceNotFoundException")
	if n := e.srv.ClusterCount(); n != len(want) {
		t.Errorf("ClusterCount = %d, want %d", n, len(want))
	}
}

// TestIdempotentCreate checks that a retried create with the same client request token gets
// the cluster back rather than ResourceInUseException, as with EKS.
func TestIdempotentCreate(t *testing.T) {
	e := newEnv(t)
	in := &awseks.CreateClusterInput{
		Name: aws.String("idem"), RoleArn: aws.String(roleARN), ClientRequestToken: aws.String("token-1"),
		ResourcesVpcConfig: &types.VpcConfigRequest{SubnetIds: subnets},
	}
	for i := range 2 {
		if _, err := e.client.CreateCluster(t.Context(), in); err != nil {
			t.Fatalf("CreateCluster attempt %d: %v", i+1, err)
		}
	}
	in.ClientRequestToken = aws.String("token-2")
	_, err := e.client.CreateCluster(t.Context(), in)
	wantAPIError(t, err, "ResourceInUseException")
}

// TestUpdateStatusLag reproduces EKS reporting ACTIVE for a while after accepting an update:
// only ListUpdates/DescribeUpdate show that the cluster is busy, which is what drover's
// "is updating" check must rely on.
func TestUpdateStatusLag(t *testing.T) {
	const lag = 10 * time.Second
	e := newEnv(t, func(o *eksim.Options) { o.UpdateStatusLag = lag })
	ctx := t.Context()
	name := aws.String("laggy")
	e.createCluster(t, *name, "1.32")
	e.settle()
	up, err := e.client.UpdateClusterVersion(ctx, &awseks.UpdateClusterVersionInput{Name: name, Version: aws.String("1.33")})
	if err != nil {
		t.Fatalf("UpdateClusterVersion: %v", err)
	}
	if c := e.describe(t, *name); c.Status != types.ClusterStatusActive || aws.ToString(c.Version) != "1.32" {
		t.Fatalf("right after the update: %s %s, want ACTIVE 1.32", c.Status, aws.ToString(c.Version))
	}
	du, err := e.client.DescribeUpdate(ctx, &awseks.DescribeUpdateInput{Name: name, UpdateId: up.Update.Id})
	if err != nil || du.Update.Status != types.UpdateStatusInProgress {
		t.Fatalf("DescribeUpdate = %v, %v; want InProgress", du, err)
	}
	_, err = e.client.UpdateClusterConfig(ctx, &awseks.UpdateClusterConfigInput{Name: name, Logging: logging(true, types.LogTypeApi)})
	wantAPIError(t, err, "ResourceInUseException")
	e.clock.Advance(lag)
	if s := e.describe(t, *name).Status; s != types.ClusterStatusUpdating {
		t.Fatalf("after the lag: %s, want UPDATING", s)
	}
	e.settle()
	if c := e.describe(t, *name); c.Status != types.ClusterStatusActive || aws.ToString(c.Version) != "1.33" {
		t.Fatalf("after the update: %s %s, want ACTIVE 1.33", c.Status, aws.ToString(c.Version))
	}

	// Node groups lag the same way.
	ng := aws.String("workers")
	if _, err := e.client.CreateNodegroup(ctx, &awseks.CreateNodegroupInput{ClusterName: name, NodegroupName: ng, NodeRole: aws.String(nodeRole), Subnets: subnets}); err != nil {
		t.Fatalf("CreateNodegroup: %v", err)
	}
	e.settle()
	nu, err := e.client.UpdateNodegroupConfig(ctx, &awseks.UpdateNodegroupConfigInput{ClusterName: name, NodegroupName: ng, ScalingConfig: &types.NodegroupScalingConfig{DesiredSize: aws.Int32(3), MaxSize: aws.Int32(3)}})
	if err != nil {
		t.Fatalf("UpdateNodegroupConfig: %v", err)
	}
	if g := e.describeNodegroup(t, *name, *ng); g.Status != types.NodegroupStatusActive || aws.ToInt32(g.ScalingConfig.DesiredSize) == 3 {
		t.Fatalf("node group right after the update: %s desired %d, want ACTIVE with the old size", g.Status, aws.ToInt32(g.ScalingConfig.DesiredSize))
	}
	list, err := e.client.ListUpdates(ctx, &awseks.ListUpdatesInput{Name: name, NodegroupName: ng})
	if err != nil || !slices.Contains(list.UpdateIds, aws.ToString(nu.Update.Id)) {
		t.Fatalf("ListUpdates(node group) = %v, %v; want it to list %s", list, err, aws.ToString(nu.Update.Id))
	}
	du, err = e.client.DescribeUpdate(ctx, &awseks.DescribeUpdateInput{Name: name, NodegroupName: ng, UpdateId: nu.Update.Id})
	if err != nil || du.Update.Status != types.UpdateStatusInProgress {
		t.Fatalf("DescribeUpdate(node group) = %v, %v; want InProgress", du, err)
	}
	e.clock.Advance(lag)
	if s := e.describeNodegroup(t, *name, *ng).Status; s != types.NodegroupStatusUpdating {
		t.Fatalf("node group after the lag: %s, want UPDATING", s)
	}
	e.settle()
	if g := e.describeNodegroup(t, *name, *ng); g.Status != types.NodegroupStatusActive || aws.ToInt32(g.ScalingConfig.DesiredSize) != 3 {
		t.Fatalf("node group after the update: %s desired %d, want ACTIVE 3", g.Status, aws.ToInt32(g.ScalingConfig.DesiredSize))
	}
}
