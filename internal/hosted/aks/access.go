package aks

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/access"
)

// DefaultCredentialValidity is how long drover uses a listed AKS credential before listing it
// again: AKS does not say when a local account's token stops working (when its credentials
// are rotated), so drover lists them again every hour.
const DefaultCredentialValidity = time.Hour

// Access returns credentials for the cluster's Kubernetes API from listClusterUserCredential,
// or listClusterAdminCredential when spec.fleet.aksCredential is admin. A private cluster
// (privateCluster: true) gives access.ErrEndpointPrivate.
func (p Provider) Access(ctx context.Context, c *v1.Cluster, s *corev1.Secret, transport hosted.Transport) (*access.Credentials, error) {
	cfg := c.Spec.AKSConfig
	if st := c.Status.AKSStatus; st != nil && st.UpstreamSpec != nil && st.UpstreamSpec.PrivateCluster != nil && *st.UpstreamSpec.PrivateCluster {
		return nil, fmt.Errorf("AKS cluster %s/%s: %w", cfg.ResourceGroup, cfg.ClusterName, access.ErrEndpointPrivate)
	}
	clients, err := p.clients(s, transport)
	if err != nil {
		return nil, err
	}
	admin := c.Spec.Fleet != nil && c.Spec.Fleet.AKSCredential == v1.AKSCredentialAdmin
	validity := p.CredentialValidity
	if validity <= 0 {
		validity = DefaultCredentialValidity
	}
	creds, err := access.AKS(ctx, clients.clusters, cfg.ResourceGroup, cfg.ClusterName, admin, validity)
	if err != nil {
		if errors.Is(err, access.ErrNotReady) {
			return nil, err
		}
		op := "ListClusterUserCredentials"
		if admin {
			op = "ListClusterAdminCredentials"
		}
		return nil, classify(op, err)
	}
	return creds, nil
}
