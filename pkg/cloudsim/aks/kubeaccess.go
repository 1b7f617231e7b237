package aks

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// Access to a simulated cluster's Kubernetes API: listClusterUserCredential and
// listClusterAdminCredential return a kubeconfig whose token the simulator's TokenReview
// endpoint accepts for KubeTokenLifetime, for the cluster's backend only.

// MastersGroup is the group the simulator's TokenReview gives both local accounts: on an AKS
// cluster with local accounts (no Entra ID integration) the user and the admin credential are
// both cluster-admin.
const MastersGroup = "system:masters"

type kubeToken struct {
	key     string // the cluster's store key
	admin   bool
	expires time.Time
}

// SetBackend makes b serve the cluster (nil: none): the credential kubeconfigs point at b and
// b's TokenReview path accepts their tokens.
func (s *Server) SetBackend(subscriptionID, resourceGroup, name string, b *simcore.Backend) error {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.lookup(clusterKey(subscriptionID, resourceGroup, name), now)
	if c == nil {
		return errors.New("aks simulator: cluster " + subscriptionID + "/" + resourceGroup + "/" + name + " not found")
	}
	c.backend = b
	return nil
}

func (s *Server) handleCredential(w http.ResponseWriter, rt *route, admin bool) {
	now := s.now()
	s.mu.Lock()
	c := s.lookup(rt.key(), now)
	if c == nil {
		s.errorLocked(w, notFound(rt))
		return
	}
	if p := c.mc.Properties; p.DisableLocalAccounts != nil && *p.DisableLocalAccounts {
		s.errorLocked(w, badRequest("BadRequest", "Getting static credential is not allowed because this cluster is set to disable local accounts."))
		return
	}
	tok := s.issueKubeToken(rt.key(), admin, now)
	kc := s.kubeconfig(c, admin, tok)
	s.mu.Unlock()
	name := "clusterUser"
	if admin {
		name = "clusterAdmin"
	}
	writeJSON(w, http.StatusOK, credentialResults{Kubeconfigs: []credentialResult{{Name: name, Value: kc}}})
}

func (s *Server) issueKubeToken(key string, admin bool, now time.Time) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	s.kubeMu.Lock()
	defer s.kubeMu.Unlock()
	if len(s.kubeTokens) >= 4096 {
		for k, t := range s.kubeTokens {
			if !now.Before(t.expires) {
				delete(s.kubeTokens, k)
			}
		}
	}
	s.kubeTokens[tok] = kubeToken{key: key, admin: admin, expires: now.Add(s.opts.KubeTokenLifetime)}
	return tok
}

// kubeconfig builds a local-account kubeconfig for c. It points at the cluster's backend when it
// has one, else at its FQDN (which nothing serves) with the simulator's CA.
func (s *Server) kubeconfig(c *cluster, admin bool, token string) []byte {
	p := c.mc.Properties
	host := p.FQDN
	if host == "" {
		host = p.PrivateFQDN
	}
	server := "https://" + host + ":443"
	caPEM := s.certs.caPEM
	if c.backend != nil {
		server, caPEM = c.backend.Endpoint, c.backend.CAPEM
	}
	name := c.mc.Name
	kind, ctx := "clusterUser", name
	if admin {
		kind, ctx = "clusterAdmin", name+"-admin"
	}
	user := kind + "_" + c.rg + "_" + name
	return fmt.Appendf(nil, `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: %s
  name: %s
contexts:
- context:
    cluster: %s
    user: %s
  name: %s
current-context: %s
kind: Config
preferences: {}
users:
- name: %s
  user:
    token: %s
`, base64.StdEncoding.EncodeToString(caPEM), server, name, name, user, ctx, ctx, user, token)
}

func isKubeToken(t string) bool {
	if len(t) != 64 {
		return false
	}
	for _, r := range t {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// ReviewToken implements simcore.TokenReviewer for the tokens of listed kubeconfigs: known,
// unexpired on the simulator's clock, and for a cluster the backend serves. Both local accounts
// authenticate as their account name (clusterUser, clusterAdmin) in system:masters.
func (s *Server) ReviewToken(backend, token string) (simcore.ReviewedUser, bool, string) {
	if !isKubeToken(token) {
		return simcore.ReviewedUser{}, false, ""
	}
	s.kubeMu.Lock()
	t, ok := s.kubeTokens[token]
	s.kubeMu.Unlock()
	if !ok {
		return simcore.ReviewedUser{}, true, "the AKS token is unknown (never issued, or forged)"
	}
	now := s.now()
	if !now.Before(t.expires) {
		return simcore.ReviewedUser{}, true, "the AKS token expired at " + t.expires.UTC().Format(time.RFC3339)
	}
	s.mu.Lock()
	c := s.lookup(t.key, now)
	served := c != nil && c.backend != nil && c.backend.Name == backend
	s.mu.Unlock()
	if !served {
		return simcore.ReviewedUser{}, true, "the AKS token is for a cluster backend " + backend + " does not serve"
	}
	name := "clusterUser"
	if t.admin {
		name = "clusterAdmin"
	}
	return simcore.ReviewedUser{Username: name, UID: name + ":" + strings.ToLower(t.key), Groups: []string{MastersGroup}}, true, ""
}
