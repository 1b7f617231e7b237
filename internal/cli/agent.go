package cli

import (
	"time"

	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
)

func newAgentCommand(k *kubeOptions, logs *logOptions) *cobra.Command {
	var (
		opts               agent.Options
		downstream, legacy string
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run drover's agent on a downstream cluster (registers, applies BundleDeployments, checks in)",
		Example: `  # in the agent's pod (what the manifests of 'drover agent install' run)
  drover agent --log-format json
  # outside the cluster, for development
  drover agent --downstream-kubeconfig downstream.kubeconfig --namespace drover-agent`,
		Long: `Run drover's agent on a downstream cluster: it registers with the management cluster named by
its bootstrap Secret (the token's values), applies the cluster's BundleDeployments and checks in.
Its own (downstream) cluster is the pod's service account, or --downstream-kubeconfig; it reads
neither $KUBECONFIG nor ~/.kube/config, which name the management cluster for drover's other
commands.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.RenewalTokenTTL > maxRenewalTokenTTL {
				return usageErrorf("--renewal-token-ttl %s: at most %s (the admission policy drover-agent-token-lifetime refuses longer tokens)", opts.RenewalTokenTTL, maxRenewalTokenTTL)
			}
			setMemoryLimit()
			if downstream == "" && legacy != "" {
				// Before --downstream-kubeconfig, the agent's --kubeconfig named its own cluster.
				ctrl.Log.Info("drover agent --kubeconfig is deprecated: use --downstream-kubeconfig")
				downstream = legacy
			}
			cfg, err := agentConfig(downstream)
			if err != nil {
				return err
			}
			opts.Config = cfg
			return agent.Run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&downstream, "downstream-kubeconfig", "", "kubeconfig of the downstream cluster the agent runs on (default: the in-cluster service account; --kubeconfig is a deprecated alias)")
	// The agent's own --kubeconfig, the deprecated alias: it hides the global one, which names
	// the management cluster for the other commands (drover agent install included), from the
	// agent's help and flags.
	f.StringVar(&legacy, "kubeconfig", "", "deprecated alias of --downstream-kubeconfig")
	_ = f.MarkHidden("kubeconfig")
	f.StringVar(&opts.Namespace, "namespace", envOr("POD_NAMESPACE", manifests.DefaultNamespace), "agent namespace")
	f.StringVar(&opts.ClientID, "client-id", "", "clientID (default: the agent ConfigMap's, else the kube-system namespace UID)")
	f.BoolVar(&opts.LeaderElection, "leader-elect", true, "elect one active replica")
	f.DurationVar(&opts.HeartbeatInterval, "heartbeat-interval", 0, "check-in interval (default 1m)")
	f.DurationVar(&opts.DriftInterval, "drift-interval", 0, "how often applied resources are checked for drift (default 30s)")
	f.DurationVar(&opts.RenewalTokenTTL, "renewal-token-ttl", 0, "lifetime asked for when renewing the renewal identity's token: the agent renews it once less than half is left, so it may be offline for at least half of this and still re-register on its own (default 720h: 15 days or more; at most 2160h)")
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", fmt.Sprintf(":%d", agent.DefaultMetricsPort), "address of /metrics (0 disables it)")
	f.StringVar(&opts.HealthAddr, "health-probe-bind-address", fmt.Sprintf(":%d", agent.DefaultHealthPort), "address of /healthz and /readyz (the Deployment's probes; 0 disables them)")
	logs.addZapFlags(cmd)
	cmd.AddCommand(newAgentInstallCommand(k))
	return cmd
}

// maxRenewalTokenTTL is config/admission/agent-token-lifetime.yaml's cap for drover-renewal.
const maxRenewalTokenTTL = 90 * 24 * time.Hour

func newAgentInstallCommand(k *kubeOptions) *cobra.Command {
	var (
		token, namespace, ns, image, clientID string
		rbacNamespaces                        []string
	)
	cmd := &cobra.Command{
		Use:   "install --token <name>",
		Short: "Print the agent manifests for a downstream cluster, with the token's bootstrap values",
		Example: `  drover agent install --token edge --token-namespace drover-default \
    | kubectl --kubeconfig downstream.kubeconfig apply -f -`,
		Long: `Print the manifests that install drover's agent on a downstream cluster (agent-initiated
registration). Reads the ClusterRegistrationToken's values secret from the management cluster;
pipe the output to 'kubectl apply -f -' against the downstream cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := k.resolve()
			if err != nil {
				return err
			}
			// The token's namespace: --token-namespace, else -n (or the context's), as every
			// other command reads its namespace, else drover-default.
			if !cmd.Flags().Changed("token-namespace") && t.Namespace != "" {
				ns = t.Namespace
			}
			c, err := client.New(t.Config, client.Options{Scheme: register.Scheme})
			if err != nil {
				return fmt.Errorf("management client: %w", err)
			}
			tok := &fleetv1alpha1.ClusterRegistrationToken{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: token}, tok); err != nil {
				return fmt.Errorf("get token %s/%s: %w", ns, token, err)
			}
			if tok.Status.SecretName == "" {
				return fmt.Errorf("token %s/%s has no values secret yet (see its Ready condition)", ns, token)
			}
			s := &corev1.Secret{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: tok.Status.SecretName}, s); err != nil {
				return fmt.Errorf("get token values: %w", err)
			}
			objs, err := manifests.Objects(manifests.Options{Namespace: namespace, Image: image, ClientID: clientID, Bootstrap: s.Data,
				RBAC: manifests.RBAC{Namespaces: rbacNamespaces}})
			if err != nil {
				return err
			}
			out, err := manifests.YAML(objs)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&token, "token", "", "ClusterRegistrationToken name")
	f.StringVar(&ns, "token-namespace", fleetv1alpha1.DefaultWorkspaceNamespace, "namespace of the token (the workspace; default: -n, else the context's, else drover-default)")
	f.StringVar(&namespace, "agent-namespace", manifests.DefaultNamespace, "downstream agent namespace")
	f.StringVar(&image, "image", manifests.DefaultImage(), "agent image (default: this drover's version)")
	f.StringVar(&clientID, "client-id", "", "clientID (default: the downstream kube-system namespace UID)")
	f.StringSliceVar(&rbacNamespaces, "rbac-namespace", nil, "namespaced mode: let the agent apply resources only in these namespaces (repeatable; default: the whole cluster)")
	_ = cmd.MarkFlagRequired("token")
	return cmd
}

// agentConfig is the agent's own (downstream) cluster: --downstream-kubeconfig, else the pod's
// service account.
func agentConfig(path string) (*rest.Config, error) {
	if path != "" {
		return downstreamConfig(path)
	}
	cfg, _, err := inClusterConfig()
	if err == nil {
		return cfg, nil
	}
	if !errors.Is(err, errNoKubeconfig) {
		return nil, fmt.Errorf("in-cluster config of the downstream cluster: %w", err)
	}
	// errNoKubeconfig's advice (--kubeconfig, $KUBECONFIG, ~/.kube/config) is for the management
	// cluster of the other commands: the agent reads none of them.
	msg := "no downstream cluster: drover agent runs in a pod of the downstream cluster (its service account), or with --downstream-kubeconfig FILE"
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		msg += " (KUBERNETES_SERVICE_HOST is set, but there is no service account token at " + filepath.Join(serviceAccountDir, "token") + ")"
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		msg += "; drover agent does not read $KUBECONFIG: pass --downstream-kubeconfig " + env
	}
	return nil, usageErrorf("%s", msg)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
