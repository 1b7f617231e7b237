package access

import (
	"context"
	"encoding/base64"
	"fmt"

	"cloud.google.com/go/auth"
	container "google.golang.org/api/container/v1"
)

// GKE returns credentials for the GKE cluster projects/project/locations/location/clusters/name:
// endpoint and CA from clusters.get on svc (GKEEndpoint), and an OAuth2 access token of the
// service account from tp (the credentials drover manages the cluster with; their own cache
// refreshes the token shortly before it expires).
func GKE(ctx context.Context, svc *container.Service, tp auth.TokenProvider, project, location, name string) (*Credentials, error) {
	host, ca, err := GKEEndpoint(ctx, svc, project, location, name)
	if err != nil {
		return nil, err
	}
	tok, err := tp.Token(ctx)
	if err != nil {
		return nil, fmt.Errorf("getting an access token for GKE cluster %s: %w", gkeName(project, location, name), err)
	}
	return &Credentials{Host: host, CAData: ca, Token: tok.Value, Expiry: tok.Expiry}, nil
}

func gkeName(project, location, name string) string {
	return "projects/" + project + "/locations/" + location + "/clusters/" + name
}

// GKEEndpoint returns the API server URL (https://endpoint) and the PEM of its CA
// (masterAuth.clusterCaCertificate) of the GKE cluster
// projects/project/locations/location/clusters/name, from clusters.get on svc. The cluster must
// be RUNNING or RECONCILING; a private endpoint only gives ErrEndpointPrivate.
func GKEEndpoint(ctx context.Context, svc *container.Service, project, location, name string) (string, []byte, error) {
	full := gkeName(project, location, name)
	cl, err := svc.Projects.Locations.Clusters.Get(full).Context(ctx).Do()
	if err != nil {
		return "", nil, fmt.Errorf("clusters.get %s: %w", full, err)
	}
	if cl.Status != "RUNNING" && cl.Status != "RECONCILING" {
		return "", nil, fmt.Errorf("GKE cluster %s is %s: %w", full, cl.Status, ErrNotReady)
	}
	if p := cl.PrivateClusterConfig; p != nil && p.EnablePrivateEndpoint {
		return "", nil, fmt.Errorf("GKE cluster %s: %w", full, ErrEndpointPrivate)
	}
	if cl.Endpoint == "" || cl.MasterAuth == nil {
		return "", nil, fmt.Errorf("GKE cluster %s: %w", full, ErrNotReady)
	}
	ca, err := base64.StdEncoding.DecodeString(cl.MasterAuth.ClusterCaCertificate)
	if err != nil {
		return "", nil, fmt.Errorf("GKE cluster %s: masterAuth.clusterCaCertificate is not base64", full)
	}
	if err := checkCA(ca, "GKE cluster "+full); err != nil {
		return "", nil, err
	}
	return "https://" + cl.Endpoint, ca, nil
}
