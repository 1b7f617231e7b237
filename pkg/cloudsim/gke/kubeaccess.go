package gke

import (
	"encoding/base64"
	"errors"
	"strings"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// Access to a simulated cluster's Kubernetes API: GKE authenticates the OAuth2 access token of
// a Google identity (the service account's, from the token endpoint) and authorizes it with
// the identity's IAM roles in the cluster's project.

// MastersGroup is the group the simulator's TokenReview gives a service account allowed in the
// project with a read-write scope: on GKE, roles/container.admin makes it cluster-admin through
// GKE's IAM authorizer, which a backing kube-apiserver (RBAC only) does not have.
const MastersGroup = "system:masters"

// setBackend points the cluster's endpoint and CA at b.
func (rec *clusterRec) setBackend(b *simcore.Backend) {
	rec.backend = b
	rec.c.Endpoint = b.HostPort()
	rec.c.MasterAuth = &container.MasterAuth{ClusterCaCertificate: base64.StdEncoding.EncodeToString(b.CAPEM)}
	rec.json = nil
}

// SetBackend makes b serve the cluster: clusters.get reports its endpoint (host:port) and CA,
// and b's TokenReview path accepts tokens for the cluster's project.
func (s *Server) SetBackend(project, location, name string, b *simcore.Backend) error {
	if b == nil {
		return errors.New("gke simulator: SetBackend needs a backend")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, aerr := s.lookupCluster(project, location, name)
	if aerr != nil {
		return errors.New("gke simulator: cluster " + clusterName(project, location, name) + " not found")
	}
	rec.setBackend(b)
	return nil
}

// ReviewToken implements simcore.TokenReviewer for Google access tokens: issued by the token
// endpoint (or a valid self-signed JWT), unexpired on the simulator's clock, of a service
// account allowed in the project of a running cluster the backend serves. The user is the
// service account's email.
func (s *Server) ReviewToken(backend, token string) (simcore.ReviewedUser, bool, string) {
	a := &s.auth
	a.mu.RLock()
	at, issued := a.tokens[token]
	a.mu.RUnlock()
	switch {
	case issued:
	case strings.HasPrefix(token, "ya29."):
		return simcore.ReviewedUser{}, true, "the Google access token is unknown (never issued, or forged)"
	case strings.Count(token, ".") == 2 && strings.HasPrefix(token, "eyJ"):
		sa, claims, err := a.verifyJWT(token)
		if err != nil {
			return simcore.ReviewedUser{}, true, "the Google JWT is refused: " + err.Error()
		}
		at = accessToken{sa: sa, scopes: parseScopes(claims.Scope), expiry: time.Unix(claims.Exp, 0)}
		if claims.Scope == "" && claims.Aud != "" {
			at.scopes = scopeRead | scopeWrite
		}
	default:
		return simcore.ReviewedUser{}, false, ""
	}
	if now := s.clock.Now(); !now.Before(at.expiry) {
		return simcore.ReviewedUser{}, true, "the Google access token expired at " + at.expiry.UTC().Format(time.RFC3339)
	}
	if at.scopes == 0 {
		return simcore.ReviewedUser{}, true, "the Google access token has no scope GKE accepts"
	}
	s.mu.Lock()
	now := s.clock.Now()
	served := false
	for project, ps := range s.projects {
		if !at.sa.allowed(project) {
			continue
		}
		for _, rec := range ps.clusters {
			s.advance(rec, now)
			if !rec.gone && rec.backend != nil && rec.backend.Name == backend && rec.c.Status != "PROVISIONING" {
				served = true
				break
			}
		}
		if served {
			break
		}
	}
	s.mu.Unlock()
	if !served {
		return simcore.ReviewedUser{}, true, "service account " + at.sa.email + " has no access to any cluster backend " + backend + " serves"
	}
	user := simcore.ReviewedUser{Username: at.sa.email, UID: at.sa.email}
	if at.scopes&scopeWrite != 0 {
		user.Groups = []string{MastersGroup}
	}
	return user, true, ""
}
