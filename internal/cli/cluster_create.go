package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/hosted/gke"
)

// createFlags are the flags every `cluster create PROVIDER` shares.
type createFlags struct {
	name, credential, version, file, dryRun string
	tags                                    map[string]string
	wait                                    waitFlags
}

func (c *createFlags) add(cmd *cobra.Command, credential string) {
	f := cmd.Flags()
	f.StringVar(&c.name, "name", "", "name of the drover Cluster object (required unless -f)")
	f.StringVar(&c.credential, "credential", "", "Secret in the namespace with "+credential+" (required unless -f)")
	f.StringVar(&c.version, "kubernetes-version", "", "Kubernetes version, e.g. 1.33 (required unless -f)")
	f.StringToStringVar(&c.tags, "tags", nil, "tags/labels on the cloud resources, e.g. team=platform,env=prod")
	f.StringVarP(&c.file, "file", "f", "", "create from a Cluster manifest file (YAML or JSON), or - for stdin, instead of flags")
	f.StringVar(&c.dryRun, "dry-run", "none", "client: print the Cluster manifest instead of creating it, e.g. to commit it to Git (kubectl's values; --dry-run alone is client)")
	f.Lookup("dry-run").NoOptDefVal = "client"
	c.wait.add(cmd, "the cluster is active", 30*time.Minute)
}

func newClusterCreateCommand(k *kubeOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a hosted cluster (EKS, AKS, GKE) from flags or a manifest",
		Example: `  drover cluster create eks --name prod --region us-west-2 --credential aws --kubernetes-version 1.32 \
    --service-role arn:aws:iam::123456789012:role/eks --subnets subnet-a,subnet-b \
    --node-role arn:aws:iam::123456789012:role/node --nodes 2 --wait
  drover cluster create gke -f staging.yaml --wait --timeout 20m`,
	}
	cmd.AddCommand(newClusterCreateEKSCommand(k), newClusterCreateAKSCommand(k), newClusterCreateGKECommand(k))
	return cmd
}

func newClusterCreateEKSCommand(k *kubeOptions) *cobra.Command {
	var c createFlags
	var region, displayName, serviceRole, nodeRole, instanceType string
	var subnets, securityGroups []string
	var nodes int32
	cmd := &cobra.Command{
		Use: "eks", Short: "Create an EKS cluster", Args: cobra.NoArgs,
		Example: `  drover cluster create eks --name prod --region us-west-2 --credential aws --kubernetes-version 1.32 \
    --service-role arn:aws:iam::123456789012:role/eks --subnets subnet-a,subnet-b \
    --node-role arn:aws:iam::123456789012:role/node --nodes 2 --wait`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.fromFile(cmd.InOrStdin(), func() (*v1.Cluster, error) {
				if err := c.require(map[string]string{"--region": region, "--service-role": serviceRole, "--subnets": strings.Join(subnets, ",")}); err != nil {
					return nil, err
				}
				cfg := &v1.EKSClusterConfig{DisplayName: displayName, Region: region, CredentialSecret: c.credential,
					Tags: c.tags, Subnets: subnets, SecurityGroups: securityGroups}
				if cfg.DisplayName == "" {
					cfg.DisplayName = c.name
				}
				if c.version != "" {
					cfg.KubernetesVersion = ptr.To(c.version)
				}
				if serviceRole != "" {
					cfg.ServiceRole = ptr.To(serviceRole)
				}
				if nodes > 0 {
					ng := v1.EKSNodeGroup{Name: "workers", DesiredSize: ptr.To(nodes)}
					if nodeRole != "" {
						ng.NodeRole = ptr.To(nodeRole)
					}
					if instanceType != "" {
						ng.InstanceType = ptr.To(instanceType)
					}
					cfg.NodeGroups = []v1.EKSNodeGroup{ng}
				}
				return &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: v1.ClusterSpec{EKSConfig: cfg}}, nil
			})
			if err != nil {
				return err
			}
			return createCluster(cmd, k, eks.Provider{}, cl, &c, "created")
		},
	}
	c.add(cmd, "accessKeyID and secretAccessKey")
	f := cmd.Flags()
	f.StringVar(&region, "region", "", "AWS region, e.g. us-west-2 (required unless -f)")
	f.StringVar(&displayName, "display-name", "", "EKS cluster name, if different from --name")
	// --cluster-name, as the AKS and GKE commands call it.
	f.StringVar(&displayName, "cluster-name", "", "same as --display-name")
	f.StringVar(&serviceRole, "service-role", "", "IAM role ARN of the control plane (required unless -f)")
	f.StringSliceVar(&subnets, "subnets", nil, "subnet IDs in at least two availability zones (required unless -f)")
	f.StringSliceVar(&securityGroups, "security-groups", nil, "extra security group IDs")
	f.Int32Var(&nodes, "nodes", 0, "size of a node group \"workers\" (0: no node group)")
	f.StringVar(&nodeRole, "node-role", "", "IAM role ARN of the nodes")
	f.StringVar(&instanceType, "instance-type", "", "EC2 instance type of the nodes (default: the provider's)")
	return cmd
}

func newClusterCreateAKSCommand(k *kubeOptions) *cobra.Command {
	var c createFlags
	var resourceGroup, location, clusterName, vmSize, dnsPrefix string
	var nodes int32
	cmd := &cobra.Command{
		Use: "aks", Short: "Create an AKS cluster", Args: cobra.NoArgs,
		Example: `  drover cluster create aks --name prod --resource-group rg --location westeurope --credential azure \
    --kubernetes-version 1.33 --nodes 3 --wait`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.fromFile(cmd.InOrStdin(), func() (*v1.Cluster, error) {
				if err := c.require(map[string]string{"--resource-group": resourceGroup, "--location": location}); err != nil {
					return nil, err
				}
				cfg := &v1.AKSClusterConfig{ClusterName: clusterName, ResourceGroup: resourceGroup, ResourceLocation: location,
					CredentialSecret: c.credential, Tags: c.tags}
				if cfg.ClusterName == "" {
					cfg.ClusterName = c.name
				}
				if dnsPrefix == "" {
					dnsPrefix = cfg.ClusterName
				}
				cfg.DNSPrefix = ptr.To(dnsPrefix)
				if c.version != "" {
					cfg.KubernetesVersion = ptr.To(c.version)
				}
				if nodes > 0 {
					np := v1.AKSNodePool{Name: "system", Count: ptr.To(nodes), Mode: ptr.To("System")}
					if vmSize != "" {
						np.VMSize = ptr.To(vmSize)
					}
					cfg.NodePools = []v1.AKSNodePool{np}
				}
				return &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: v1.ClusterSpec{AKSConfig: cfg}}, nil
			})
			if err != nil {
				return err
			}
			return createCluster(cmd, k, aks.Provider{}, cl, &c, "created")
		},
	}
	c.add(cmd, "tenantID, subscriptionID, clientID and clientSecret")
	f := cmd.Flags()
	f.StringVar(&clusterName, "cluster-name", "", "AKS cluster name, if different from --name")
	f.StringVar(&resourceGroup, "resource-group", "", "Azure resource group (required unless -f)")
	f.StringVar(&location, "location", "", "Azure region, e.g. westeurope (required unless -f)")
	f.Int32Var(&nodes, "nodes", 1, "size of the system node pool \"system\" (AKS needs one)")
	f.StringVar(&dnsPrefix, "dns-prefix", "", "prefix of the API server's host name (default: the AKS cluster name)")
	f.StringVar(&vmSize, "vm-size", "", "VM size of the nodes (default: the provider's)")
	return cmd
}

func newClusterCreateGKECommand(k *kubeOptions) *cobra.Command {
	var c createFlags
	var project, region, zone, clusterName, machineType string
	var nodes int64
	cmd := &cobra.Command{
		Use: "gke", Short: "Create a GKE cluster", Args: cobra.NoArgs,
		Example: `  drover cluster create gke --name prod --project acme --region europe-west1 --credential gcp \
    --kubernetes-version 1.33 --nodes 1 --wait`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.fromFile(cmd.InOrStdin(), func() (*v1.Cluster, error) {
				if err := c.require(map[string]string{"--project": project}); err != nil {
					return nil, err
				}
				if (region == "") == (zone == "") {
					return nil, usageErrorf("exactly one of --region (regional cluster) and --zone (zonal cluster) is required")
				}
				cfg := &v1.GKEClusterConfig{ClusterName: clusterName, ProjectID: project, Region: region, Zone: zone,
					CredentialSecret: c.credential, Labels: c.tags}
				if cfg.ClusterName == "" {
					cfg.ClusterName = c.name
				}
				if c.version != "" {
					cfg.KubernetesVersion = ptr.To(c.version)
				}
				if nodes > 0 {
					np := v1.GKENodePool{Name: "default-pool", InitialNodeCount: ptr.To(nodes)}
					if machineType != "" {
						np.Config = &v1.GKENodeConfig{MachineType: ptr.To(machineType)}
					}
					cfg.NodePools = []v1.GKENodePool{np}
				}
				return &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: v1.ClusterSpec{GKEConfig: cfg}}, nil
			})
			if err != nil {
				return err
			}
			return createCluster(cmd, k, gke.Provider{}, cl, &c, "created")
		},
	}
	c.add(cmd, "serviceAccountJSON")
	f := cmd.Flags()
	f.StringVar(&clusterName, "cluster-name", "", "GKE cluster name, if different from --name")
	f.StringVar(&project, "project", "", "Google Cloud project ID (required unless -f)")
	f.StringVar(&region, "region", "", "region of a regional cluster, e.g. europe-west1")
	f.StringVar(&zone, "zone", "", "zone of a zonal cluster, e.g. europe-west1-b")
	f.Int64Var(&nodes, "nodes", 1, "initial size of the node pool \"default-pool\" (GKE Standard needs one)")
	f.StringVar(&machineType, "machine-type", "", "machine type of the nodes (default: the provider's)")
	return cmd
}

// require fails with a usage error when --name, --credential or one of more is empty.
func (c *createFlags) require(more map[string]string) error {
	more["--name"], more["--credential"], more["--kubernetes-version"] = c.name, c.credential, c.version
	for _, flag := range []string{"--name", "--credential", "--region", "--resource-group", "--location", "--project", "--kubernetes-version",
		"--service-role", "--subnets"} {
		if v, ok := more[flag]; ok && v == "" {
			return usageErrorf("%s is required (or pass -f FILE)", flag)
		}
	}
	return nil
}

// fromFile reads -f (a file, or stdin for "-"), else builds the Cluster from flags.
func (c *createFlags) fromFile(stdin io.Reader, fromFlags func() (*v1.Cluster, error)) (*v1.Cluster, error) {
	if c.file == "" {
		return fromFlags()
	}
	var b []byte
	var err error
	if c.file == "-" {
		if b, err = io.ReadAll(stdin); err != nil {
			return nil, fmt.Errorf("-f -: read stdin: %w", err)
		}
	} else if b, err = os.ReadFile(c.file); err != nil {
		return nil, fmt.Errorf("-f %s: %w: pass a Cluster manifest file, or - for stdin", c.file, err)
	}
	cl := &v1.Cluster{}
	if err := yaml.UnmarshalStrict(b, cl); err != nil {
		return nil, fmt.Errorf("-f %s: %w", c.file, err)
	}
	if cl.Name == "" {
		cl.Name = c.name
	}
	if cl.Name == "" {
		return nil, usageErrorf("-f %s has no metadata.name: set it or pass --name", c.file)
	}
	return cl, nil
}

// createCluster validates cl, creates it in the namespace (the file's, else -n or the context's)
// and with --wait follows it until it is active.
func createCluster(cmd *cobra.Command, k *kubeOptions, p hosted.Provider, cl *v1.Cluster, cf *createFlags, verb string) error {
	w := &cf.wait
	dry, err := clientDryRun(cf.dryRun, "Cluster")
	if err != nil {
		return err
	}
	if !p.Matches(cl) {
		return usageErrorf("the manifest is not a %s cluster", p.Name())
	}
	if err := p.Validate(cl); err != nil {
		return err
	}
	if dry {
		if cl.Namespace == "" {
			if cl.Namespace, err = k.namespace("default"); err != nil {
				return err
			}
		} else if flag := *k.flags.Namespace; flag != "" && cl.Namespace != flag {
			return usageErrorf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.",
				cl.Namespace, flag, cl.Namespace)
		}
		cl.APIVersion, cl.Kind = v1.GroupVersion.String(), "Cluster"
		return printManifest(cmd.OutOrStdout(), cl)
	}
	c, ns, err := k.client("default")
	if err != nil {
		return err
	}
	// As kubectl: the manifest's namespace wins over the context's, and one that differs from
	// -n is a mistake to point out, not to settle silently either way.
	switch flag := *k.flags.Namespace; {
	case cl.Namespace != "" && flag != "" && cl.Namespace != flag:
		return usageErrorf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.",
			cl.Namespace, flag, cl.Namespace)
	case cl.Namespace == "":
		cl.Namespace = ns
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	if err := c.Create(ctx, cl); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster %s/%s already exists (see `drover cluster get %s -n %s`)", cl.Namespace, cl.Name, cl.Name, cl.Namespace)
		}
		return fmt.Errorf("create cluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "cluster.management.drover.io/%s %s in namespace %s (%s)\n", cl.Name, verb, cl.Namespace, p.Name())
	// A mistyped --credential is the likeliest mistake: say so now (a caller who may not read
	// Secrets is not told anything).
	secret := p.CredentialSecret(cl)
	secretMeta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}} // not its values
	if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: secret}, secretMeta); apierrors.IsNotFound(err) {
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: the credential Secret %s/%s does not exist: the cluster waits until it is created (see README or docs/hosted-clusters.md for its keys)\n", cl.Namespace, secret)
	}
	if !w.wait {
		fmt.Fprintf(out, "Follow it with: drover cluster get %s -n %s (or pass --wait)\n", cl.Name, cl.Namespace)
		return nil
	}
	return waitUntil(cmd.Context(), out, "cluster "+cl.Namespace+"/"+cl.Name, w.timeout, clusterActive(c, client.ObjectKeyFromObject(cl)))
}

func newClusterDeleteCommand(k *kubeOptions) *cobra.Command {
	var d deleteFlags
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete hosted clusters (created ones in the cloud too; imported ones are only forgotten)",
		Example: `  drover cluster delete prod --wait
  drover cluster delete a b c -n team-a`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, "default", &v1.ClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := k.client("default")
			if err != nil {
				return err
			}
			return deleteAll(cmd, c, ns, args, "cluster", "cluster.management.drover.io", func() client.Object { return &v1.Cluster{} }, d)
		},
	}
	d.add(cmd, "the clusters are gone (cloud resources deleted)", 30*time.Minute)
	return cmd
}
