package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/hosted/gke"
)

var providers = []hosted.Provider{eks.Provider{}, gke.Provider{}, aks.Provider{}}

func providerOf(c *v1.Cluster) hosted.Provider {
	for _, p := range providers {
		if p.Matches(c) {
			return p
		}
	}
	return nil
}

func newClusterCommand(k *kubeOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Create, import, list, inspect and delete hosted (EKS, AKS, GKE) clusters",
		Example: "  drover cluster list\n  drover cluster create eks --help"}
	cmd.AddCommand(newClusterListCommand(k), newClusterGetCommand(k), newClusterImportCommand(k), newClusterCreateCommand(k), newClusterDeleteCommand(k),
		newClusterKubeconfigCommand(k), newClusterTokenCommand())
	return cmd
}

func newClusterListCommand(k *kubeOptions) *cobra.Command {
	return newListCommand(k, "List hosted clusters with their phase and sync state", `  drover cluster list
  drover cluster list -A -o wide
  drover cluster list -o jsonpath='{.items[*].metadata.name}'`, "default", func(l *v1.ClusterList) []*v1.Cluster { return ptrs(l.Items) },
		clusterColumns, "clusters")
}

// clusterColumns are the table columns of hosted clusters.
var clusterColumns = []column[*v1.Cluster]{
	{name: "NAME", cell: func(c *v1.Cluster) string { return c.Name }},
	{name: "PROVIDER", cell: func(c *v1.Cluster) string {
		if p := providerOf(c); p != nil {
			return p.Name()
		}
		return "?"
	}},
	{name: "LOCATION", cell: func(c *v1.Cluster) string { return orDash(c.Location()) }},
	{name: "PHASE", cell: func(c *v1.Cluster) string { return orDash(string(c.Status.Phase)) }},
	{name: "READY", cell: func(c *v1.Cluster) string { return condStatus(c, hosted.CondReady) }},
	{name: "SYNCED", cell: func(c *v1.Cluster) string { return condStatus(c, hosted.CondSynced) }},
	{name: "CONFLICT", cell: func(c *v1.Cluster) string { return condStatus(c, hosted.CondConflict) }},
	{name: "LAST REFRESH", cell: func(c *v1.Cluster) string { return ago(c.Status.LastRefreshTime) }},
	{name: "VERSION", wide: true, cell: func(c *v1.Cluster) string { return orDash(c.KubernetesVersion()) }},
	{name: "POLICY", wide: true, cell: func(c *v1.Cluster) string { return orDash(string(c.Spec.SyncPolicy)) }},
	{name: "IMPORTED", wide: true, cell: func(c *v1.Cluster) string { return fmt.Sprint(c.Imported()) }},
	{name: "FLEET", wide: true, cell: fleetCell},
}

func orAll(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

func newClusterGetCommand(k *kubeOptions) *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use: "get NAME...", Short: "Show hosted clusters' effective desired state, which fields drover manages, drift and conflicts", Args: cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, "default", &v1.ClusterList{}),
		Example: `  drover cluster get prod
  drover cluster get prod -o yaml
  drover cluster get prod -o jsonpath='{.status.phase}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			c, ns, err := k.client("default")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return getAll(cmd, c, ns, args, &o, func() *v1.Cluster { return &v1.Cluster{} }, clusterColumns, "cluster", "drover cluster list",
				func(cl *v1.Cluster) error {
					return withEvents(cmd.Context(), out, c, cl, func() error { return printCluster(out, cl) })()
				})
		},
	}
	o.addFlag(cmd, "details")
	return cmd
}

func printCluster(out io.Writer, cl *v1.Cluster) error {
	p := providerOf(cl)
	if p == nil {
		return fmt.Errorf("cluster %s has no provider config this drover knows", cl.Name)
	}
	up, err := p.Upstream(cl)
	if err != nil {
		return err
	}
	rows, err := hosted.View(p, cl, up)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Cluster %s/%s (%s)  phase: %s  policy: %s\n", cl.Namespace, cl.Name, p.Name(), orDash(string(cl.Status.Phase)), cl.Spec.SyncPolicy)
	for _, t := range []string{hosted.CondReady, hosted.CondSynced, hosted.CondUpdating, hosted.CondConflict, hosted.CondConfigValid, hosted.CondCredentials} {
		if cond := meta.FindStatusCondition(cl.Status.Conditions, t); cond != nil {
			fmt.Fprintf(out, "  %-17s %-5s %s: %s\n", t, cond.Status, cond.Reason, oneLine(cond.Message))
		}
	}
	if f := cl.Status.Fleet; f != nil {
		fmt.Fprintf(out, "Fleet Cluster: %s  kubeconfig Secret: %s\n", orDash(f.ClusterName), orDash(f.KubeconfigSecret))
		if f.CredentialsExpireTime != nil && f.CredentialsRefreshTime != nil {
			fmt.Fprintf(out, "  token expires %s, replaced at %s\n", f.CredentialsExpireTime.UTC().Format(time.RFC3339),
				f.CredentialsRefreshTime.UTC().Format(time.RFC3339))
		}
		for _, t := range []string{v1.ConditionJoined, v1.ConditionAgentReady} {
			if cond := meta.FindStatusCondition(f.Conditions, t); cond != nil {
				fmt.Fprintf(out, "  %-17s %-5s %s: %s\n", t, cond.Status, cond.Reason, oneLine(cond.Message))
			}
		}
	}
	if up == nil {
		fmt.Fprintln(out, "\nThe provider has not been read yet; the fields below are the config only.")
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FIELD\tVALUE\tMANAGED\tUPSTREAM")
	prefix := p.Name() + "Config."
	conflicts := hosted.ViewConflicts(cl, prefix, rows)
	for _, r := range rows {
		managed := "-"
		if r.Managed {
			managed = "managed"
		}
		upstream := ""
		if r.Drift {
			upstream = "differs: " + r.Upstream
		}
		for _, f := range conflicts {
			if hosted.CoversField(f.Field, prefix+r.Path) {
				upstream = strings.TrimPrefix(upstream+"; ", "; ") + "conflict: provider had " + f.Upstream + ", drover's " + f.Config + " applied"
				break
			}
		}
		fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\n", prefix, r.Path, r.Value, managed, upstream)
	}
	return w.Flush()
}

func newClusterImportCommand(k *kubeOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Import an existing hosted cluster: drover reads it and manages nothing until you change a field",
		Example: "  drover cluster import eks --name prod --region us-west-2 --credential aws --wait"}
	var name, displayName, region, credential string
	var w waitFlags
	eksCmd := &cobra.Command{
		Use: "eks", Short: "Import an existing EKS cluster", Args: cobra.NoArgs,
		Example: "  drover cluster import eks --name prod --region us-west-2 --credential aws --wait",
		RunE: func(cmd *cobra.Command, _ []string) error {
			for flag, v := range map[string]string{"--name": name, "--region": region, "--credential": credential} {
				if v == "" {
					return usageErrorf("%s is required", flag)
				}
			}
			if displayName == "" {
				displayName = name
			}
			cl := &v1.Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{
					DisplayName: displayName, Region: region, Imported: true, CredentialSecret: credential,
				}},
			}
			return importCluster(cmd, k, eks.Provider{}, cl, fmt.Sprintf("EKS cluster %s (%s)", displayName, region), &w)
		},
	}
	f := eksCmd.Flags()
	f.StringVar(&name, "name", "", "name of the drover Cluster object (required)")
	f.StringVar(&displayName, "display-name", "", "EKS cluster name, if different from --name")
	// --cluster-name, as the AKS and GKE commands call it.
	f.StringVar(&displayName, "cluster-name", "", "same as --display-name")
	f.StringVar(&region, "region", "", "AWS region, e.g. us-west-2 (required)")
	f.StringVar(&credential, "credential", "", "Secret in the namespace with accessKeyID and secretAccessKey (required)")
	w.add(eksCmd, "the cluster is active", 10*time.Minute)
	cmd.AddCommand(eksCmd)
	cmd.AddCommand(newClusterImportGKECommand(k))
	cmd.AddCommand(newClusterImportAKSCommand(k))
	return cmd
}

func newClusterImportGKECommand(k *kubeOptions) *cobra.Command {
	var name, project, region, zone, clusterName, credential string
	var w waitFlags
	cmd := &cobra.Command{
		Use: "gke", Short: "Import an existing GKE cluster", Args: cobra.NoArgs,
		Example: "  drover cluster import gke --name prod --project acme --region europe-west1 --credential gcp --wait",
		RunE: func(cmd *cobra.Command, _ []string) error {
			for flag, v := range map[string]string{"--name": name, "--project": project, "--credential": credential} {
				if v == "" {
					return usageErrorf("%s is required", flag)
				}
			}
			if (region == "") == (zone == "") {
				return usageErrorf("exactly one of --region (regional cluster) and --zone (zonal cluster) is required")
			}
			if clusterName == "" {
				clusterName = name
			}
			cl := &v1.Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1.ClusterSpec{GKEConfig: &v1.GKEClusterConfig{
					ClusterName: clusterName, ProjectID: project, Region: region, Zone: zone, Imported: true, CredentialSecret: credential,
				}},
			}
			return importCluster(cmd, k, gke.Provider{}, cl, fmt.Sprintf("GKE cluster %s (project %s, %s)", clusterName, project, region+zone), &w)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "name of the drover Cluster object (required)")
	f.StringVar(&clusterName, "cluster-name", "", "GKE cluster name, if different from --name")
	f.StringVar(&project, "project", "", "Google Cloud project ID (required)")
	f.StringVar(&region, "region", "", "region of a regional cluster, e.g. europe-west1")
	f.StringVar(&zone, "zone", "", "zone of a zonal cluster, e.g. europe-west1-b")
	f.StringVar(&credential, "credential", "", "Secret in the namespace with serviceAccountJSON (required)")
	w.add(cmd, "the cluster is active", 10*time.Minute)
	return cmd
}

func condStatus(c *v1.Cluster, t string) string {
	return condStatusOf(c.Status.Conditions, t)
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

func newClusterImportAKSCommand(k *kubeOptions) *cobra.Command {
	var name, resourceGroup, location, clusterName, credential string
	var w waitFlags
	cmd := &cobra.Command{
		Use: "aks", Short: "Import an existing AKS cluster", Args: cobra.NoArgs,
		Example: "  drover cluster import aks --name prod --resource-group rg --location westeurope --credential azure --wait",
		RunE: func(cmd *cobra.Command, _ []string) error {
			for flag, v := range map[string]string{"--name": name, "--resource-group": resourceGroup, "--location": location, "--credential": credential} {
				if v == "" {
					return usageErrorf("%s is required", flag)
				}
			}
			if clusterName == "" {
				clusterName = name
			}
			cl := &v1.Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1.ClusterSpec{AKSConfig: &v1.AKSClusterConfig{
					ClusterName: clusterName, ResourceGroup: resourceGroup, ResourceLocation: location, Imported: true, CredentialSecret: credential,
				}},
			}
			return importCluster(cmd, k, aks.Provider{}, cl, fmt.Sprintf("AKS cluster %s (resource group %s, %s)", clusterName, resourceGroup, location), &w)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "name of the drover Cluster object (required)")
	f.StringVar(&clusterName, "cluster-name", "", "AKS cluster name, if different from --name")
	f.StringVar(&resourceGroup, "resource-group", "", "Azure resource group of the cluster (required)")
	f.StringVar(&location, "location", "", "Azure region, e.g. westeurope (required)")
	f.StringVar(&credential, "credential", "", "Secret in the namespace with tenantID, subscriptionID, clientID and clientSecret (required)")
	w.add(cmd, "the cluster is active", 10*time.Minute)
	return cmd
}

// importCluster validates an imported Cluster, creates it in the namespace of the kubeconfig
// context (or -n) and says what happens next.
func importCluster(cmd *cobra.Command, k *kubeOptions, p hosted.Provider, cl *v1.Cluster, what string, w *waitFlags) error {
	if err := p.Validate(cl); err != nil {
		return err
	}
	c, ns, err := k.client("default")
	if err != nil {
		return err
	}
	cl.Namespace = ns
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	if err := c.Create(ctx, cl); err != nil {
		return fmt.Errorf("create cluster %s/%s: %w", ns, cl.Name, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Cluster %s/%s created to import %s: drover reads it at the provider next (--wait waits for that); nothing is managed until you change a field. Watch it with: drover cluster get %s -n %s\n", ns, cl.Name, what, cl.Name, ns)
	if !w.wait {
		return nil
	}
	return waitUntil(cmd.Context(), cmd.OutOrStdout(), "cluster "+ns+"/"+cl.Name, w.timeout, clusterActive(c, client.ObjectKeyFromObject(cl)))
}

// fleetCell is a hosted cluster's place in the fleet: agent-ready, joined, waiting, leaving,
// out, or the reason it could not join (AccessEntryMissing, ...); "-" before the join
// controller looked.
func fleetCell(c *v1.Cluster) string {
	place, joined := c.FleetPlace()
	switch place {
	case v1.FleetPlaceUnknown:
		return "-"
	case v1.FleetPlaceNotJoined:
		return joined.Reason
	}
	return strings.ReplaceAll(string(place), "_", "-")
}
