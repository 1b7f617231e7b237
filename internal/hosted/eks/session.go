package eks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// API is the part of the eks client the provider uses; *awseks.Client implements it.
type API interface {
	DescribeCluster(context.Context, *awseks.DescribeClusterInput, ...func(*awseks.Options)) (*awseks.DescribeClusterOutput, error)
	CreateCluster(context.Context, *awseks.CreateClusterInput, ...func(*awseks.Options)) (*awseks.CreateClusterOutput, error)
	DeleteCluster(context.Context, *awseks.DeleteClusterInput, ...func(*awseks.Options)) (*awseks.DeleteClusterOutput, error)
	UpdateClusterConfig(context.Context, *awseks.UpdateClusterConfigInput, ...func(*awseks.Options)) (*awseks.UpdateClusterConfigOutput, error)
	UpdateClusterVersion(context.Context, *awseks.UpdateClusterVersionInput, ...func(*awseks.Options)) (*awseks.UpdateClusterVersionOutput, error)
	DescribeUpdate(context.Context, *awseks.DescribeUpdateInput, ...func(*awseks.Options)) (*awseks.DescribeUpdateOutput, error)
	ListUpdates(context.Context, *awseks.ListUpdatesInput, ...func(*awseks.Options)) (*awseks.ListUpdatesOutput, error)
	ListNodegroups(context.Context, *awseks.ListNodegroupsInput, ...func(*awseks.Options)) (*awseks.ListNodegroupsOutput, error)
	DescribeNodegroup(context.Context, *awseks.DescribeNodegroupInput, ...func(*awseks.Options)) (*awseks.DescribeNodegroupOutput, error)
	CreateNodegroup(context.Context, *awseks.CreateNodegroupInput, ...func(*awseks.Options)) (*awseks.CreateNodegroupOutput, error)
	DeleteNodegroup(context.Context, *awseks.DeleteNodegroupInput, ...func(*awseks.Options)) (*awseks.DeleteNodegroupOutput, error)
	UpdateNodegroupConfig(context.Context, *awseks.UpdateNodegroupConfigInput, ...func(*awseks.Options)) (*awseks.UpdateNodegroupConfigOutput, error)
	UpdateNodegroupVersion(context.Context, *awseks.UpdateNodegroupVersionInput, ...func(*awseks.Options)) (*awseks.UpdateNodegroupVersionOutput, error)
	TagResource(context.Context, *awseks.TagResourceInput, ...func(*awseks.Options)) (*awseks.TagResourceOutput, error)
	UntagResource(context.Context, *awseks.UntagResourceInput, ...func(*awseks.Options)) (*awseks.UntagResourceOutput, error)
}

type session struct {
	api API
	cfg *v1.EKSClusterConfig
	// Filled by Observe for Push and Delete.
	arn      string
	ngARN    map[string]string
	ngStatus map[string]types.NodegroupStatus
}

// classify maps EKS error codes to the engine's error kinds.
func classify(op string, err error) error {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return fmt.Errorf("%s: %w", op, err)
	}
	pe := &hosted.ProviderError{Op: op, Code: ae.ErrorCode(), Message: ae.ErrorMessage(), Err: err}
	switch ae.ErrorCode() {
	case "UnrecognizedClientException", "InvalidSignatureException", "AccessDeniedException", "MissingAuthenticationTokenException", "ExpiredTokenException", "InvalidClientTokenId":
		if key := credentialKeys[ae.ErrorCode()]; key != "" {
			pe.Message = hosted.Sentence(pe.Message) + " Check the Secret's key " + key + "."
		}
		return fmt.Errorf("%w: %w", hosted.ErrCredentials, pe)
	case "ThrottlingException", "TooManyRequestsException":
		// EKS does not usually send Retry-After; when it (or a proxy) does, it is honoured.
		var after time.Duration
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
			after = hosted.ParseRetryAfter(re.Response.Header, time.Now())
		}
		return hosted.Throttled(fmt.Errorf("%w: %w", hosted.ErrThrottled, pe), after)
	case "ResourceInUseException":
		return fmt.Errorf("%w: %w", hosted.ErrBusy, pe)
	case "InvalidParameterException", "InvalidRequestException":
		return &hosted.FieldError{Field: "eksConfig", Reason: v1.ReasonRejectedByEKS, Message: ae.ErrorMessage()}
	}
	return pe
}

// credentialKeys name the credential Secret's key an AWS authentication error points at.
var credentialKeys = map[string]string{
	"UnrecognizedClientException": KeyAccessKeyID,     // no such access key
	"InvalidClientTokenId":        KeyAccessKeyID,     // no such access key
	"InvalidSignatureException":   KeySecretAccessKey, // the key's secret does not match
	"ExpiredTokenException":       KeySessionToken,    // temporary credentials expired
}

func isNotFound(err error) bool {
	var nf *types.ResourceNotFoundException
	return errors.As(err, &nf)
}

// Observe implements hosted.Session: DescribeCluster, ListNodegroups and one DescribeNodegroup
// per group, ListUpdates for the cluster and each group (the steady-state budget), plus
// DescribeUpdate for updates drover started and has not seen finish and for updates started
// elsewhere not yet seen finished — EKS reports ACTIVE for a while after accepting an update.
func (s *session) Observe(ctx context.Context, c *v1.Cluster) (*hosted.Observation, error) {
	name := s.cfg.DisplayName
	out, err := s.api.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: &name})
	if isNotFound(err) {
		return &hosted.Observation{Exists: false}, nil
	}
	if err != nil {
		return nil, classify("DescribeCluster", err)
	}
	cl := out.Cluster
	s.arn = aws.ToString(cl.Arn)
	obs := &hosted.Observation{Exists: true, Status: string(cl.Status), Details: map[string]string{"arn": s.arn, "endpoint": aws.ToString(cl.Endpoint)}}
	switch cl.Status {
	case types.ClusterStatusCreating:
		obs.Creating = true
	case types.ClusterStatusDeleting:
		obs.Deleting, obs.Updating, obs.Why = true, true, "the cluster is DELETING"
	case types.ClusterStatusFailed:
		obs.Failed, obs.FailedMessage = true, "EKS reports the cluster FAILED: see the EKS console for the cause; delete this Cluster to clean up"
	case types.ClusterStatusUpdating:
		obs.Updating, obs.Why = true, "the cluster is UPDATING"
	}
	up := s.upstreamCluster(cl)
	if cl.Status != types.ClusterStatusCreating {
		groups, err := s.observeNodegroups(ctx, obs)
		if err != nil {
			return nil, err
		}
		up.NodeGroups = groups
	}
	for _, id := range c.Status.PendingOperations {
		in := &awseks.DescribeUpdateInput{Name: &name}
		if ng, uid, ok := strings.Cut(id, "/"); ok {
			in.NodegroupName, in.UpdateId = aws.String(ng), aws.String(uid)
		} else {
			in.UpdateId = aws.String(id)
		}
		u, err := s.api.DescribeUpdate(ctx, in)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, classify("DescribeUpdate", err)
		}
		switch u.Update.Status {
		case types.UpdateStatusInProgress:
			obs.Pending = append(obs.Pending, id)
			obs.Updating = true
			obs.Why = fmt.Sprintf("EKS update %s (%s) is in progress", aws.ToString(u.Update.Id), u.Update.Type)
		case types.UpdateStatusFailed, types.UpdateStatusCancelled:
			var msgs []string
			for _, e := range u.Update.Errors {
				msgs = append(msgs, fmt.Sprintf("%s: %s", e.ErrorCode, aws.ToString(e.ErrorMessage)))
			}
			if obs.FailedOps == nil {
				obs.FailedOps = map[string]string{}
			}
			obs.FailedOps[id] = fmt.Sprintf("EKS update %s %s: %s", u.Update.Type, u.Update.Status, strings.Join(msgs, "; "))
		}
	}
	if cl.Status == types.ClusterStatusActive || cl.Status == types.ClusterStatusUpdating {
		if err := s.observeExternal(ctx, c, obs); err != nil {
			return nil, err
		}
	}
	tree, err := hosted.ToTree(up)
	if err != nil {
		return nil, err
	}
	obs.Upstream = tree
	return obs, nil
}

func (s *session) upstreamCluster(cl *types.Cluster) *v1.EKSClusterConfig {
	// Identity fields come from the config: a refresh never changes them.
	up := &v1.EKSClusterConfig{
		DisplayName: s.cfg.DisplayName, Region: s.cfg.Region, Imported: s.cfg.Imported, CredentialSecret: s.cfg.CredentialSecret,
		KubernetesVersion: cl.Version,
		Tags:              orEmpty(cl.Tags),
		ServiceRole:       cl.RoleArn,
		LoggingTypes:      []string{},
		NodeGroups:        []v1.EKSNodeGroup{},
	}
	if vpc := cl.ResourcesVpcConfig; vpc != nil {
		up.PublicAccess = ptr.To(vpc.EndpointPublicAccess)
		up.PrivateAccess = ptr.To(vpc.EndpointPrivateAccess)
		up.PublicAccessSources = nonNil(vpc.PublicAccessCidrs)
		up.Subnets = nonNil(vpc.SubnetIds)
		up.SecurityGroups = nonNil(vpc.SecurityGroupIds)
	}
	if cl.Logging != nil {
		for _, ls := range cl.Logging.ClusterLogging {
			if aws.ToBool(ls.Enabled) {
				for _, t := range ls.Types {
					up.LoggingTypes = append(up.LoggingTypes, string(t))
				}
			}
		}
	}
	sort.Strings(up.LoggingTypes)
	return up
}

func (s *session) observeNodegroups(ctx context.Context, obs *hosted.Observation) ([]v1.EKSNodeGroup, error) {
	name := s.cfg.DisplayName
	var names []string
	var next *string
	for {
		out, err := s.api.ListNodegroups(ctx, &awseks.ListNodegroupsInput{ClusterName: &name, NextToken: next})
		if err != nil {
			return nil, classify("ListNodegroups", err)
		}
		names = append(names, out.Nodegroups...)
		if next = out.NextToken; next == nil {
			break
		}
	}
	sort.Strings(names)
	s.ngARN, s.ngStatus = map[string]string{}, map[string]types.NodegroupStatus{}
	groups := make([]v1.EKSNodeGroup, 0, len(names))
	for _, n := range names {
		out, err := s.api.DescribeNodegroup(ctx, &awseks.DescribeNodegroupInput{ClusterName: &name, NodegroupName: aws.String(n)})
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, classify("DescribeNodegroup", err)
		}
		ng := out.Nodegroup
		s.ngARN[n], s.ngStatus[n] = aws.ToString(ng.NodegroupArn), ng.Status
		switch ng.Status {
		case types.NodegroupStatusCreating, types.NodegroupStatusUpdating, types.NodegroupStatusDeleting:
			obs.Updating = true
			obs.Why = fmt.Sprintf("node group %s is %s", n, ng.Status)
		}
		if ng.Status == types.NodegroupStatusDeleting {
			continue // already on its way out
		}
		g := v1.EKSNodeGroup{
			Name: n, DiskSize: ng.DiskSize, Version: ng.Version, NodeRole: ng.NodeRole,
			Labels: orEmpty(ng.Labels), Tags: orEmpty(ng.Tags), Subnets: nonNil(ng.Subnets),
		}
		if len(ng.InstanceTypes) > 0 {
			g.InstanceType = aws.String(ng.InstanceTypes[0])
		}
		if sc := ng.ScalingConfig; sc != nil {
			g.DesiredSize, g.MinSize, g.MaxSize = sc.DesiredSize, sc.MinSize, sc.MaxSize
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// Create implements hosted.Session.
func (s *session) Create(ctx context.Context, _ *v1.Cluster, config map[string]any) (*hosted.Started, error) {
	cfg := &v1.EKSClusterConfig{}
	if err := hosted.FromTree(config, cfg); err != nil {
		return nil, err
	}
	in := &awseks.CreateClusterInput{
		Name:    &cfg.DisplayName,
		Version: cfg.KubernetesVersion,
		RoleArn: cfg.ServiceRole,
		ResourcesVpcConfig: &types.VpcConfigRequest{
			SubnetIds: cfg.Subnets, SecurityGroupIds: cfg.SecurityGroups,
			EndpointPublicAccess: cfg.PublicAccess, EndpointPrivateAccess: cfg.PrivateAccess,
			PublicAccessCidrs: cfg.PublicAccessSources,
		},
		Tags: cfg.Tags,
	}
	if cfg.LoggingTypes != nil {
		in.Logging = logging(cfg.LoggingTypes)
	}
	if _, err := s.api.CreateCluster(ctx, in); err != nil {
		return nil, classify("CreateCluster", err)
	}
	return &hosted.Started{What: "creating EKS cluster " + cfg.DisplayName}, nil
}

func logging(enabled []string) *types.Logging {
	var on, off []types.LogType
	for _, t := range LogTypes {
		if slices.Contains(enabled, t) {
			on = append(on, types.LogType(t))
		} else {
			off = append(off, types.LogType(t))
		}
	}
	l := &types.Logging{}
	if len(on) > 0 {
		l.ClusterLogging = append(l.ClusterLogging, types.LogSetup{Enabled: aws.Bool(true), Types: on})
	}
	if len(off) > 0 {
		l.ClusterLogging = append(l.ClusterLogging, types.LogSetup{Enabled: aws.Bool(false), Types: off})
	}
	return l
}

// Delete implements hosted.Session: node groups first (EKS refuses to delete a cluster that has
// any), then the cluster.
func (s *session) Delete(ctx context.Context, _ *v1.Cluster, obs *hosted.Observation) (bool, error) {
	if !obs.Exists {
		return true, nil
	}
	name := s.cfg.DisplayName
	if len(s.ngStatus) > 0 {
		for ng, st := range s.ngStatus {
			if st == types.NodegroupStatusDeleting {
				continue
			}
			_, err := s.api.DeleteNodegroup(ctx, &awseks.DeleteNodegroupInput{ClusterName: &name, NodegroupName: aws.String(ng)})
			if err != nil && !isNotFound(err) {
				if err := classify("DeleteNodegroup", err); !errors.Is(err, hosted.ErrBusy) {
					return false, err
				}
			}
		}
		return false, nil
	}
	if obs.Status == string(types.ClusterStatusDeleting) {
		return false, nil
	}
	_, err := s.api.DeleteCluster(ctx, &awseks.DeleteClusterInput{Name: &name})
	if isNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, classify("DeleteCluster", err)
	}
	return false, nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}
