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
	var verbose, installCRDs bool
	var caFile string
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
			// Only in a pod is "the cluster drover runs in" the one it manages and able to run an
			// agent: the embedded control plane has no nodes (the local cluster would wait
			// forever), and with --kubeconfig drover may run anywhere.
			if !cmd.Flags().Changed("register-local") {
				hostedOpts.registerLocal = opts.Kubeconfig == "" && inCluster()
			}
			opts.SkipCRDInstall = !installCRDs
			if caFile != "" {
				ca, err := server.ReadCAFile(caFile)
				if err != nil {
					return err
				}
				opts.APIServerCA = ca
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
	f.BoolVar(&installCRDs, "install-crds", true, "apply drover's CRDs at start (false: Helm or GitOps owns them)")
	f.StringVar(&opts.APIServerURL, "api-server-url", "", "management API URL that agents of registered clusters connect to, written to the registration ConfigMap (default with the embedded control plane: its own URL)")
	f.StringVar(&caFile, "api-server-ca", "", "file with the PEM CA bundle agents use to verify --api-server-url (default with the embedded control plane: its own CA)")
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
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return false
	}
	_, err := rest.InClusterConfig()
	return err == nil
}
