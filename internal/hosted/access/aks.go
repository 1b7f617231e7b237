package access

import (
	"context"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	"k8s.io/client-go/tools/clientcmd"
)

// AKSCredentialLister is the part of the managed clusters client AKS needs;
// *armcontainerservice.ManagedClustersClient implements it.
type AKSCredentialLister interface {
	ListClusterUserCredentials(ctx context.Context, resourceGroupName, resourceName string, options *armcontainerservice.ManagedClustersClientListClusterUserCredentialsOptions) (armcontainerservice.ManagedClustersClientListClusterUserCredentialsResponse, error)
	ListClusterAdminCredentials(ctx context.Context, resourceGroupName, resourceName string, options *armcontainerservice.ManagedClustersClientListClusterAdminCredentialsOptions) (armcontainerservice.ManagedClustersClientListClusterAdminCredentialsResponse, error)
}

// AKS returns credentials for the AKS cluster name in resourceGroup from the kubeconfig of
// listClusterAdminCredential (admin) or listClusterUserCredential. AKS does not say how long a
// local account's token lives (until its credentials are rotated), so the credentials are given
// validFor from now: the caller lists them again before then. A cluster whose kubeconfig needs
// an exec plugin (Entra ID integration: kubelogin) is refused with a message saying so.
func AKS(ctx context.Context, api AKSCredentialLister, resourceGroup, name string, admin bool, validFor time.Duration) (*Credentials, error) {
	op := "ListClusterUserCredentials"
	var kcs []*armcontainerservice.CredentialResult
	if admin {
		op = "ListClusterAdminCredentials"
		res, err := api.ListClusterAdminCredentials(ctx, resourceGroup, name, nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", op, resourceGroup, name, err)
		}
		kcs = res.Kubeconfigs
	} else {
		res, err := api.ListClusterUserCredentials(ctx, resourceGroup, name, nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", op, resourceGroup, name, err)
		}
		kcs = res.Kubeconfigs
	}
	issued := time.Now()
	if len(kcs) == 0 || kcs[0] == nil || len(kcs[0].Value) == 0 {
		return nil, fmt.Errorf("%s %s/%s returned no kubeconfig: %w", op, resourceGroup, name, ErrNotReady)
	}
	cfg, err := clientcmd.Load(kcs[0].Value)
	if err != nil {
		// The error of a YAML parser may quote the document, token included: do not wrap it.
		return nil, fmt.Errorf("%s %s/%s: the kubeconfig does not parse", op, resourceGroup, name)
	}
	ctxName := cfg.CurrentContext
	kctx := cfg.Contexts[ctxName]
	if kctx == nil {
		return nil, fmt.Errorf("%s %s/%s: the kubeconfig has no current context", op, resourceGroup, name)
	}
	cl, user := cfg.Clusters[kctx.Cluster], cfg.AuthInfos[kctx.AuthInfo]
	if cl == nil || user == nil || cl.Server == "" {
		return nil, fmt.Errorf("%s %s/%s: the kubeconfig's context %s lacks its cluster or user", op, resourceGroup, name, ctxName)
	}
	if user.Exec != nil || user.AuthProvider != nil {
		return nil, fmt.Errorf("%s %s/%s: the kubeconfig authenticates through a plugin (Entra ID integration); drover needs a local account (disableLocalAccounts=false)", op, resourceGroup, name)
	}
	if user.Token == "" {
		return nil, fmt.Errorf("%s %s/%s: the kubeconfig's user has no token", op, resourceGroup, name)
	}
	if err := checkCA(cl.CertificateAuthorityData, "AKS cluster "+resourceGroup+"/"+name); err != nil {
		return nil, err
	}
	return &Credentials{Host: cl.Server, CAData: cl.CertificateAuthorityData, Token: user.Token, Expiry: issued.Add(validFor)}, nil
}
