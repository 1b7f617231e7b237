package cli

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/droverhq/drover/internal/server"
)

func newServerCommand() *cobra.Command {
	opts := server.Options{}
	var verbose bool
	var hostedOpts hostedOptions
	home, _ := os.UserHomeDir()
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run drover's controllers (on --kubeconfig, in-cluster, or an embedded control plane)",
		Long: `Run drover's controller manager.

With --kubeconfig, drover runs against that cluster; inside a pod, against its own cluster.
With neither, it starts an embedded control plane (etcd, kube-apiserver,
kube-controller-manager) under --data-dir and writes an admin kubeconfig to
<data-dir>/kubeconfig. State survives restarts; Ctrl-C stops everything it started.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			setupLogging(verbose)
			// The embedded control plane has no nodes, so an agent installed into it could never
			// run: registering it as "local" would only show a cluster waiting forever.
			if opts.Kubeconfig == "" && !inCluster() && !cmd.Flags().Changed("register-local") {
				hostedOpts.registerLocal = false
			}
			opts.Controllers = append(opts.Controllers, hostedOpts.controllers()...)
			return server.Run(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to run against (default: in-cluster, else embedded)")
	f.StringVar(&opts.DataDir, "data-dir", filepath.Join(home, ".drover"), "state of the embedded control plane")
	f.StringVar(&opts.BinDir, "bin-dir", server.DefaultBinDir(), "directory with the Kubernetes binaries for the embedded control plane (make tools)")
	f.IntVar(&opts.APIServerPort, "apiserver-port", 6443, "embedded kube-apiserver port on 127.0.0.1 (0 picks a free port)")
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", "127.0.0.1:8080", "address of /metrics (0 disables it)")
	f.StringVar(&opts.HealthAddr, "health-probe-bind-address", "127.0.0.1:8081", "address of /healthz and /readyz")
	f.BoolVar(&opts.LeaderElect, "leader-elect", true, "elect a leader so only one replica reconciles")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	hostedOpts.addFlags(f)
	return cmd
}

func setupLogging(verbose bool) {
	level := zapcore.InfoLevel
	if verbose {
		level = zapcore.DebugLevel
	}
	l := zap.New(zap.Level(level))
	ctrl.SetLogger(l)
}

func inCluster() bool {
	_, err := rest.InClusterConfig()
	return err == nil
}
