package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// Hosted clusters (management.drover.io) and the cloud APIs behind them.
var (
	// HostedClusters counts hosted Clusters by provider (eks, aks, gke) and phase (creating,
	// importing, active, updating, deleting, failed; "pending" before the first pass).
	HostedClusters = NewTracker(namespace+"_hosted_clusters",
		"Hosted Clusters by provider and phase.", "provider", "phase")

	// HostedCredentials counts hosted Clusters by provider and the state of their cloud
	// credentials (valid, rejected, unusable, unknown) and the CredentialsValid condition's
	// reason. Kept by the hosted-cluster reconciler (internal/hosted.CredentialsState).
	HostedCredentials = NewTracker(namespace+"_hosted_credentials",
		"Hosted Clusters by provider, credentials state (valid, rejected, unusable, unknown) and the CredentialsValid condition's reason.",
		"provider", "state", "reason")

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

	// RefreshAge is, by provider, how long ago the least recently read hosted cluster was last
	// read from its provider, in seconds: the length of a refresh round as it really runs. It
	// stays below the refresh interval (plus jitter) while drover keeps up with every cluster,
	// and grows when the workers or the API budget cannot read them all in time.
	RefreshAge = NewOldest(namespace+"_hosted_refresh_age_seconds",
		"Seconds since the least recently read hosted cluster was read from its provider, by provider.", "provider")
)

// Hosted change kinds (HostedChanges' kind label).
const (
	ChangeConflict    = "conflict"
	ChangeAdoption    = "adoption"
	ChangeDriftRevert = "drift_revert"
)

func init() {
	register(HostedClusters, HostedCredentials, HostedChanges, CloudAPIRequests, RefreshDuration, RefreshAge, HostedFleet)
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

// Oldest is a gauge of ages by one label: for each label value, the time since the oldest of
// the times its objects (keys) were last set to, at scrape time. An object stops counting when
// it is deleted.
type Oldest struct {
	desc *prometheus.Desc
	now  func() time.Time

	mu   sync.Mutex
	objs map[string]oldestEntry
}

type oldestEntry struct {
	value string
	t     time.Time
}

// NewOldest returns an Oldest gauge named name with one label.
func NewOldest(name, help, label string) *Oldest {
	return &Oldest{desc: prometheus.NewDesc(name, help, []string{label}, nil), now: time.Now, objs: map[string]oldestEntry{}}
}

// Set records that key, under label value, was last refreshed at t.
func (o *Oldest) Set(key, value string, t time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.objs[key] = oldestEntry{value: value, t: t}
}

// Delete stops counting key.
func (o *Oldest) Delete(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.objs, key)
}

// Describe implements prometheus.Collector.
func (o *Oldest) Describe(ch chan<- *prometheus.Desc) { ch <- o.desc }

// Collect implements prometheus.Collector: one sample per label value with objects.
func (o *Oldest) Collect(ch chan<- prometheus.Metric) {
	oldest := map[string]time.Time{}
	o.mu.Lock()
	for _, e := range o.objs {
		if t, ok := oldest[e.value]; !ok || e.t.Before(t) {
			oldest[e.value] = e.t
		}
	}
	o.mu.Unlock()
	now := o.now()
	for v, t := range oldest {
		ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, max(now.Sub(t).Seconds(), 0), v)
	}
}

// HostedFleet counts hosted Clusters by provider and their place in the fleet (the join
// controller's status.fleet): state is the v1alpha1.FleetPlace (agent_ready, joined, waiting,
// not_joined, leaving, out), reason the Joined condition's reason.
var HostedFleet = NewTracker(namespace+"_hosted_fleet",
	"Hosted clusters by provider, place in the fleet (agent_ready, joined, waiting, not_joined, leaving, out) and the Joined condition's reason.",
	"provider", "state", "reason")
