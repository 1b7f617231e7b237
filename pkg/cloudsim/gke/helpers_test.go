package gke_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/auth"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/googleapi"

	"github.com/droverhq/drover/pkg/cloudsim/gke"
)

const (
	project  = "drover-test"
	region   = "us-central1"
	saEmail  = "drover@drover-test.iam.gserviceaccount.com"
	waitFor  = 10 * time.Second
	pollTick = 5 * time.Millisecond
)

func parent(location string) string { return "projects/" + project + "/locations/" + location }

func clusterPath(location, name string) string { return parent(location) + "/clusters/" + name }

func poolPath(location, cluster, pool string) string {
	return clusterPath(location, cluster) + "/nodePools/" + pool
}

// newService returns an unmodified container/v1 client authenticated with a fresh key of
// email, granted the projects.
func newService(t *testing.T, ts *gke.TestServer, email string, projects ...string) *container.Service {
	t.Helper()
	key, err := ts.NewServiceAccountKey(email, projects...)
	if err != nil {
		t.Fatalf("NewServiceAccountKey: %v", err)
	}
	svc, err := container.NewService(t.Context(), ts.ClientOptions(key)...)
	if err != nil {
		t.Fatalf("container.NewService: %v", err)
	}
	return svc
}

// apiStatus returns the HTTP code and google.rpc status of an API error, or 0, "".
func apiStatus(err error) (int, string) {
	var herr *googleapi.Error
	if !errors.As(err, &herr) {
		return 0, ""
	}
	var body struct {
		Error struct {
			Status string `json:"status"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(herr.Body), &body)
	return herr.Code, body.Error.Status
}

// retrier is drover-style backoff for what the SDK does not retry: throttling, 5xx, dropped
// connections and failed token fetches. It counts the attempts that reached the API.
type retrier struct {
	attempts atomic.Int64 // calls answered by the API (success or API error)
	retries  atomic.Int64
}

func (rt *retrier) do(ctx context.Context, call func() error) error {
	backoff := 2 * time.Millisecond
	for {
		err := call()
		var herr *googleapi.Error
		if err == nil || errors.As(err, &herr) {
			rt.attempts.Add(1)
		}
		if !retryable(err) {
			return err
		}
		rt.retries.Add(1)
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

func retryable(err error) bool {
	if err == nil {
		return false
	}
	var herr *googleapi.Error
	if errors.As(err, &herr) {
		return herr.Code == http.StatusTooManyRequests || herr.Code >= 500
	}
	var aerr *auth.Error
	if errors.As(err, &aerr) && aerr.Response != nil {
		return aerr.Response.StatusCode == http.StatusTooManyRequests || aerr.Response.StatusCode >= 500
	}
	var uerr *url.Error
	return errors.As(err, &uerr)
}

// waitOp polls operations.get until the operation is DONE and fails the test otherwise.
func waitOp(t *testing.T, svc *container.Service, rt *retrier, location string, op *container.Operation) *container.Operation {
	t.Helper()
	done, err := pollOp(t.Context(), svc, rt, location, op)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// pollOp polls operations.get until the operation is DONE, for at most waitFor.
func pollOp(ctx context.Context, svc *container.Service, rt *retrier, location string, op *container.Operation) (*container.Operation, error) {
	ctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	tick := time.NewTicker(pollTick)
	defer tick.Stop()
	name := parent(location) + "/operations/" + op.Name
	for {
		var got *container.Operation
		err := rt.do(ctx, func() (err error) {
			got, err = svc.Projects.Locations.Operations.Get(name).Context(ctx).Do()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("operations.get %s: %w", op.Name, err)
		}
		if got.Status == "DONE" {
			if got.Error != nil {
				return nil, fmt.Errorf("operation %s (%s) failed: %s", got.Name, got.OperationType, got.Error.Message)
			}
			return got, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("operation %s (%s) still %s after %v", op.Name, op.OperationType, got.Status, waitFor)
		case <-tick.C:
		}
	}
}

func getCluster(t *testing.T, svc *container.Service, rt *retrier, location, name string) *container.Cluster {
	t.Helper()
	c, err := fetchCluster(t.Context(), svc, rt, location, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fetchCluster(ctx context.Context, svc *container.Service, rt *retrier, location, name string) (*container.Cluster, error) {
	var c *container.Cluster
	err := rt.do(ctx, func() (err error) {
		c, err = svc.Projects.Locations.Clusters.Get(clusterPath(location, name)).Context(ctx).Do()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("clusters.get %s: %w", name, err)
	}
	return c, nil
}

func findPool(c *container.Cluster, name string) *container.NodePool {
	for _, np := range c.NodePools {
		if np.Name == name {
			return np
		}
	}
	return nil
}
