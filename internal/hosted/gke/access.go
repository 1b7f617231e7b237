package gke

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	container "google.golang.org/api/container/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/access"
)

// accessClient is a container service and the credentials it authenticates with, whose
// access tokens drover also presents to the cluster's API server.
type accessClient struct {
	svc   *container.Service
	creds *auth.Credentials
}

// Access returns credentials for the cluster's Kubernetes API: endpoint and CA from
// clusters.get, and an OAuth2 access token of the credential Secret's service account (the
// credentials cache it and fetch a new one shortly before it expires).
func (p Provider) Access(ctx context.Context, c *v1.Cluster, s *corev1.Secret, transport hosted.Transport) (*access.Credentials, error) {
	cfg := c.Spec.GKEConfig
	key := s.Data[KeyServiceAccountJSON]
	if len(key) == 0 {
		return nil, &hosted.FieldError{Field: "gkeConfig.credentialSecret", Reason: v1.ReasonSecretIncomplete,
			Message: fmt.Sprintf("Secret %s/%s lacks key %s: add a service-account JSON key (keys: serviceAccountJSON, optional endpoint).", s.Namespace, s.Name, KeyServiceAccountJSON)}
	}
	endpoint := strings.TrimRight(strings.TrimSpace(string(s.Data[KeyEndpoint])), "/")
	ac, err := hosted.CachedClient(hosted.Clients, hosted.NewClientKey("gke", s, "access|"+endpoint, transport), func() (*accessClient, error) {
		creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, key, &credentials.DetectOptions{Scopes: []string{container.CloudPlatformScope}})
		if err != nil {
			return nil, err
		}
		svc, err := serviceWith(ctx, creds, endpoint, transport)
		if err != nil {
			return nil, err
		}
		return &accessClient{svc: svc, creds: creds}, nil
	})
	if err != nil {
		return nil, &hosted.FieldError{Field: "gkeConfig.credentialSecret", Reason: v1.ReasonSecretInvalid,
			Message: fmt.Sprintf("Secret %s/%s key %s is not a usable service-account JSON key: %v", s.Namespace, s.Name, KeyServiceAccountJSON, err)}
	}
	creds, err := access.GKE(ctx, ac.svc, ac.creds, cfg.ProjectID, location(cfg), cfg.ClusterName)
	if err != nil {
		if errors.Is(err, access.ErrNotReady) || errors.Is(err, access.ErrEndpointPrivate) {
			return nil, err
		}
		return nil, classify("clusters.get", err)
	}
	return creds, nil
}
