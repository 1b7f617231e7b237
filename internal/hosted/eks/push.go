package eks

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// Fields EKS cannot change after creation.
var (
	immutableCluster   = []string{"subnets", "securityGroups", "serviceRole"}
	immutableNodeGroup = []string{"instanceType", "diskSize", "subnets", "nodeRole"}
)

func typed(tree map[string]any) (*v1.EKSClusterConfig, error) {
	cfg := &v1.EKSClusterConfig{}
	return cfg, hosted.FromTree(tree, cfg)
}

func group(cfg *v1.EKSClusterConfig, name string) *v1.EKSNodeGroup {
	for i := range cfg.NodeGroups {
		if cfg.NodeGroups[i].Name == name {
			return &cfg.NodeGroups[i]
		}
	}
	return nil
}

// CheckPush implements hosted.Session: refuse what EKS would refuse, before sending anything.
func (s *session) CheckPush(push []merge.Change, effective, upstream map[string]any) error {
	eff, err := typed(effective)
	if err != nil {
		return err
	}
	up, err := typed(upstream)
	if err != nil {
		return err
	}
	bad := func(field, reason, format string, args ...any) error {
		return &hosted.FieldError{Field: "eksConfig." + field, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	for _, ch := range push {
		top := ch.Path.Top()
		switch {
		case top == "kubernetesVersion":
			want, _ := minor(aws.ToString(eff.KubernetesVersion))
			have, _ := minor(aws.ToString(up.KubernetesVersion))
			if want < have {
				return bad(top, v1.ReasonVersionDowngrade, "EKS cannot downgrade: the cluster runs %s, the config asks for %s; set %s or later", aws.ToString(up.KubernetesVersion), aws.ToString(eff.KubernetesVersion), aws.ToString(up.KubernetesVersion))
			}
			if want > have+1 {
				return bad(top, v1.ReasonVersionSkip, "EKS upgrades one minor version at a time: the cluster runs %s, so set 1.%d first, then %s", aws.ToString(up.KubernetesVersion), have+1, aws.ToString(eff.KubernetesVersion))
			}
		case slices.Contains(immutableCluster, top):
			return bad(top, v1.ReasonImmutableField, "EKS cannot change %s after creation (the cluster has %s); revert the change or create a new cluster", top, show(upstream[top]))
		case top == "nodeGroups" && len(ch.Path) >= 2:
			name := ch.Path[1].Key
			f := fmt.Sprintf("nodeGroups[%s]", name)
			ng, existing := group(eff, name), group(up, name)
			switch {
			case ng == nil: // deletion
			case existing == nil: // creation
				if aws.ToString(ng.NodeRole) == "" {
					return bad(f+".nodeRole", v1.ReasonMissingField, "required to create node group %s: the ARN of the node IAM role", name)
				}
				if len(ng.Subnets) == 0 && len(eff.Subnets) == 0 {
					return bad(f+".subnets", v1.ReasonMissingField, "required to create node group %s", name)
				}
			case len(ch.Path) >= 3 && slices.Contains(immutableNodeGroup, ch.Path[2].Field):
				return bad(f+"."+ch.Path[2].Field, v1.ReasonImmutableField, "EKS cannot change %s of an existing node group; create a new node group instead", ch.Path[2].Field)
			case len(ch.Path) >= 3 && ch.Path[2].Field == "version":
				nv, _ := minor(aws.ToString(ng.Version))
				ov, _ := minor(aws.ToString(existing.Version))
				cv, _ := minor(aws.ToString(eff.KubernetesVersion))
				if nv < ov {
					return bad(f+".version", v1.ReasonVersionDowngrade, "EKS cannot downgrade node group %s from %s to %s", name, aws.ToString(existing.Version), aws.ToString(ng.Version))
				}
				if nv > cv {
					return bad(f+".version", v1.ReasonNodeVersionTooNew, "node group version %s is newer than the cluster's %s: a node group never runs a newer version than its cluster (to upgrade, raise eksConfig.kubernetesVersion first; EKS cannot downgrade a cluster)", aws.ToString(ng.Version), aws.ToString(eff.KubernetesVersion))
				}
			}
		}
	}
	return nil
}

func show(v any) string { return fmt.Sprint(v) }

// Push implements hosted.Session. Tags are changed synchronously; then at most one EKS update
// is started, in the order EKS accepts them: version, endpoint access, CIDRs, logging, then
// node groups (deletions, creations, version, scaling and labels).
func (s *session) Push(ctx context.Context, _ *v1.Cluster, push []merge.Change, effective, _ map[string]any) ([]merge.Change, *hosted.Started, error) {
	eff, err := typed(effective)
	if err != nil {
		return nil, nil, err
	}
	name := s.cfg.DisplayName
	var done []merge.Change

	// Synchronous: tags on the cluster and on existing node groups.
	if tags := merge.Under(push, "tags"); len(tags) > 0 {
		if err := s.retag(ctx, s.arn, tags); err != nil {
			return done, nil, err
		}
		done = append(done, tags...)
	}
	for _, ch := range merge.Under(push, "nodeGroups") {
		if len(ch.Path) >= 4 && ch.Path[2].Field == "tags" && s.ngARN[ch.Path[1].Key] != "" {
			if err := s.retag(ctx, s.ngARN[ch.Path[1].Key], []merge.Change{ch}); err != nil {
				return done, nil, err
			}
			done = append(done, ch)
		}
	}

	start := func(op string, handled []merge.Change, id string, err error) ([]merge.Change, *hosted.Started, error) {
		if err != nil {
			return done, nil, classify(op, err)
		}
		return append(done, handled...), &hosted.Started{ID: id, What: fmt.Sprintf("%s on EKS cluster %s (%s)", op, name, merge.Describe(handled))}, nil
	}

	if ch := merge.Under(push, "kubernetesVersion"); len(ch) > 0 {
		out, err := s.api.UpdateClusterVersion(ctx, &awseks.UpdateClusterVersionInput{Name: &name, Version: eff.KubernetesVersion})
		return start("UpdateClusterVersion", ch, updateID(out, err), err)
	}
	access := append(merge.Under(push, "publicAccess"), merge.Under(push, "privateAccess")...)
	cidrs := merge.Under(push, "publicAccessSources")
	if len(access) > 0 || len(cidrs) > 0 {
		vpc := &types.VpcConfigRequest{}
		if len(access) > 0 {
			vpc.EndpointPublicAccess, vpc.EndpointPrivateAccess = eff.PublicAccess, eff.PrivateAccess
		}
		if len(cidrs) > 0 {
			vpc.PublicAccessCidrs = eff.PublicAccessSources
		}
		out, err := s.api.UpdateClusterConfig(ctx, &awseks.UpdateClusterConfigInput{Name: &name, ResourcesVpcConfig: vpc})
		return start("UpdateClusterConfig", append(access, cidrs...), updateConfigID(out, err), err)
	}
	if ch := merge.Under(push, "loggingTypes"); len(ch) > 0 {
		out, err := s.api.UpdateClusterConfig(ctx, &awseks.UpdateClusterConfigInput{Name: &name, Logging: logging(eff.LoggingTypes)})
		return start("UpdateClusterConfig", ch, updateConfigID(out, err), err)
	}

	byGroup := map[string][]merge.Change{}
	var order []string
	for _, ch := range merge.Under(push, "nodeGroups") {
		if len(ch.Path) < 2 || merge.Has(done, ch.Path) {
			continue
		}
		n := ch.Path[1].Key
		if _, ok := byGroup[n]; !ok {
			order = append(order, n)
		}
		byGroup[n] = append(byGroup[n], ch)
	}
	// Deletions first (they free capacity and names), then creations, then updates.
	for _, n := range order {
		if group(eff, n) == nil {
			_, err := s.api.DeleteNodegroup(ctx, &awseks.DeleteNodegroupInput{ClusterName: &name, NodegroupName: aws.String(n)})
			if isNotFound(err) {
				err = nil
			}
			return start("DeleteNodegroup "+n, byGroup[n], "", err)
		}
	}
	for _, n := range order {
		if _, exists := s.ngARN[n]; !exists {
			ng := group(eff, n)
			in := &awseks.CreateNodegroupInput{
				ClusterName: &name, NodegroupName: aws.String(n), NodeRole: ng.NodeRole, Subnets: ng.Subnets,
				DiskSize: ng.DiskSize, Labels: ng.Labels, Tags: ng.Tags, Version: ng.Version,
				ScalingConfig: &types.NodegroupScalingConfig{DesiredSize: ng.DesiredSize, MinSize: ng.MinSize, MaxSize: ng.MaxSize},
			}
			if len(in.Subnets) == 0 {
				in.Subnets = eff.Subnets
			}
			if ng.InstanceType != nil {
				in.InstanceTypes = []string{*ng.InstanceType}
			}
			_, err := s.api.CreateNodegroup(ctx, in)
			return start("CreateNodegroup "+n, byGroup[n], "", err)
		}
	}
	for _, n := range order {
		ng := group(eff, n)
		var version, config []merge.Change
		for _, ch := range byGroup[n] {
			if len(ch.Path) < 3 {
				continue
			}
			switch ch.Path[2].Field {
			case "version":
				version = append(version, ch)
			case "desiredSize", "minSize", "maxSize", "labels":
				config = append(config, ch)
			}
		}
		if len(version) > 0 {
			out, err := s.api.UpdateNodegroupVersion(ctx, &awseks.UpdateNodegroupVersionInput{ClusterName: &name, NodegroupName: aws.String(n), Version: ng.Version})
			var id string
			if err == nil && out.Update != nil {
				id = n + "/" + aws.ToString(out.Update.Id)
			}
			return start("UpdateNodegroupVersion "+n, version, id, err)
		}
		if len(config) > 0 {
			in := &awseks.UpdateNodegroupConfigInput{ClusterName: &name, NodegroupName: aws.String(n)}
			labels := &types.UpdateLabelsPayload{AddOrUpdateLabels: map[string]string{}}
			for _, ch := range config {
				switch ch.Path[2].Field {
				case "labels":
					if len(ch.Path) < 4 {
						continue
					}
					k := ch.Path[3].Key
					if v, ok := ng.Labels[k]; ok {
						labels.AddOrUpdateLabels[k] = v
					} else {
						labels.RemoveLabels = append(labels.RemoveLabels, k)
					}
				default:
					in.ScalingConfig = &types.NodegroupScalingConfig{DesiredSize: ng.DesiredSize, MinSize: ng.MinSize, MaxSize: ng.MaxSize}
				}
			}
			if len(labels.AddOrUpdateLabels) > 0 || len(labels.RemoveLabels) > 0 {
				if len(labels.AddOrUpdateLabels) == 0 {
					labels.AddOrUpdateLabels = nil
				}
				in.Labels = labels
			}
			out, err := s.api.UpdateNodegroupConfig(ctx, in)
			var id string
			if err == nil && out.Update != nil {
				id = n + "/" + aws.ToString(out.Update.Id)
			}
			return start("UpdateNodegroupConfig "+n, config, id, err)
		}
	}
	return done, nil, nil
}

func (s *session) retag(ctx context.Context, arn string, changes []merge.Change) error {
	set := map[string]string{}
	var remove []string
	for _, ch := range changes {
		key := ch.Path[len(ch.Path)-1].Key
		if ch.HasConfig {
			set[key] = fmt.Sprint(ch.Config)
		} else {
			remove = append(remove, key)
		}
	}
	if len(set) > 0 {
		if _, err := s.api.TagResource(ctx, &awseks.TagResourceInput{ResourceArn: &arn, Tags: set}); err != nil {
			return classify("TagResource", err)
		}
	}
	if len(remove) > 0 {
		if _, err := s.api.UntagResource(ctx, &awseks.UntagResourceInput{ResourceArn: &arn, TagKeys: remove}); err != nil {
			return classify("UntagResource", err)
		}
	}
	return nil
}

func updateID(out *awseks.UpdateClusterVersionOutput, err error) string {
	if err != nil || out.Update == nil {
		return ""
	}
	return aws.ToString(out.Update.Id)
}

func updateConfigID(out *awseks.UpdateClusterConfigOutput, err error) string {
	if err != nil || out.Update == nil {
		return ""
	}
	return aws.ToString(out.Update.Id)
}
