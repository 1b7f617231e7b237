package integration

import (
	"github.com/droverhq/drover/internal/metrics/metricstest"
	"testing"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
)

// metric reads a metric as drover server serves it.
var metric = metricstest.Value

// TestHostedMetrics: after an EKS cluster is created, changed in the console and in drover at
// once (a conflict) and in the console alone (adopted), the hosted metrics count the cluster
// active, the conflict and the adoption, the SDK's calls by operation and status code, and the
// refreshes.
func TestHostedMetrics(t *testing.T) {
	t.Parallel()
	eks := map[string]string{"provider": "eks"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"provider": "eks"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	conflictsBefore := metric(t, "drover_hosted_changes_total", with("kind", "conflict"))
	adoptionsBefore := metric(t, "drover_hosted_changes_total", with("kind", "adoption"))
	describesBefore := metric(t, "drover_cloud_api_requests_total", with("operation", "DescribeCluster", "code", "200"))
	refreshesBefore := metric(t, "drover_hosted_refresh_duration_seconds", eks)

	e := newEKSEnv(t)
	e.create(created("metrics"))
	st := e.simCluster("metrics")
	e.console.tag(t, st.ARN, map[string]string{"team": "console"})
	e.edit("metrics", func(c *v1.EKSClusterConfig) { c.Tags["team"] = "drover" })
	e.settle("metrics")
	e.console.tag(t, st.ARN, map[string]string{"owner": "console"})
	e.refresh("metrics")

	if got := metric(t, "drover_hosted_clusters", with("phase", string(v1.PhaseActive))); got < 1 {
		t.Errorf("drover_hosted_clusters{provider=eks,phase=active} = %v, want at least 1", got)
	}
	if got := metric(t, "drover_hosted_changes_total", with("kind", "conflict")); got < conflictsBefore+1 {
		t.Errorf("conflicts %v, want at least %v", got, conflictsBefore+1)
	}
	if got := metric(t, "drover_hosted_changes_total", with("kind", "adoption")); got < adoptionsBefore+1 {
		t.Errorf("adoptions %v, want at least %v", got, adoptionsBefore+1)
	}
	if got := metric(t, "drover_cloud_api_requests_total", with("operation", "DescribeCluster", "code", "200")); got < describesBefore+2 {
		t.Errorf("drover_cloud_api_requests_total{provider=eks,operation=DescribeCluster,code=200} = %v, want at least %v", got, describesBefore+2)
	}
	if got := metric(t, "drover_hosted_refresh_duration_seconds", eks); got < refreshesBefore+2 {
		t.Errorf("drover_hosted_refresh_duration_seconds{provider=eks} count = %v, want at least %v", got, refreshesBefore+2)
	}
}
