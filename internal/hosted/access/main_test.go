package access_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
	"github.com/droverhq/drover/test/envtest"
)

// One real kube-apiserver, started once, plays the downstream cluster: its token webhook
// points at a TokenReview endpoint that asks the simulators a test registered. It is the
// simulators' backend "one"; tests point some clusters at backend "elsewhere", which no
// API server serves, to present one cluster's token to another.
var (
	downstream *envtest.Cluster
	backend    = &simcore.Backend{Name: "one"}
	reviewers  = &simcore.Reviewers{}
)

func register(t *testing.T, r simcore.TokenReviewer) {
	t.Cleanup(reviewers.Add(r))
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	webhook := httptest.NewServer(simcore.TokenReviewHandler(reviewers))
	defer webhook.Close()
	// No cache: an expired token must be refused at once, not after the cache's 2 min.
	var err error
	downstream, err = envtest.Start("downstream", envtest.Options{
		TokenWebhook: &envtest.TokenWebhook{URL: webhook.URL + simcore.TokenReviewPath(backend.Name), CacheTTL: "0s"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = downstream.Stop() }()
	backend.Endpoint = downstream.Config.Host
	if !strings.Contains(backend.Endpoint, "://") {
		backend.Endpoint = "https://" + backend.Endpoint
	}
	backend.CAPEM = downstream.Config.CAData
	elsewhere.CAPEM = downstream.Config.CAData
	return m.Run()
}
