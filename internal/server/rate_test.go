package server

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// TestWithManagementRate: a configuration without a client rate (in-cluster, a kubeconfig)
// gets drover's, not client-go's default of 5 requests per second; one with a rate or a rate
// limiter of its own (the embedded control plane's, a caller's) keeps it.
func TestWithManagementRate(t *testing.T) {
	limiter := flowcontrol.NewFakeAlwaysRateLimiter()
	for _, tc := range []struct {
		name       string
		cfg        *rest.Config
		qps        float32
		burst      int
		rateLimits bool
	}{
		{name: "none set", cfg: &rest.Config{}, qps: ManagementQPS, burst: ManagementBurst},
		{name: "own rate", cfg: &rest.Config{QPS: 200, Burst: 400}, qps: 200, burst: 400},
		{name: "own limiter", cfg: &rest.Config{RateLimiter: limiter}, qps: 0, burst: 0, rateLimits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			WithManagementRate(tc.cfg)
			if tc.cfg.QPS != tc.qps || tc.cfg.Burst != tc.burst || (tc.cfg.RateLimiter != nil) != tc.rateLimits {
				t.Errorf("QPS %v burst %d limiter %v, want %v %d %v", tc.cfg.QPS, tc.cfg.Burst, tc.cfg.RateLimiter != nil, tc.qps, tc.burst, tc.rateLimits)
			}
		})
	}
}
