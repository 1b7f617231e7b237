package eks

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// finished remembers, per cluster ARN, the update IDs ("id" or "nodegroup/id") already seen in
// a final state. ListUpdates returns a cluster's whole history; an update never leaves a final
// state, so each one is described once, not on every refresh. Bounded: past maxFinished
// clusters the memory is dropped and rebuilt (one DescribeUpdate per past update).
var finished = struct {
	sync.Mutex
	m map[string]map[string]struct{}
}{m: map[string]map[string]struct{}{}}

const maxFinished = 10000

func isFinished(arn, key string) bool {
	finished.Lock()
	defer finished.Unlock()
	_, ok := finished.m[arn][key]
	return ok
}

func markFinished(arn, key string) {
	finished.Lock()
	defer finished.Unlock()
	ids := finished.m[arn]
	if ids == nil {
		if len(finished.m) >= maxFinished {
			clear(finished.m)
		}
		ids = map[string]struct{}{}
		finished.m[arn] = ids
	}
	ids[key] = struct{}{}
}

// observeExternal finds updates in progress that drover did not start — from the console,
// Terraform or eksctl. EKS shows a cluster or node group ACTIVE for a while after accepting an
// update, so its status alone would let drover call the cluster idle, report it in sync, adopt
// the old values and push a conflicting change. Costs one ListUpdates for the cluster and one
// per active node group, plus one DescribeUpdate per update not yet seen finished.
func (s *session) observeExternal(ctx context.Context, c *v1.Cluster, obs *hosted.Observation) error {
	own := make(map[string]bool, len(c.Status.PendingOperations))
	for _, id := range c.Status.PendingOperations {
		own[id] = true
	}
	if err := s.externalUpdates(ctx, "", own, obs); err != nil {
		return err
	}
	for ng, st := range s.ngStatus {
		if st == types.NodegroupStatusCreating || st == types.NodegroupStatusDeleting {
			continue // no updates to find: drover's own create or delete, or on its way out
		}
		if err := s.externalUpdates(ctx, ng, own, obs); err != nil {
			return err
		}
	}
	return nil
}

// externalUpdates checks the updates of the cluster (ng empty) or of one node group.
func (s *session) externalUpdates(ctx context.Context, ng string, own map[string]bool, obs *hosted.Observation) error {
	name := s.cfg.DisplayName
	in := &awseks.ListUpdatesInput{Name: &name, MaxResults: aws.Int32(100)}
	if ng != "" {
		in.NodegroupName = aws.String(ng)
	}
	for {
		out, err := s.api.ListUpdates(ctx, in)
		if isNotFound(err) {
			return nil // the node group went away meanwhile
		}
		if err != nil {
			return classify("ListUpdates", err)
		}
		for _, id := range out.UpdateIds {
			key := id
			if ng != "" {
				key = ng + "/" + id
			}
			if own[key] || isFinished(s.arn, key) {
				continue
			}
			u, err := s.api.DescribeUpdate(ctx, &awseks.DescribeUpdateInput{Name: &name, UpdateId: aws.String(id), NodegroupName: in.NodegroupName})
			if isNotFound(err) {
				continue
			}
			if err != nil {
				return classify("DescribeUpdate", err)
			}
			if u.Update.Status != types.UpdateStatusInProgress {
				markFinished(s.arn, key)
				continue
			}
			what := fmt.Sprintf("EKS update %s (%s)", id, u.Update.Type)
			if ng != "" {
				what += " of node group " + ng
			}
			obs.Updating, obs.External = true, what
			obs.Why = what + " started outside drover is in progress"
		}
		if in.NextToken = out.NextToken; in.NextToken == nil {
			return nil
		}
	}
}
