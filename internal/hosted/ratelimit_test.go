package hosted

import (
	"testing"

	"golang.org/x/time/rate"
)

func TestLimitsPerProviderAndKey(t *testing.T) {
	l := &Limits{QPS: 10, Burst: 50, PerProvider: map[string]Rate{"aks": {QPS: 25, Burst: 250}, "gke": {}}}
	tests := []struct {
		key   string
		limit rate.Limit
		burst int
	}{
		{"eks/AKIA1/us-west-2", 10, 50},
		{"aks/sub-1", 25, 250},
		{"gke/project", rate.Inf, 0}, // QPS 0: unlimited
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			lt := l.Transport(tt.key).(*limitedTransport)
			if lt.lim.Limit() != tt.limit || lt.lim.Burst() != tt.burst {
				t.Fatalf("bucket %v/%d, want %v/%d", lt.lim.Limit(), lt.lim.Burst(), tt.limit, tt.burst)
			}
		})
	}
	if l.Transport("aks/sub-1") != l.Transport("aks/sub-1") || l.Transport("aks/sub-1") == l.Transport("aks/sub-2") {
		t.Fatal("want one bucket per key, shared by every cluster of that key")
	}
}
