package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/droverhq/drover/internal/gitrepo/webhook"
	"github.com/droverhq/drover/internal/server"
)

func newServerCommand(k *kubeOptions, logs *logOptions) *cobra.Command {
	opts := server.Options{}
	var installCRDs, embedded, demoMode bool
	var caFile string
	var hostedOpts hostedOptions
	var ui uiOptions
	webhookOpts := webhook.Options{SecretNamespace: server.SystemNamespace}
	home, _ := os.UserHomeDir()
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run drover's controllers (on an existing cluster, or an embedded control plane)",
		Long: `Run drover's controller manager.

drover chooses the cluster explicitly and says which on its first line of output:

  --embedded        start an embedded control plane (etcd, kube-apiserver,
                    kube-controller-manager) under --data-dir and write an admin kubeconfig
                    to <data-dir>/kubeconfig. State survives restarts; Ctrl-C stops
                    everything it started.
  --embedded=false  run against an existing cluster: --kubeconfig, $KUBECONFIG,
                    ~/.kube/config or the pod's service account, like kubectl.
  neither           existing cluster when --kubeconfig or $KUBECONFIG is set or drover runs
                    in a pod; embedded otherwise. A ~/.kube/config alone never makes drover
                    install itself into that cluster: pass --embedded=false for it.`,
		Example: `  # embedded control plane for trying drover out
  drover server --embedded --data-dir .drover
  # against the cluster of a kubeconfig context
  drover server --kubeconfig ~/.kube/config --context prod-mgmt --leader-elect=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := hostedOpts.agentRolloutBudget(); err != nil {
				return err
			}
			setMemoryLimit()
			mode, err := serverCluster{why: "--demo"}, error(nil)
			if demoMode {
				stop, err := demoServer(cmd, &opts, &hostedOpts, &ui, nil)
				if err != nil {
					return err
				}
				defer stop()
			} else if mode, err = chooseServerCluster(cmd, k, embedded); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), mode.line(opts.DataDir))
			if mode.target != nil {
				if opts.AdvertiseAddress != "" {
					return fmt.Errorf("--advertise-address applies to the embedded control plane only: on an existing cluster give agents its address with --api-server-url")
				}
				if opts.RESTConfig, err = probe(cmd.Context(), mode.target); err != nil {
					return err
				}
			} else {
				opts.Embedded = true
			}
			// Only in a pod is "the cluster drover runs in" the one it manages and able to run an
			// agent: the embedded control plane has no nodes (the local cluster would wait
			// forever), and with --kubeconfig drover may run anywhere.
			if !cmd.Flags().Changed("register-local") {
				hostedOpts.registerLocal = mode.target != nil && mode.target.Source == inClusterSource
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
			if webhookOpts.Addr != "" && webhookOpts.Addr != "0" {
				opts.Controllers = append(opts.Controllers, webhook.Controllers(webhookOpts))
			}
			dash, err := ui.controllers(cmd.OutOrStdout())
			if err != nil {
				return err
			}
			opts.Controllers = append(opts.Controllers, dash...)
			return server.Run(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&demoMode, "demo", false, "start a demo on an embedded control plane: the EKS, AKS and GKE simulators with hosted clusters (one with a console change adopted, one with a conflict), two kwok-backed downstream clusters with running agents and a sample Bundle, playing RKE2 on AWS for two cloud-provider migrations (one succeeds, one fails a verification), and the web dashboard (--ui-address, default 127.0.0.1 on a free port, opened with the printed URL); --data-dir (default $TMPDIR/drover-demo) is deleted on exit")
	f.BoolVar(&embedded, "embedded", false, "true: start an embedded control plane; false: run against --kubeconfig/$KUBECONFIG/~/.kube/config/in-cluster (default: embedded unless --kubeconfig, $KUBECONFIG or a pod's service account)")
	f.StringVar(&opts.DataDir, "data-dir", filepath.Join(home, ".drover"), "state of the embedded control plane")
	f.StringVar(&opts.BinDir, "bin-dir", server.DefaultBinDir(), "directory with the Kubernetes binaries for the embedded control plane (make tools)")
	f.IntVar(&opts.APIServerPort, "apiserver-port", 6443, "embedded kube-apiserver port on 127.0.0.1 (0 picks a free port)")
	f.StringVar(&opts.AdvertiseAddress, "advertise-address", "", "an IP address of this machine that downstream clusters reach: the embedded kube-apiserver also listens there (every interface) and agents register at it (default: 127.0.0.1 only, for agents on this machine)")
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", "127.0.0.1:8080", "address of /metrics (0 disables it)")
	f.StringVar(&opts.HealthAddr, "health-probe-bind-address", "127.0.0.1:8081", "address of /healthz and /readyz")
	f.BoolVar(&opts.LeaderElect, "leader-elect", true, "elect a leader so only one replica reconciles")
	f.BoolVar(&installCRDs, "install-crds", true, "apply drover's CRDs and admission policy at start (false: Helm or GitOps owns them)")
	f.StringVar(&opts.APIServerURL, "api-server-url", "", "management API URL that agents of registered clusters connect to, written to the registration ConfigMap (default with the embedded control plane: its own URL)")
	f.StringVar(&caFile, "api-server-ca", "", "file with the PEM CA bundle agents use to verify --api-server-url (default with the embedded control plane: its own CA)")
	f.StringVar(&webhookOpts.Addr, "webhook-bind-address", "", "address of the Git push webhook receiver (GitHub, GitLab, Gitea/Forgejo, Bitbucket), e.g. :8090 (default: off; see docs/gitops.md)")
	f.StringVar(&webhookOpts.SecretName, "webhook-secret", webhook.DefaultSecretName, "Secret in "+server.SystemNamespace+" with the webhook secrets, one key per provider: github, gitlab, gitea, bitbucket")
	f.Float64Var(&webhookOpts.RateLimit, "webhook-rate-limit", webhook.DefaultRateLimit, "webhook deliveries per second one replica accepts past the cheap checks, signed or not; the excess is answered 429")
	f.IntVar(&webhookOpts.RateBurst, "webhook-rate-burst", webhook.DefaultRateBurst, "webhook deliveries one replica accepts at once above --webhook-rate-limit")
	f.IntVar(&webhookOpts.MaxInFlight, "webhook-max-in-flight", webhook.DefaultMaxInFlight, "webhook deliveries one replica processes at once; more are answered 429")
	logs.addZapFlags(cmd)
	hostedOpts.addFlags(f)
	ui.addFlags(f)
	return cmd
}

// serverCluster is what `drover server` runs against: target, or the embedded control plane
// when target is nil.
type serverCluster struct {
	target *kubeTarget
	why    string
}

func (s serverCluster) line(dataDir string) string {
	if s.target == nil {
		return fmt.Sprintf("Using an embedded control plane in %s (%s)", dataDir, s.why)
	}
	ctx := ""
	if s.target.Context != "" {
		ctx = ", context " + s.target.Context
	}
	return fmt.Sprintf("Using the existing cluster at %s from %s%s (%s)", s.target.Config.Host, s.target.Source, ctx, s.why)
}

// chooseServerCluster decides between an existing cluster and the embedded control plane.
func chooseServerCluster(cmd *cobra.Command, k *kubeOptions, embedded bool) (serverCluster, error) {
	kubeFlagSet := cmd.Flags().Changed("kubeconfig") || cmd.Flags().Changed("context")
	if cmd.Flags().Changed("embedded") {
		if embedded {
			if kubeFlagSet {
				return serverCluster{}, usageErrorf("--embedded starts its own control plane: drop --kubeconfig/--context, or pass --embedded=false")
			}
			return serverCluster{why: "--embedded"}, nil
		}
		t, err := k.resolve()
		if err != nil {
			return serverCluster{}, err
		}
		return serverCluster{target: t, why: "--embedded=false"}, nil
	}
	if kubeFlagSet || os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
		t, err := k.resolve()
		if err != nil {
			return serverCluster{}, err
		}
		return serverCluster{target: t, why: "pass --embedded for an embedded control plane instead"}, nil
	}
	if inClusterAvailable() {
		t, err := k.resolve()
		if err != nil {
			return serverCluster{}, err
		}
		if t.Source != inClusterSource {
			// A kubeconfig file in the pod: still the pod's own cluster is meant.
			cfg, ns, err := inClusterConfig()
			if err != nil {
				return serverCluster{}, err
			}
			t = &kubeTarget{Config: cfg, Namespace: ns, Source: inClusterSource, Explicit: true}
		}
		return serverCluster{target: t, why: "running in a pod"}, nil
	}
	return serverCluster{why: "no --kubeconfig, no $KUBECONFIG, not in a pod; --embedded=false uses ~/.kube/config"}, nil
}

// probe checks that the cluster answers, so a wrong kubeconfig fails at start with a clear
// message instead of as retries later.
func probe(ctx context.Context, t *kubeTarget) (*rest.Config, error) {
	p := rest.CopyConfig(t.Config)
	p.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Source, err)
	}
	done := make(chan error, 1)
	go func() { _, err := dc.ServerVersion(); done <- err }()
	select {
	case err = <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cluster of %s at %s (%w): check that it is running and the file is current", t.Source, t.Config.Host, err)
	}
	return t.Config, nil
}
