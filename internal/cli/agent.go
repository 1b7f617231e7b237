package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
)

func newAgentCommand() *cobra.Command {
	var (
		opts       agent.Options
		kubeconfig string
		verbose    bool
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run drover's agent on a downstream cluster (registers, applies BundleDeployments, checks in)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			setupLogging(verbose)
			cfg, err := loadConfig(kubeconfig)
			if err != nil {
				return err
			}
			opts.Config = cfg
			return agent.Run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the downstream cluster (default: in-cluster)")
	f.StringVar(&opts.Namespace, "namespace", envOr("POD_NAMESPACE", manifests.DefaultNamespace), "agent namespace")
	f.StringVar(&opts.ClientID, "client-id", "", "clientID (default: the agent ConfigMap's, else the kube-system namespace UID)")
	f.BoolVar(&opts.LeaderElection, "leader-elect", true, "elect one active replica")
	f.DurationVar(&opts.HeartbeatInterval, "heartbeat-interval", 0, "check-in interval (default 1m)")
	f.DurationVar(&opts.DriftInterval, "drift-interval", 0, "how often applied resources are checked for drift (default 30s)")
	f.DurationVar(&opts.RenewalTokenTTL, "renewal-token-ttl", 0, "lifetime asked for when renewing the renewal identity's token: how long the agent may be offline and still re-register on its own (default 720h)")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	cmd.AddCommand(newAgentInstallCommand())
	return cmd
}

func newAgentInstallCommand() *cobra.Command {
	var (
		token, namespace, kubeconfig, ns, image, clientID string
		rbacNamespaces                                    []string
	)
	cmd := &cobra.Command{
		Use:   "install --token <name>",
		Short: "Print the agent manifests for a downstream cluster, with the token's bootstrap values",
		Long: `Print the manifests that install drover's agent on a downstream cluster (agent-initiated
registration). Reads the ClusterRegistrationToken's values secret from the management cluster;
pipe the output to 'kubectl apply -f -' against the downstream cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(kubeconfig)
			if err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: register.Scheme})
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
	f.StringVar(&ns, "token-namespace", fleetv1alpha1.DefaultWorkspaceNamespace, "namespace of the token (the workspace)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster")
	f.StringVar(&namespace, "agent-namespace", manifests.DefaultNamespace, "downstream agent namespace")
	f.StringVar(&image, "image", manifests.DefaultImage(), "agent image (default: this drover's version)")
	f.StringVar(&clientID, "client-id", "", "clientID (default: the downstream kube-system namespace UID)")
	f.StringSliceVar(&rbacNamespaces, "rbac-namespace", nil, "namespaced mode: let the agent apply resources only in these namespaces (repeatable; default: the whole cluster)")
	_ = cmd.MarkFlagRequired("token")
	return cmd
}

func loadConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
