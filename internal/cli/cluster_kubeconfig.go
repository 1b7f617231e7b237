package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/spf13/cobra"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/option"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted/access"
)

// Environment variables the kubeconfig and token commands read besides the SDKs' own.
const (
	// envGKEEndpoint is gcloud's override of the GKE API URL; drover honours it too.
	envGKEEndpoint = "CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER"
	// envAzureAuthority is azidentity's Entra ID authority host.
	envAzureAuthority = "AZURE_AUTHORITY_HOST"
	// envAzureSubscription is the Azure subscription when the hosted Cluster's status lacks it.
	envAzureSubscription = "AZURE_SUBSCRIPTION_ID"
	// envExecInfo is what kubectl tells an exec plugin (the ExecCredential apiVersion it wants).
	envExecInfo = "KUBERNETES_EXEC_INFO"
)

const (
	execAPIVersionV1      = "client.authentication.k8s.io/v1"
	execAPIVersionV1beta1 = "client.authentication.k8s.io/v1beta1"
	// eksTokenRefresh is how long before EKS stops accepting a token the exec plugin says it
	// expires, so kubectl asks for a new one in time (aws eks get-token says 14 minutes too).
	eksTokenRefresh   = time.Minute
	droverInstallHint = "drover cluster token is part of the drover command line: put the drover binary on your PATH " +
		"(see https://github.com/droverhq/drover), or write the kubeconfig with --exec aws|gcloud."
)

// kubeconfigFlags are `drover cluster kubeconfig`'s flags.
type kubeconfigFlags struct {
	output, exec, endpoint, authority, subscription string
	admin                                           bool
}

func newClusterKubeconfigCommand(k *kubeOptions) *cobra.Command {
	var f kubeconfigFlags
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME",
		Short: "Print a kubeconfig for a hosted cluster that authenticates with your own cloud credentials",
		Long: `Print a kubeconfig for the hosted cluster NAME that authenticates with YOUR cloud credentials
(the SDKs' default chains: AWS_* / ~/.aws, Application Default Credentials, AZURE_* / az login),
never with the credential Secret drover manages the cluster with (it is not even read).

The endpoint and CA come from the provider (DescribeCluster, clusters.get) called with your
credentials. EKS and GKE kubeconfigs run an exec plugin that gets a short-lived token at each
use: by default ` + "`drover cluster token eks|gke`" + ` (drover must be on your PATH); --exec aws
writes ` + "`aws eks get-token`" + ` instead, --exec gcloud ` + "`gke-gcloud-auth-plugin`" + `. An AKS kubeconfig
is the one listClusterUserCredential (--admin: listClusterAdminCredential) returns.

--endpoint points the provider API (and, for EKS, STS) at another URL, such as drover's
simulators; AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_EKS/_STS and CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER
work too. For AKS, --authority-host (or AZURE_AUTHORITY_HOST) is the Entra ID host, and the
subscription comes from the Cluster's status, else --subscription or AZURE_SUBSCRIPTION_ID.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeOneName(k, "default", &v1.ClusterList{}),
		Example: `  drover cluster kubeconfig prod > prod.kubeconfig && kubectl --kubeconfig prod.kubeconfig get ns
  drover cluster kubeconfig prod -n team-a -o ~/.kube/prod
  drover cluster kubeconfig prod --exec aws
  drover cluster kubeconfig prod-aks --admin`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if isOutputFormat(f.output) {
				return usageErrorf("-o/--output is the file to write the kubeconfig to, not a format: %q (stdout: omit it or use -)", f.output)
			}
			names, err := objectNames(&v1.Cluster{}, args)
			if err != nil {
				return err
			}
			args = names
			c, ns, err := k.client("default")
			if err != nil {
				return err
			}
			cl := &v1.Cluster{}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[0]}, cl); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("cluster %q not found in namespace %s (see `drover cluster list -n %s`)", args[0], ns, ns)
				}
				return fmt.Errorf("get cluster %s/%s: %w", ns, args[0], err)
			}
			var kc []byte
			switch {
			case cl.Spec.EKSConfig != nil:
				kc, err = eksKubeconfig(ctx, cl.Spec.EKSConfig, &f)
			case cl.Spec.GKEConfig != nil:
				kc, err = gkeKubeconfig(ctx, cl.Spec.GKEConfig, &f)
			case cl.Spec.AKSConfig != nil:
				kc, err = aksKubeconfig(ctx, cl, &f)
			default:
				return fmt.Errorf("cluster %s/%s has no provider config this drover knows", ns, cl.Name)
			}
			if err != nil {
				return err
			}
			if f.output == "" || f.output == "-" {
				_, err := cmd.OutOrStdout().Write(kc)
				return err
			}
			if err := os.WriteFile(f.output, kc, 0o600); err != nil {
				return fmt.Errorf("writing the kubeconfig: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Wrote the kubeconfig of cluster %s/%s to %s\n", ns, cl.Name, f.output)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "", "file to write the kubeconfig to, mode 0600 (default: stdout)")
	fl.StringVar(&f.exec, "exec", "drover", "EKS/GKE token plugin: drover (drover cluster token), aws (aws eks get-token) or gcloud (gke-gcloud-auth-plugin)")
	fl.StringVar(&f.endpoint, "endpoint", "", "provider API URL (EKS and STS, GKE, AKS Resource Manager), e.g. a simulator's")
	fl.StringVar(&f.authority, "authority-host", "", "AKS: Entra ID authority host (default: $AZURE_AUTHORITY_HOST, else Azure's public cloud)")
	fl.StringVar(&f.subscription, "subscription", "", "AKS: subscription ID, when the Cluster's status does not show it (default: $AZURE_SUBSCRIPTION_ID)")
	fl.BoolVar(&f.admin, "admin", false, "AKS: the cluster admin credential (listClusterAdminCredential) instead of the user one")
	return cmd
}

// isOutputFormat tells a format name given to -o (as other drover commands take it) from a file.
func isOutputFormat(s string) bool {
	switch s {
	case "json", "yaml", "name", "wide", "table":
		return true
	}
	return strings.HasPrefix(s, "jsonpath=")
}

// execKubeconfig is a kubeconfig for host with CA ca whose user runs exec.
func execKubeconfig(name, host string, ca []byte, exec *clientcmdapi.ExecConfig) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Exec: exec}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the kubeconfig of %s: %w", name, err)
	}
	return b, nil
}

// --- EKS ---

// callerAWSConfig is the caller's AWS config from the SDK's default chain (environment, shared
// files and profiles, SSO, container and instance roles), with the credentials checked, so a
// caller without any gets an error naming what to set rather than the SDK's chain of failures.
func callerAWSConfig(ctx context.Context, region string) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region))
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading your AWS configuration: %w", err)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return aws.Config{}, fmt.Errorf("no AWS credentials of yours found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "+
			"(and AWS_SESSION_TOKEN), or AWS_PROFILE with ~/.aws/credentials or `aws sso login`, or run with an instance or pod role: %w", err)
	}
	return cfg, nil
}

func eksKubeconfig(ctx context.Context, cfg *v1.EKSClusterConfig, f *kubeconfigFlags) ([]byte, error) {
	if f.exec != "drover" && f.exec != "aws" {
		return nil, usageErrorf("--exec %q: an EKS cluster's token comes from drover or aws", f.exec)
	}
	awsCfg, err := callerAWSConfig(ctx, cfg.Region)
	if err != nil {
		return nil, err
	}
	api := awseks.NewFromConfig(awsCfg, func(o *awseks.Options) {
		if f.endpoint != "" {
			o.BaseEndpoint = aws.String(f.endpoint)
		}
	})
	host, ca, err := access.EKSEndpoint(ctx, api, cfg.DisplayName)
	if err != nil {
		return nil, explainAccess(err, "EKS cluster "+cfg.DisplayName+" in "+cfg.Region)
	}
	exec := &clientcmdapi.ExecConfig{APIVersion: execAPIVersionV1, Command: "drover",
		Args:            []string{"cluster", "token", "eks", "--cluster-name", cfg.DisplayName, "--region", cfg.Region},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode, InstallHint: droverInstallHint}
	if f.endpoint != "" {
		exec.Args = append(exec.Args, "--endpoint", f.endpoint)
	}
	if f.exec == "aws" {
		exec = &clientcmdapi.ExecConfig{APIVersion: execAPIVersionV1beta1, Command: "aws",
			Args:            []string{"--region", cfg.Region, "eks", "get-token", "--cluster-name", cfg.DisplayName, "--output", "json"},
			InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode}
		if f.endpoint != "" {
			exec.Env = []clientcmdapi.ExecEnvVar{{Name: "AWS_ENDPOINT_URL_STS", Value: f.endpoint}}
		}
	}
	return execKubeconfig("eks_"+cfg.Region+"_"+cfg.DisplayName, host, ca, exec)
}

// explainAccess adds what to do to access's own errors (not ready, private endpoint).
func explainAccess(err error, what string) error {
	switch {
	case errors.Is(err, access.ErrEndpointPrivate):
		return fmt.Errorf("%w: reach it from inside its network, or enable its public endpoint", err)
	case errors.Is(err, access.ErrNotReady):
		return fmt.Errorf("%w (is %s still being created? see `drover cluster get`)", err, what)
	}
	return err
}

// --- GKE ---

// callerGoogleCredentials are the caller's Application Default Credentials.
func callerGoogleCredentials(ctx context.Context) (*auth.Credentials, *auth.Token, error) {
	creds, err := credentials.DetectDefault(&credentials.DetectOptions{Scopes: []string{container.CloudPlatformScope}})
	if err == nil {
		var tok *auth.Token
		if tok, err = creds.Token(ctx); err == nil {
			return creds, tok, nil
		}
	}
	return nil, nil, fmt.Errorf("no Google Application Default Credentials of yours: set GOOGLE_APPLICATION_CREDENTIALS "+
		"to a service-account key file, or run `gcloud auth application-default login`: %w", err)
}

func gkeKubeconfig(ctx context.Context, cfg *v1.GKEClusterConfig, f *kubeconfigFlags) ([]byte, error) {
	if f.exec != "drover" && f.exec != "gcloud" {
		return nil, usageErrorf("--exec %q: a GKE cluster's token comes from drover or gcloud", f.exec)
	}
	creds, _, err := callerGoogleCredentials(ctx)
	if err != nil {
		return nil, err
	}
	opts := []option.ClientOption{option.WithAuthCredentials(creds)}
	endpoint := f.endpoint
	if endpoint == "" {
		endpoint = os.Getenv(envGKEEndpoint)
	}
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(strings.TrimRight(endpoint, "/")+"/"))
	}
	svc, err := container.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("GKE client: %w", err)
	}
	location := cfg.Zone
	if location == "" {
		location = cfg.Region
	}
	host, ca, err := access.GKEEndpoint(ctx, svc, cfg.ProjectID, location, cfg.ClusterName)
	if err != nil {
		return nil, explainAccess(err, "GKE cluster "+cfg.ClusterName)
	}
	exec := &clientcmdapi.ExecConfig{APIVersion: execAPIVersionV1, Command: "drover", Args: []string{"cluster", "token", "gke"},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode, InstallHint: droverInstallHint}
	if f.exec == "gcloud" {
		exec = &clientcmdapi.ExecConfig{APIVersion: execAPIVersionV1beta1, Command: "gke-gcloud-auth-plugin", ProvideClusterInfo: true,
			InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode,
			InstallHint:     "Install gke-gcloud-auth-plugin for use with kubectl by following https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin"}
	}
	return execKubeconfig("gke_"+cfg.ProjectID+"_"+location+"_"+cfg.ClusterName, host, ca, exec)
}

// --- AKS ---

// azureCloud is the cloud configuration for an ARM endpoint and authority host ("" each: Azure's
// public cloud, the authority from AZURE_AUTHORITY_HOST as azidentity reads it).
func azureCloud(endpoint, authority string) cloud.Configuration {
	cfg := cloud.AzurePublic
	if authority == "" {
		authority = os.Getenv(envAzureAuthority)
	}
	if authority != "" {
		cfg.ActiveDirectoryAuthorityHost = strings.TrimSuffix(authority, "/") + "/"
	}
	if endpoint != "" {
		ep := strings.TrimSuffix(endpoint, "/")
		cfg.Services = map[cloud.ServiceName]cloud.ServiceConfiguration{cloud.ResourceManager: {Endpoint: ep, Audience: ep}}
	}
	return cfg
}

// callerAzureCredential is the caller's credential from azidentity's default chain
// (environment, workload identity, managed identity, az login, azd), checked by getting an ARM
// token, so a caller without any gets an error naming what to set.
func callerAzureCredential(ctx context.Context, cfg cloud.Configuration) (azcore.TokenCredential, error) {
	cred, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{
		ClientOptions: policy.ClientOptions{Cloud: cfg},
		// MSAL asks login.microsoftonline.com about an authority it does not know.
		DisableInstanceDiscovery: cfg.ActiveDirectoryAuthorityHost != cloud.AzurePublic.ActiveDirectoryAuthorityHost,
	})
	if err == nil {
		_, err = cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{cfg.Services[cloud.ResourceManager].Audience + "/.default"}})
	}
	if err != nil {
		return nil, fmt.Errorf("no Azure credentials of yours: set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET "+
			"(a service principal), or run `az login`: %w", err)
	}
	return cred, nil
}

// aksSubscription is the cluster's subscription: the flag, the ARM ID in the status, or the
// environment.
func aksSubscription(cl *v1.Cluster, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if st := cl.Status.AKSStatus; st != nil {
		if rest, ok := strings.CutPrefix(strings.ToLower(st.ID), "/subscriptions/"); ok {
			sub, _, _ := strings.Cut(rest, "/")
			return sub, nil
		}
	}
	if s := os.Getenv(envAzureSubscription); s != "" {
		return s, nil
	}
	return "", usageErrorf("the subscription of AKS cluster %s is not in its status yet: give --subscription (or set %s)", cl.Name, envAzureSubscription)
}

func aksKubeconfig(ctx context.Context, cl *v1.Cluster, f *kubeconfigFlags) ([]byte, error) {
	cfg := cl.Spec.AKSConfig
	if f.exec != "drover" {
		return nil, usageErrorf("--exec %q: an AKS kubeconfig is the one AKS lists; --exec is for EKS and GKE", f.exec)
	}
	sub, err := aksSubscription(cl, f.subscription)
	if err != nil {
		return nil, err
	}
	cc := azureCloud(f.endpoint, f.authority)
	cred, err := callerAzureCredential(ctx, cc)
	if err != nil {
		return nil, err
	}
	clusters, err := armcontainerservice.NewManagedClustersClient(sub, cred, &arm.ClientOptions{ClientOptions: policy.ClientOptions{Cloud: cc}})
	if err != nil {
		return nil, fmt.Errorf("AKS client: %w", err)
	}
	var kcs []*armcontainerservice.CredentialResult
	op := "listClusterUserCredential"
	if f.admin {
		op = "listClusterAdminCredential"
		res, err := clusters.ListClusterAdminCredentials(ctx, cfg.ResourceGroup, cfg.ClusterName, nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", op, cfg.ResourceGroup, cfg.ClusterName, err)
		}
		kcs = res.Kubeconfigs
	} else {
		res, err := clusters.ListClusterUserCredentials(ctx, cfg.ResourceGroup, cfg.ClusterName, nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", op, cfg.ResourceGroup, cfg.ClusterName, err)
		}
		kcs = res.Kubeconfigs
	}
	if len(kcs) == 0 || kcs[0] == nil || len(kcs[0].Value) == 0 {
		return nil, fmt.Errorf("%s %s/%s returned no kubeconfig", op, cfg.ResourceGroup, cfg.ClusterName)
	}
	return kcs[0].Value, nil
}

// --- drover cluster token ---

func newClusterTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print an ExecCredential with a token of your own for a hosted cluster (kubectl exec plugin)",
		Long: `Print a client.authentication.k8s.io ExecCredential (JSON) with a short-lived token for a
hosted cluster's API server, made with YOUR cloud credentials. The kubeconfigs of
` + "`drover cluster kubeconfig`" + ` run it as their exec plugin; you rarely run it yourself.`,
		Example: "  drover cluster token eks --cluster-name prod --region us-west-2\n  drover cluster token gke",
	}
	var clusterName, region, endpoint string
	eksCmd := &cobra.Command{
		Use: "eks", Short: "An EKS token (k8s-aws-v1, a presigned STS GetCallerIdentity) from your AWS credentials", Args: cobra.NoArgs,
		Example: "  drover cluster token eks --cluster-name prod --region us-west-2",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if clusterName == "" || region == "" {
				return usageErrorf("--cluster-name and --region are required")
			}
			cfg, err := callerAWSConfig(cmd.Context(), region)
			if err != nil {
				return err
			}
			tok, exp, err := access.EKSToken(cmd.Context(), cfg, endpoint, clusterName)
			if err != nil {
				return err
			}
			return writeExecCredential(cmd, tok, exp.Add(-eksTokenRefresh))
		},
	}
	f := eksCmd.Flags()
	f.StringVar(&clusterName, "cluster-name", "", "EKS cluster name (required)")
	f.StringVar(&region, "region", "", "AWS region (required)")
	f.StringVar(&endpoint, "endpoint", "", "STS URL to sign for (default: the SDK's, honouring AWS_ENDPOINT_URL_STS)")
	gkeCmd := &cobra.Command{
		Use: "gke", Short: "A GKE token (an OAuth2 access token) from your Application Default Credentials", Args: cobra.NoArgs,
		Example: "  drover cluster token gke",
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, tok, err := callerGoogleCredentials(cmd.Context())
			if err != nil {
				return err
			}
			return writeExecCredential(cmd, tok.Value, tok.Expiry)
		},
	}
	cmd.AddCommand(eksCmd, gkeCmd)
	return cmd
}

// writeExecCredential prints an ExecCredential of the apiVersion kubectl asked for in
// KUBERNETES_EXEC_INFO (v1 when run by hand).
func writeExecCredential(cmd *cobra.Command, token string, expiry time.Time) error {
	apiVersion := execAPIVersionV1
	if info := os.Getenv(envExecInfo); info != "" {
		var asked metav1.TypeMeta
		if err := json.Unmarshal([]byte(info), &asked); err == nil && asked.APIVersion != "" {
			apiVersion = asked.APIVersion
		}
	}
	ec := clientauthv1.ExecCredential{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "ExecCredential"},
		Status:   &clientauthv1.ExecCredentialStatus{Token: token},
	}
	if !expiry.IsZero() {
		ec.Status.ExpirationTimestamp = &metav1.Time{Time: expiry}
	}
	b, err := json.Marshal(ec)
	if err != nil {
		return fmt.Errorf("encoding the ExecCredential: %w", err)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
	return err
}
