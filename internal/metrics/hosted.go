package metrics

import (
	"net/http"
	"strconv"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// Hosted clusters (management.drover.io) and the cloud APIs behind them.
var (
	// HostedClusters counts hosted Clusters by provider (eks, aks, gke) and phase (creating,
	// importing, active, updating, deleting, failed; "pending" before the first pass).
	HostedClusters = NewTracker(namespace+"_hosted_clusters",
		"Hosted Clusters by provider and phase.", "provider", "phase")

	// HostedChanges counts what a sync found at the provider, by provider and kind:
	// "conflict" (a field changed both in drover and at the provider: drover's value wins),
	// "adoption" (a console/Terraform change adopted into the config), "drift_revert" (a
	// provider-side change reverted under syncPolicy enforce). One per field and finding, as
	// the Events of the same names.
	HostedChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "hosted_changes_total",
		Help: "Fields found changed at the provider, by provider and kind (conflict, adoption, drift_revert).",
	}, []string{"provider", "kind"})

	// CloudAPIRequests counts HTTP requests drover's SDK clients sent to a provider (retries
	// included), by provider, operation and HTTP status code ("error" when no response came).
	// 429 answers are throttles. The operation is the SDK's operation name where the SDK
	// gives one (EKS: DescribeCluster, ListUpdates, ...), otherwise the method and the path
	// with every name or ID replaced by {} (GET /projects/{}/locations/{}/clusters/{}).
	CloudAPIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "cloud_api_requests_total",
		Help: "Requests to cloud provider APIs, by provider, operation and HTTP status code (error: no response).",
	}, []string{"provider", "operation", "code"})

	// RefreshDuration is how long reading one hosted cluster's state from its provider took
	// (one refresh: every call of the pass's observation), in seconds, by provider.
	RefreshDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "hosted_refresh_duration_seconds",
		Help:    "Time to read one hosted cluster's state from its provider, by provider.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"provider"})
)

// Hosted change kinds (HostedChanges' kind label).
const (
	ChangeConflict    = "conflict"
	ChangeAdoption    = "adoption"
	ChangeDriftRevert = "drift_revert"
)

func init() {
	register(HostedClusters, HostedChanges, CloudAPIRequests, RefreshDuration)
}

// ObserveCloudRequest counts one request of provider's SDK and its outcome.
func ObserveCloudRequest(provider string, req *http.Request, resp *http.Response, err error) {
	code := "error"
	if err == nil && resp != nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	CloudAPIRequests.WithLabelValues(provider, Operation(req), code).Inc()
}

// Operation names req's API operation with bounded cardinality: the AWS SDK's operation name,
// else the method and the path with every other segment (names and IDs; collections are kept)
// as {}, after a leading API version (v1, v1beta1). A custom method after ':' is kept:
// POST /v1/projects/{}/locations/{}/clusters/{}:setResourceLabels.
func Operation(req *http.Request) string {
	if op := awsmiddleware.GetOperationName(req.Context()); op != "" {
		return op
	}
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	start := 0
	if len(segs) > 0 && isVersion(segs[0]) {
		start = 1
	}
	for i := start; i < len(segs); i++ {
		if (i-start)%2 == 1 {
			custom := ""
			if _, m, ok := strings.Cut(segs[i], ":"); ok {
				custom = ":" + m
			}
			segs[i] = "{}" + custom
		}
	}
	return req.Method + " /" + strings.Join(segs, "/")
}

func isVersion(s string) bool {
	return len(s) >= 2 && len(s) <= 10 && s[0] == 'v' && s[1] >= '0' && s[1] <= '9'
}
