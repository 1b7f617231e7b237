package aks

import (
	"net/http"
	"slices"
	"strings"
)

// subscriptionJSON is an item of ARM's GET /subscriptions (api-version 2016-06-01 and later).
type subscriptionJSON struct {
	ID                   string            `json:"id"`
	AuthorizationSource  string            `json:"authorizationSource"`
	ManagedByTenants     []any             `json:"managedByTenants"`
	SubscriptionID       string            `json:"subscriptionId"`
	TenantID             string            `json:"tenantId"`
	DisplayName          string            `json:"displayName"`
	State                string            `json:"state"`
	SubscriptionPolicies map[string]string `json:"subscriptionPolicies"`
}

// tenantJSON is an item of ARM's GET /tenants.
type tenantJSON struct {
	ID             string   `json:"id"`
	TenantID       string   `json:"tenantId"`
	TenantCategory string   `json:"tenantCategory"`
	CountryCode    string   `json:"countryCode"`
	DisplayName    string   `json:"displayName"`
	Domains        []string `json:"domains"`
	DefaultDomain  string   `json:"defaultDomain"`
	TenantType     string   `json:"tenantType"`
}

// Subscriptions are the subscriptions the application (tenant, clientID) may manage, as ARM's
// GET /subscriptions lists them to it: those its Credential names and, with "*", every
// subscription that has a cluster. Sorted.
func (s *Server) Subscriptions(tenant, clientID string) []string {
	cred := s.credentialFor(tenant, clientID)
	if cred == nil {
		return nil
	}
	seen := map[string]bool{}
	var subs []string
	add := func(sub string) {
		if k := strings.ToLower(sub); sub != "*" && !seen[k] {
			seen[k] = true
			subs = append(subs, sub)
		}
	}
	for _, sub := range cred.Subscriptions {
		add(sub)
	}
	if cred.allSubs {
		s.mu.Lock()
		for _, c := range s.clusters {
			add(c.sub)
		}
		s.mu.Unlock()
	}
	slices.SortFunc(subs, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return subs
}

// handleListSubscriptions answers GET /subscriptions: what `az login` calls to find the
// subscriptions of the identity it logged in as.
func (s *Server) handleListSubscriptions(w http.ResponseWriter, tok *accessToken) {
	items := []subscriptionJSON{}
	for _, sub := range s.Subscriptions(tok.tenant, tok.clientID) {
		items = append(items, subscriptionJSON{
			ID: "/subscriptions/" + sub, AuthorizationSource: "RoleBased", ManagedByTenants: []any{},
			SubscriptionID: sub, TenantID: tok.tenant, DisplayName: "drover simulator " + sub, State: "Enabled",
			SubscriptionPolicies: map[string]string{"locationPlacementId": "Public_2014-09-01", "quotaId": "PayAsYouGo_2014-09-01", "spendingLimit": "Off"},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"value": items, "count": map[string]any{"type": "Total", "value": len(items)}})
}

// handleListTenants answers GET /tenants: the caller's own tenant.
func (s *Server) handleListTenants(w http.ResponseWriter, tok *accessToken) {
	writeJSON(w, http.StatusOK, map[string]any{"value": []tenantJSON{{
		ID: "/tenants/" + tok.tenant, TenantID: tok.tenant, TenantCategory: "Home", CountryCode: "US",
		DisplayName: "drover simulator", Domains: []string{"drover-simulator.onmicrosoft.com"},
		DefaultDomain: "drover-simulator.onmicrosoft.com", TenantType: "AAD",
	}}})
}

// handleMetadata answers GET /metadata/endpoints, ARM's description of its cloud, which
// `az cloud register --endpoint-resource-manager URL` reads for the other endpoints: the
// authority is the ADFS-style https://host/adfs (MSAL does no instance discovery for it) and the
// ARM audience is the simulator itself.
func handleMetadata(w http.ResponseWriter, r *http.Request) {
	base := "https://" + r.Host + "/"
	writeJSON(w, http.StatusOK, map[string]any{
		"galleryEndpoint": base,
		"graphEndpoint":   base,
		"portalEndpoint":  base,
		"authentication": map[string]any{
			"loginEndpoint": base + adfsTenant + "/",
			"audiences":     []string{base},
		},
	})
}
