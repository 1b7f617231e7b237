package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/registration/cluster"
	regconfig "github.com/droverhq/drover/internal/registration/config"
)

func newFleetCommand(k *kubeOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "fleet",
		Short:   "List and inspect registered downstream clusters (agents)",
		Example: "  drover fleet list\n  drover fleet get edge-1 -o yaml",
	}
	cmd.AddCommand(newFleetListCommand(k), newFleetGetCommand(k))
	return cmd
}

func newFleetListCommand(k *kubeOptions) *cobra.Command {
	return newListCommand(k, "List registered clusters: ready, connected, last seen, agent version (labels with -o wide)", `  drover fleet list
  drover fleet list -l env=prod -o name
  drover fleet list -A -o wide`, fleetv1alpha1.DefaultWorkspaceNamespace, func(l *fleetv1alpha1.ClusterList) []*fleetv1alpha1.Cluster { return ptrs(l.Items) },
		fleetColumns, "registered clusters")
}

func newFleetGetCommand(k *kubeOptions) *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use: "get NAME...", Short: "Show registered clusters: conditions, agent, labels", Args: cobra.MinimumNArgs(1),
		Example: `  drover fleet get edge-1
  drover fleet get edge-1 -o jsonpath='{.status.agent.lastSeen}'`,
		ValidArgsFunction: completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.ClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			c, ns, err := k.client(fleetv1alpha1.DefaultWorkspaceNamespace)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return getAll(cmd, c, ns, args, &o, func() *fleetv1alpha1.Cluster { return &fleetv1alpha1.Cluster{} }, fleetColumns, "registered cluster", "drover fleet list",
				func(fc *fleetv1alpha1.Cluster) error {
					return withEvents(cmd.Context(), out, c, fc, func() error {
						return printFleetCluster(out, fc, registeredWith(cmd.Context(), c, fc))
					})()
				})
		},
	}
	o.addFlag(cmd, "details")
	return cmd
}

var fleetColumns = []column[*fleetv1alpha1.Cluster]{
	{name: "NAME", cell: func(c *fleetv1alpha1.Cluster) string { return c.Name }},
	{name: "READY", cell: func(c *fleetv1alpha1.Cluster) string { return condStatusWhy(c.Status.Conditions, "Ready") }},
	{name: "CONNECTED", cell: func(c *fleetv1alpha1.Cluster) string { return fmt.Sprint(connected(c)) }},
	{name: "LAST SEEN", cell: func(c *fleetv1alpha1.Cluster) string { return ago(c.Status.Agent.LastSeen) }},
	{name: "AGENT", cell: manifests.AgentVersion},
	{name: "LABELS", wide: true, cell: func(c *fleetv1alpha1.Cluster) string { return orDash(labelString(c.Labels)) }},
	{name: "CLUSTER NAMESPACE", wide: true, cell: func(c *fleetv1alpha1.Cluster) string { return orDash(c.Status.Namespace) }},
}

// connected is the server's verdict (the Ready condition's AgentDisconnected reason, set after
// its --agent-disconnect-after), not a window of the CLI's own: both must say the same.
func connected(c *fleetv1alpha1.Cluster) bool {
	return c.Status.Agent.LastSeen != nil && !cluster.Disconnected(c)
}

func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

// registeredWith says which registration token the Cluster is registered with: the one a
// registration of its clientID with another token would need an admin's allowance to replace.
func registeredWith(ctx context.Context, c client.Client, fc *fleetv1alpha1.Cluster) string {
	uid := fc.Annotations[fleetv1alpha1.RegistrationTokenAnnotation]
	switch {
	case uid == "" && fc.Spec.KubeConfigSecret != "":
		return "its own import token (drover installed the agent from spec.kubeConfigSecret)"
	case uid == "":
		return "-"
	}
	var toks fleetv1alpha1.ClusterRegistrationTokenList
	if err := c.List(ctx, &toks, client.InNamespace(fc.Namespace)); err != nil {
		return "token UID " + uid
	}
	for _, t := range toks.Items {
		if string(t.UID) == uid {
			return "token " + t.Name
		}
	}
	return "a token since deleted (UID " + uid + ")"
}

func printFleetCluster(out io.Writer, c *fleetv1alpha1.Cluster, token string) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "Cluster:\t%s/%s\n", c.Namespace, c.Name)
	fmt.Fprintf(w, "Registered with:\t%s\n", token)
	fmt.Fprintf(w, "Connected:\t%v (last seen %s)\n", connected(c), ago(c.Status.Agent.LastSeen))
	fmt.Fprintf(w, "Agent:\t%s in namespace %s\n", manifests.AgentVersion(c), orDash(c.Status.Agent.Namespace))
	fmt.Fprintf(w, "Agent features:\t%s\n", orDash(strings.Join(c.Status.Agent.ReportedFeatures(), ", ")))
	fmt.Fprintf(w, "Labels:\t%s\n", orDash(labelString(c.Labels)))
	if v := c.Spec.TemplateValues; v != nil && len(v.Raw) > 0 && string(v.Raw) != "{}" && string(v.Raw) != "null" {
		fmt.Fprintf(w, "Template values:\t%s\n", oneLine(string(v.Raw)))
	}
	fmt.Fprintf(w, "Cluster namespace:\t%s\n", orDash(c.Status.Namespace))
	for _, cond := range c.Status.Conditions {
		fmt.Fprintf(w, "Condition %s:\t%s (%s) %s\n", cond.Type, cond.Status, cond.Reason, oneLine(cond.Message))
	}
	return w.Flush()
}

func newTokenCommand(k *kubeOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "token",
		Short:   "Registration tokens for downstream clusters",
		Example: "  drover token create edge --ttl 2h",
	}
	cmd.AddCommand(newTokenCreateCommand(k), newTokenListCommand(k), newTokenGetCommand(k), newTokenDeleteCommand(k))
	return cmd
}

func newTokenGetCommand(k *kubeOptions) *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:   "get NAME...",
		Short: "Show registration tokens: ready, expiry, clusters registered, the Secret holding the values (never the values)",
		Example: `  drover token get edge
  drover token get edge -o yaml`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.ClusterRegistrationTokenList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			c, ns, err := k.client(fleetv1alpha1.DefaultWorkspaceNamespace)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return getAll(cmd, c, ns, args, &o, func() *fleetv1alpha1.ClusterRegistrationToken { return &fleetv1alpha1.ClusterRegistrationToken{} },
				tokenColumns, "token", "drover token list", func(t *fleetv1alpha1.ClusterRegistrationToken) error { return printToken(out, t) })
		},
	}
	o.addFlag(cmd, "details")
	return cmd
}

// printToken shows a token's state; its values live in its Secret, which is not read.
func printToken(w io.Writer, t *fleetv1alpha1.ClusterRegistrationToken) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Token:\t%s/%s\n", t.Namespace, t.Name)
	for _, col := range tokenColumns[1:] {
		fmt.Fprintf(tw, "%s:\t%s\n", strings.ToUpper(col.name[:1])+strings.ToLower(col.name[1:]), col.cell(t))
	}
	if t.Spec.TTL != nil {
		fmt.Fprintf(tw, "TTL:\t%s\n", t.Spec.TTL.Duration)
	}
	for _, c := range t.Status.Conditions {
		fmt.Fprintf(tw, "Condition %s:\t%s (%s) %s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
	}
	return tw.Flush()
}

func newTokenDeleteCommand(k *kubeOptions) *cobra.Command {
	var d deleteFlags
	cmd := &cobra.Command{
		Use: "delete NAME...",
		Short: "Revoke registration tokens: their import identities and values go at once, so agents not yet registered with them cannot register; " +
			"clusters already registered keep working",
		Example:           "  drover token delete edge --wait",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.ClusterRegistrationTokenList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := k.client(fleetv1alpha1.DefaultWorkspaceNamespace)
			if err != nil {
				return err
			}
			return deleteAll(cmd, c, ns, args, "token", "clusterregistrationtoken.fleet.drover.io",
				func() client.Object { return &fleetv1alpha1.ClusterRegistrationToken{} }, d)
		},
	}
	d.add(cmd, "the tokens and their import identities are gone", time.Minute)
	return cmd
}

func newTokenListCommand(k *kubeOptions) *cobra.Command {
	return newListCommand(k, "List registration tokens: ready, expiry, clusters registered of --max-clusters", `  drover token list
  drover token list -A -o wide`, fleetv1alpha1.DefaultWorkspaceNamespace,
		func(l *fleetv1alpha1.ClusterRegistrationTokenList) []*fleetv1alpha1.ClusterRegistrationToken {
			return ptrs(l.Items)
		},
		tokenColumns, "registration tokens")
}

var tokenColumns = []column[*fleetv1alpha1.ClusterRegistrationToken]{
	{name: "NAME", cell: func(t *fleetv1alpha1.ClusterRegistrationToken) string { return t.Name }},
	{name: "READY", cell: func(t *fleetv1alpha1.ClusterRegistrationToken) string {
		return condStatusOf(t.Status.Conditions, "Ready")
	}},
	{name: "EXPIRES", cell: func(t *fleetv1alpha1.ClusterRegistrationToken) string {
		switch {
		case t.Status.Expires == nil:
			return "-"
		case t.Status.Expires.Time.Before(now()):
			return "expired"
		}
		return "in " + duration.HumanDuration(t.Status.Expires.Time.Sub(now()))
	}},
	// Registered of the limit; a token without spec.maxClusters keeps no count. The import token
	// drover issues for one Cluster (manager-initiated registration) registers that one only.
	{name: "CLUSTERS", cell: func(t *fleetv1alpha1.ClusterRegistrationToken) string {
		if name, _, bound := t.BoundCluster(); bound {
			return name + " only"
		}
		if t.Spec.MaxClusters == nil {
			return "any"
		}
		return fmt.Sprintf("%d/%d", len(t.Status.RegisteredClientIDs), *t.Spec.MaxClusters)
	}},
	{name: "SECRET", wide: true, cell: func(t *fleetv1alpha1.ClusterRegistrationToken) string { return orDash(t.Status.SecretName) }},
}

func newTokenCreateCommand(k *kubeOptions) *cobra.Command {
	var ttl, timeout time.Duration
	var maxClusters int32
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a ClusterRegistrationToken and print the exact agent install commands",
		Example: `  drover token create edge --ttl 2h
  drover token create edge -n team-a --ttl 30m
  drover token create store-0042 --ttl 1h --max-clusters 1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl <= 0 {
				return usageErrorf("--ttl must be positive, e.g. 2h")
			}
			if cmd.Flags().Changed("max-clusters") && (maxClusters < 1 || maxClusters > 1000) {
				return usageErrorf("--max-clusters must be between 1 and 1000, got %d", maxClusters)
			}
			c, ns, err := k.client(fleetv1alpha1.DefaultWorkspaceNamespace)
			if err != nil {
				return err
			}
			tok := &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: args[0]},
				Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: ttl}}}
			limit := ""
			if cmd.Flags().Changed("max-clusters") {
				tok.Spec.MaxClusters = &maxClusters
				limit = fmt.Sprintf(", registers at most %d cluster(s)", maxClusters)
			}
			if err := c.Create(cmd.Context(), tok); err != nil {
				return fmt.Errorf("create token %s/%s: %w", ns, args[0], err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "clusterregistrationtoken.fleet.drover.io/%s created in namespace %s (expires in %s%s)\n", tok.Name, ns, ttl, limit)
			var reason string
			err = waitUntil(cmd.Context(), io.Discard, "token "+ns+"/"+tok.Name, timeout, func(ctx context.Context) (state, error) {
				if err := c.Get(ctx, client.ObjectKeyFromObject(tok), tok); err != nil {
					return state{}, err
				}
				r := meta.FindStatusCondition(tok.Status.Conditions, "Ready")
				if r != nil {
					reason = r.Reason + ": " + r.Message
				}
				return state{line: reason, done: tok.Status.SecretName != "" && r != nil && r.Status == metav1.ConditionTrue}, nil
			})
			if err != nil {
				return withCode(ExitNotReady, fmt.Errorf("token %s/%s is not ready (%s): %w", ns, tok.Name, orDash(reason), err))
			}
			printInstallCommands(out, ns, tok.Name, tok.Status.SecretName)
			// The endpoint is in the token's values too; the ConfigMap they come from holds no secret.
			cm := &corev1.ConfigMap{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: regconfig.DefaultRef.Namespace, Name: regconfig.DefaultRef.Name}, cm); err == nil && loopbackURL(cm.Data[regconfig.KeyAPIServerURL]) {
				fmt.Fprintf(cmd.ErrOrStderr(), "Warning: agents register at %s, a loopback address: %s.\n", cm.Data[regconfig.KeyAPIServerURL], loopbackAdvice)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long the token (and its import identity) lives, e.g. 2h (required)")
	cmd.Flags().Int32Var(&maxClusters, "max-clusters", 0, "how many clusters may register with the token (default: any number until it expires); 1 for a cluster's own token")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for the token to be ready")
	_ = cmd.MarkFlagRequired("ttl")
	return cmd
}

// printInstallCommands prints both ways to install the agent. The token's values stay in its
// Secret: the Helm command reads them with kubectl rather than printing them.
func printInstallCommands(out io.Writer, ns, token, secret string) {
	fmt.Fprintf(out, `
Install the agent on the downstream cluster with drover:

  drover agent install --token %[2]s --token-namespace %[1]s \
    | kubectl --kubeconfig downstream.kubeconfig apply -f -

or with Helm:

  s() { kubectl -n %[1]s get secret %[3]s -o jsonpath="{.data.$1}" | base64 -d; }
  helm --kubeconfig downstream.kubeconfig install drover-agent charts/drover-agent \
    --namespace drover-agent --create-namespace \
    --set apiServerURL="$(s apiServerURL)" --set-file apiServerCA=<(s apiServerCA) \
    --set token="$(s token)" --set tokenName="$(s tokenName)" --set clusterNamespace="$(s clusterNamespace)"

(charts/drover-agent is in drover's source tree: run Helm from its root.)
Then watch it register: drover fleet list -n %[1]s
`, ns, token, secret)
}
