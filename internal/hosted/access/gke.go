package access

import (
	"context"
	"encoding/base64"
	"fmt"

	"cloud.google.com/go/auth"
	container "google.golang.org/api/container/v1"
)

// GKE returns credentials for the GKE cluster projects/project/locations/location/clusters/name:
// endpoint and masterAuth.clusterCaCertificate from clusters.get on svc, and an OAuth2 access
// token of the service account from tp (the credentials drover manages the cluster with; their
// own cache refreshes the token shortly before it expires). The cluster must be RUNNING or
// RECONCILING; a private endpoint only gives ErrEndpointPrivate.
func GKE(ctx context.Context, svc *container.Service, tp auth.TokenProvider, project, location, name string) (*Credentials, error) {
	full := "projects/" + project + "/locations/" + location + "/clusters/" + name
	cl, err := svc.Projects.Locations.Clusters.Get(full).Context(ctx).Do()
	if err != nil {
		return nil, fmt.Errorf("clusters.get %s: %w", full, err)
	}
	if cl.Status != "RUNNING" && cl.Status != "RECONCILING" {
		return nil, fmt.Errorf("GKE cluster %s is %s: %w", full, cl.Status, ErrNotReady)
	}
	if p := cl.PrivateClusterConfig; p != nil && p.EnablePrivateEndpoint {
		return nil, fmt.Errorf("GKE cluster %s: %w", full, ErrEndpointPrivate)
	}
	if cl.Endpoint == "" || cl.MasterAuth == nil {
		return nil, fmt.Errorf("GKE cluster %s: %w", full, ErrNotReady)
	}
	ca, err := base64.StdEncoding.DecodeString(cl.MasterAuth.ClusterCaCertificate)
	if err != nil {
		return nil, fmt.Errorf("GKE cluster %s: masterAuth.clusterCaCertificate is not base64", full)
	}
	if err := checkCA(ca, "GKE cluster "+full); err != nil {
		return nil, err
	}
	tok, err := tp.Token(ctx)
	if err != nil {
		return nil, fmt.Errorf("getting an access token for GKE cluster %s: %w", full, err)
	}
	return &Credentials{Host: "https://" + cl.Endpoint, CAData: ca, Token: tok.Value, Expiry: tok.Expiry}, nil
}
