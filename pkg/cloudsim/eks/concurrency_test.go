package eks_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// TestConcurrentClients has several clients (drover replicas, "the console") change and read
// one cluster at once while time passes. The simulator must keep EKS's invariant — one update
// at a time, every accepted update eventually Successful — and stay race-free (run with -race).
func TestConcurrentClients(t *testing.T) {
	e := newEnv(t)
	const name = "shared"
	e.createCluster(t, name, "1.33")
	e.settle()
	arn := e.describe(t, name).Arn

	var accepted atomic.Int64
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			ctx := t.Context()
			for i := range 20 {
				switch (w + i) % 5 {
				case 0:
					if _, err := e.client.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String(name)}); err != nil {
						t.Errorf("DescribeCluster: %v", err)
					}
				case 1:
					tags := map[string]string{fmt.Sprintf("w%d", w): fmt.Sprint(i)}
					if _, err := e.client.TagResource(ctx, &awseks.TagResourceInput{ResourceArn: arn, Tags: tags}); err != nil {
						t.Errorf("TagResource: %v", err)
					}
				case 2:
					if _, err := e.client.ListClusters(ctx, &awseks.ListClustersInput{}); err != nil {
						t.Errorf("ListClusters: %v", err)
					}
				case 3:
					_, err := e.client.UpdateClusterConfig(ctx, &awseks.UpdateClusterConfigInput{
						Name: aws.String(name), Logging: logging(i%2 == 0, types.LogTypeApi, []types.LogType{types.LogTypeAudit, types.LogTypeScheduler}[w%2]),
					})
					var inUse *types.ResourceInUseException
					var noop *types.InvalidParameterException
					switch {
					case err == nil:
						accepted.Add(1)
					case !errors.As(err, &inUse) && !errors.As(err, &noop):
						t.Errorf("UpdateClusterConfig: %v", err)
					}
				case 4:
					e.clock.Advance(delay / 3)
				}
			}
		})
	}
	wg.Wait()

	e.settle()
	c := e.describe(t, name)
	if c.Status != types.ClusterStatusActive || len(c.Tags) != 6 {
		t.Errorf("after the storm: status %s, tags %v", c.Status, c.Tags)
	}
	list, err := e.client.ListUpdates(t.Context(), &awseks.ListUpdatesInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("ListUpdates: %v", err)
	}
	if int64(len(list.UpdateIds)) != accepted.Load() {
		t.Errorf("%d updates recorded, %d accepted", len(list.UpdateIds), accepted.Load())
	}
	st, _ := e.srv.Cluster(region, name)
	for i, u := range st.Updates {
		if u.Status != "Successful" {
			t.Errorf("update %s is %s after settling", u.ID, u.Status)
		}
		if i > 0 && u.CreatedAt.Before(st.Updates[i-1].CreatedAt.Add(delay)) {
			t.Errorf("update %s started %v after the previous one, before it could have finished", u.ID, u.CreatedAt.Sub(st.Updates[i-1].CreatedAt))
		}
	}
}
