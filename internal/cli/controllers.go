package cli

import (
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/hosted/gke"
	migrationcontroller "github.com/droverhq/drover/internal/migration/controller"
)

// hostedOptions are the hosted-cluster sync settings of `drover server`.
type hostedOptions struct {
	eksRefresh   time.Duration
	jitter       float64
	pollInterval time.Duration
	eksQPS       float64
	eksBurst     int
}

func (o *hostedOptions) addFlags(f *pflag.FlagSet) {
	f.DurationVar(&o.eksRefresh, "eks-refresh-interval", 300*time.Second, "how often an idle EKS cluster is re-read from AWS")
	f.Float64Var(&o.jitter, "refresh-jitter", 0.1, "fraction of the refresh interval added at random, so clusters do not refresh in the same second")
	f.DurationVar(&o.pollInterval, "hosted-poll-interval", 30*time.Second, "how often a hosted cluster with work in progress is re-read")
	f.Float64Var(&o.eksQPS, "eks-api-qps", 10, "EKS API requests per second per AWS account and region (token bucket refill)")
	f.IntVar(&o.eksBurst, "eks-api-burst", 50, "EKS API token bucket size per AWS account and region")
}

func (o *hostedOptions) controllers() []func(ctrl.Manager) error {
	return []func(ctrl.Manager) error{
		func(mgr ctrl.Manager) error {
			r := &hosted.Reconciler{
				Client:          mgr.GetClient(),
				Providers:       []hosted.Provider{eks.Provider{}, gke.Provider{}, aks.Provider{}},
				Recorder:        mgr.GetEventRecorder("drover-hosted"),
				RefreshInterval: o.eksRefresh,
				Jitter:          o.jitter,
				PollInterval:    o.pollInterval,
				Limits:          &hosted.Limits{QPS: o.eksQPS, Burst: o.eksBurst},
			}
			return r.SetupWithManager(mgr)
		},
		func(mgr ctrl.Manager) error {
			return (&migrationcontroller.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
		},
	}
}
