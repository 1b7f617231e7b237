package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/droverhq/drover/internal/agent/manifests"
)

// Ports the agent's Deployment declares (internal/agent/manifests, charts/drover-agent) and
// drover agent listens on by default.
const (
	DefaultMetricsPort = manifests.MetricsPort
	DefaultHealthPort  = manifests.HealthPort
)

// serve starts the agent's HTTP endpoints for the whole life of Run, leader or not, registered
// or not (the controller manager exists only while the agent works): /metrics (controller-
// runtime's registry: the deployer's controller metrics, client-go's request metrics and
// drover's own) on o.MetricsAddr; /healthz (the process answers) and /readyz (the downstream
// API server answers) on o.HealthAddr. "" or "0" disables an address. The listeners are
// opened before serve returns, so a bad address fails Run at once.
func serve(ctx context.Context, o Options) error {
	mux := map[string]*http.ServeMux{}
	add := func(addr, path string, h http.Handler) {
		if addr == "" || addr == "0" {
			return
		}
		if mux[addr] == nil {
			mux[addr] = http.NewServeMux()
		}
		mux[addr].Handle(path, h)
	}
	add(o.MetricsAddr, "/metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	health := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}
	add(o.HealthAddr, "/healthz", http.StripPrefix("/healthz", health))
	add(o.HealthAddr, "/healthz/", http.StripPrefix("/healthz", health))
	ready := &healthz.Handler{Checks: map[string]healthz.Checker{"downstream": downstreamReachable(o)}}
	add(o.HealthAddr, "/readyz", http.StripPrefix("/readyz", ready))
	add(o.HealthAddr, "/readyz/", http.StripPrefix("/readyz", ready))
	for addr, m := range mux {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("agent endpoints: listen on %s: %w", addr, err)
		}
		srv := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				ctrl.LoggerFrom(ctx).Error(err, "Serving agent endpoints", "address", addr)
			}
		}()
	}
	return nil
}

// downstreamReachable is ready when the downstream API server answers: without it the agent
// can neither register nor apply anything.
func downstreamReachable(o Options) healthz.Checker {
	probe := downstreamProbe(o)
	return func(req *http.Request) error { return probe(req.Context()) }
}

// downstreamProbe asks the downstream API server for its version, within 5 s. The heartbeat
// reports its failures: the agent can check in while its own cluster's API server is down.
func downstreamProbe(o Options) func(context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfig(o.Config)
	return func(ctx context.Context) error {
		if err != nil {
			return fmt.Errorf("downstream discovery client: %w", err)
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw(); err != nil {
			return fmt.Errorf("this cluster's API server (%s) does not answer: %w", o.Config.Host, err)
		}
		return nil
	}
}
