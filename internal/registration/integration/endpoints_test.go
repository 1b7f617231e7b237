package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/agent"
)

// freeAddr is a free 127.0.0.1 address for a server to listen on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func get(t *testing.T, url string) (int, string, error) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test against a local server
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestAgentEndpoints: the agent serves /healthz and /readyz (its Deployment's probes) and
// /metrics, with the metrics of its BundleDeployment controller once it works.
func TestAgentEndpoints(t *testing.T) {
	t.Parallel()
	ws := mgmt.Namespace(t)
	metricsAddr, healthAddr := freeAddr(t), freeAddr(t)
	ns := downstreamNamespace(t, newToken(t, ws, "token", time.Hour))
	startAgent(t, downstream.Config, ns, "endpoints-"+ws, func(o *agent.Options) { o.MetricsAddr, o.HealthAddr = metricsAddr, healthAddr })
	for _, path := range []string{"/healthz", "/readyz"} {
		eventually(t, 30*time.Second, func() error {
			code, body, err := get(t, "http://"+healthAddr+path)
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("GET %s: %d %q %w", path, code, body, err)
			}
			return nil
		})
	}
	credential(t, downstream.Client, ns)
	eventually(t, 30*time.Second, func() error {
		code, body, err := get(t, "http://"+metricsAddr+"/metrics")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("GET /metrics: %d %w", code, err)
		}
		if want := `controller_runtime_active_workers{controller="bundledeployment"}`; !strings.Contains(body, want) {
			return fmt.Errorf("/metrics lacks %s", want)
		}
		return nil
	})
}
