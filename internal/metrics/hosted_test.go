package metrics

import (
	"net/http/httptest"
	"testing"
)

func TestOperation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://container.googleapis.com/v1/projects/p-1/locations/europe-west1/clusters/prod", "GET /v1/projects/{}/locations/{}/clusters/{}"},
		{"POST", "https://container.googleapis.com/v1/projects/p/locations/l/clusters/c:setResourceLabels", "POST /v1/projects/{}/locations/{}/clusters/{}:setResourceLabels"},
		{"GET", "https://container.googleapis.com/v1/projects/p/locations/l/operations", "GET /v1/projects/{}/locations/{}/operations"},
		{"PUT", "https://management.azure.com/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/c/agentPools/p?api-version=2025-01-01",
			"PUT /subscriptions/{}/resourceGroups/{}/providers/{}/managedClusters/{}/agentPools/{}"},
		{"GET", "http://127.0.0.1:4566/clusters/prod/node-groups/ng-1", "GET /clusters/{}/node-groups/{}"},
	} {
		if got := Operation(httptest.NewRequest(tc.method, tc.url, nil)); got != tc.want {
			t.Errorf("Operation(%s %s) = %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}
