package aks

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// credential is a configured application with its subscription grants.
type credential struct {
	Credential
	objectID string
	allSubs  bool
	subs     map[string]bool
}

// accessToken is an issued bearer token. Tokens are opaque random strings: ARM only needs to
// look them up, and nothing outside the simulator should parse them.
type accessToken struct {
	tenant   string
	clientID string
	audience string
	expires  time.Time
	cred     *credential
}

type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
	ErrorCodes  []int  `json:"error_codes,omitempty"`
	Timestamp   string `json:"timestamp,omitempty"`
	TraceID     string `json:"trace_id,omitempty"`
}

type tokenResponse struct {
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	ExtExpiresIn int64  `json:"ext_expires_in"`
	AccessToken  string `json:"access_token"`
}

// SetCredential adds an application or replaces the one with the same tenant and client ID (a
// rotated secret). Tokens already issued stay valid until they expire, as in Entra ID.
func (s *Server) SetCredential(c Credential) error {
	if c.TenantID == "" || c.ClientID == "" || c.ClientSecret == "" {
		return errors.New("aks simulator: a credential needs TenantID, ClientID and ClientSecret")
	}
	cr := &credential{Credential: c, subs: make(map[string]bool, len(c.Subscriptions))}
	cr.Subscriptions = append([]string(nil), c.Subscriptions...)
	for _, sub := range c.Subscriptions {
		if sub == "*" {
			cr.allSubs = true
		}
		cr.subs[strings.ToLower(sub)] = true
	}
	cr.objectID = uuidFrom("oid/" + strings.ToLower(c.TenantID) + "/" + strings.ToLower(c.ClientID))
	s.credMu.Lock()
	s.creds[strings.ToLower(c.TenantID)+"/"+strings.ToLower(c.ClientID)] = cr
	s.credMu.Unlock()
	return nil
}

// adfsTenant is the "tenant" of an ADFS-style authority (https://host/adfs): the token
// endpoint there serves the applications of every tenant, found by client ID.
const adfsTenant = "adfs"

func (s *Server) knownTenant(tenant string) bool {
	t := strings.ToLower(tenant)
	s.credMu.RLock()
	defer s.credMu.RUnlock()
	if t == adfsTenant {
		return len(s.creds) > 0
	}
	for _, c := range s.creds {
		if strings.ToLower(c.TenantID) == t {
			return true
		}
	}
	return false
}

// credentialFor is the application clientID of tenant; at the ADFS authority, the one
// application with that client ID in any tenant.
func (s *Server) credentialFor(tenant, clientID string) *credential {
	s.credMu.RLock()
	defer s.credMu.RUnlock()
	if !strings.EqualFold(tenant, adfsTenant) {
		return s.creds[strings.ToLower(tenant)+"/"+strings.ToLower(clientID)]
	}
	var found *credential
	for _, c := range s.creds {
		if strings.EqualFold(c.ClientID, clientID) {
			if found != nil {
				return nil // the same client ID in two tenants: ambiguous without a tenant
			}
			found = c
		}
	}
	return found
}

// handleOpenIDConfig serves the tenant discovery document MSAL fetches before its first token
// request. The issuer must have the authority's scheme and host or MSAL rejects it.
func (s *Server) handleOpenIDConfig(w http.ResponseWriter, r *http.Request, rt *route) {
	if !s.knownTenant(rt.tenant) {
		writeJSON(w, http.StatusBadRequest, s.aadError("invalid_tenant", 90002,
			fmt.Sprintf("AADSTS90002: Tenant '%s' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.", rt.tenant)))
		return
	}
	base := "https://" + r.Host + "/" + rt.tenant
	if rt.tenant == adfsTenant {
		// ADFS's document: no /v2.0 in the paths, the issuer is the authority itself.
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                base,
			"authorization_endpoint":                base + "/oauth2/authorize/",
			"token_endpoint":                        base + "/oauth2/token/",
			"jwks_uri":                              base + "/discovery/keys",
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic", "private_key_jwt"},
			"response_types_supported":              []string{"code", "id_token", "code id_token", "id_token token", "code token", "code id_token token"},
			"response_modes_supported":              []string{"query", "fragment", "form_post"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
			"subject_types_supported":               []string{"pairwise"},
			"scopes_supported":                      []string{"openid", "profile", "email", "allatclaims"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"access_token_issuer":                   "https://" + r.Host + "/adfs/services/trust",
		})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"token_endpoint":                        base + "/oauth2/v2.0/token",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
		"jwks_uri":                              base + "/discovery/v2.0/keys",
		"response_modes_supported":              []string{"query", "fragment", "form_post"},
		"subject_types_supported":               []string{"pairwise"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"response_types_supported":              []string{"code", "id_token", "code id_token", "id_token token"},
		"scopes_supported":                      []string{"openid", "profile", "email", "offline_access"},
		"issuer":                                base + "/v2.0",
		"request_uri_parameter_supported":       false,
		"userinfo_endpoint":                     base + "/oidc/userinfo",
		"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
		"device_authorization_endpoint":         base + "/oauth2/v2.0/devicecode",
		"http_logout_supported":                 true,
		"frontchannel_logout_supported":         true,
		"end_session_endpoint":                  base + "/oauth2/v2.0/logout",
		"claims_supported":                      []string{"sub", "iss", "aud", "exp", "iat", "tid", "oid"},
		"tenant_region_scope":                   "NA",
		"cloud_instance_name":                   "simulator",
	})
}

// handleInstanceDiscovery answers MSAL's instance discovery. MSAL sends it to
// login.microsoftonline.com for any authority host it does not know, so clients must set
// DisableInstanceDiscovery; it is served here for clients that route it to the simulator.
func (s *Server) handleInstanceDiscovery(w http.ResponseWriter, r *http.Request) {
	tenant := "common"
	if ae := r.URL.Query().Get("authorization_endpoint"); ae != "" {
		if i := strings.Index(ae, r.Host+"/"); i >= 0 {
			rest := ae[i+len(r.Host)+1:]
			tenant, _, _ = strings.Cut(rest, "/")
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"tenant_discovery_endpoint": "https://" + r.Host + "/" + tenant + "/v2.0/.well-known/openid-configuration",
		"api-version":               "1.1",
		"metadata": []map[string]any{{
			"preferred_network": r.Host,
			"preferred_cache":   r.Host,
			"aliases":           []string{r.Host},
		}},
	})
}

func (s *Server) aadError(code string, num int, desc string) oauthError {
	now := s.now().UTC()
	trace := s.requestID()
	return oauthError{
		Error:       code,
		Description: fmt.Sprintf("%s\r\nTrace ID: %s\r\nCorrelation ID: %s\r\nTimestamp: %s", desc, trace, trace, now.Format("2006-01-02 15:04:05Z")),
		ErrorCodes:  []int{num},
		Timestamp:   now.Format("2006-01-02 15:04:05Z"),
		TraceID:     trace,
	}
}

// handleToken implements the client-credentials grant with a client secret.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request, rt *route) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, s.aadError("invalid_request", 900144, "AADSTS900144: The request body must contain the following parameter: 'grant_type'."))
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, s.aadError("unsupported_grant_type", 70003,
			fmt.Sprintf("AADSTS70003: The app requested an unsupported grant type '%s'. The simulator supports client_credentials only.", gt)))
		return
	}
	clientID, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		clientID, secret = u, p
	}
	if !s.knownTenant(rt.tenant) {
		writeJSON(w, http.StatusBadRequest, s.aadError("invalid_request", 90002,
			fmt.Sprintf("AADSTS90002: Tenant '%s' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.", rt.tenant)))
		return
	}
	cred := s.credentialFor(rt.tenant, clientID)
	if cred == nil {
		writeJSON(w, http.StatusBadRequest, s.aadError("unauthorized_client", 700016,
			fmt.Sprintf("AADSTS700016: Application with identifier '%s' was not found in the directory '%s'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant.", clientID, rt.tenant)))
		return
	}
	if secret == "" {
		writeJSON(w, http.StatusUnauthorized, s.aadError("invalid_client", 7000216,
			"AADSTS7000216: 'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type."))
		return
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(cred.ClientSecret)) != 1 {
		writeJSON(w, http.StatusUnauthorized, s.aadError("invalid_client", 7000215,
			fmt.Sprintf("AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '%s'.", clientID)))
		return
	}
	audience, ok := audienceFromScope(r.PostForm.Get("scope"))
	if !ok {
		writeJSON(w, http.StatusBadRequest, s.aadError("invalid_scope", 1002012,
			fmt.Sprintf("AADSTS1002012: The provided value for scope %s is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).", r.PostForm.Get("scope"))))
		return
	}

	// Tokens live on the wall clock, not Options.Clock: clients (MSAL, azcore) cache them by
	// wall time, so a simulated clock moved forward would leave them stuck with a token the
	// simulator calls expired.
	now := time.Now()
	tok := randomToken()
	s.tokMu.Lock()
	if len(s.tokens) > 1024 && now.Sub(s.lastPrune) > time.Minute {
		for k, t := range s.tokens {
			if !now.Before(t.expires) {
				delete(s.tokens, k)
			}
		}
		s.lastPrune = now
	}
	s.tokens[tok] = &accessToken{tenant: cred.TenantID, clientID: cred.ClientID, audience: audience, expires: now.Add(s.opts.TokenLifetime), cred: cred}
	s.tokMu.Unlock()

	secs := int64(s.opts.TokenLifetime / time.Second)
	w.Header()["Cache-Control"] = []string{"no-store, no-cache"}
	writeJSON(w, http.StatusOK, tokenResponse{TokenType: "Bearer", ExpiresIn: secs, ExtExpiresIn: secs, AccessToken: tok})
}

// audienceFromScope extracts the resource from "<resource>/.default" (the first such scope).
func audienceFromScope(scope string) (string, bool) {
	for _, sc := range strings.Fields(scope) {
		if aud, ok := strings.CutSuffix(sc, "/.default"); ok && aud != "" {
			return normalizeAudience(aud), true
		}
	}
	return "", false
}

func normalizeAudience(a string) string { return strings.ToLower(strings.TrimRight(a, "/")) }

// armAudiences are the audiences ARM accepts besides the simulator's own URL.
var armAudiences = map[string]bool{
	"https://management.core.windows.net": true,
	"https://management.azure.com":        true,
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "simaks." + base64.RawURLEncoding.EncodeToString(b[:])
}

// uuidFrom derives a stable uuid-shaped id from s.
func uuidFrom(s string) string {
	h := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// authorize checks the bearer token and the caller's access to the subscription, answering
// 401/403 like ARM when they fail.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, rt *route) (*accessToken, bool) {
	authz := r.Header.Get("Authorization")
	challenge := func(desc string) {
		w.Header()["Www-Authenticate"] = []string{fmt.Sprintf(`Bearer authorization_uri="https://%s/", error="invalid_token", error_description="%s"`, r.Host, desc)}
	}
	if authz == "" {
		challenge("The authentication failed because of missing 'Authorization' header.")
		writeError(w, errorf(http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing."))
		return nil, false
	}
	raw, ok := strings.CutPrefix(authz, "Bearer ")
	if !ok {
		challenge("The authentication failed because of invalid 'Authorization' header.")
		writeError(w, errorf(http.StatusUnauthorized, "AuthenticationFailedInvalidHeader", "Authentication failed. The 'Authorization' header is provided in an invalid format."))
		return nil, false
	}
	s.tokMu.RLock()
	tok := s.tokens[raw]
	s.tokMu.RUnlock()
	if tok == nil {
		challenge("The access token is invalid.")
		writeError(w, errorf(http.StatusUnauthorized, "InvalidAuthenticationToken", "The access token is invalid."))
		return nil, false
	}
	if now := time.Now(); !now.Before(tok.expires) {
		challenge("The access token expiry UTC time is earlier than current UTC time.")
		writeError(w, errorf(http.StatusUnauthorized, "ExpiredAuthenticationToken",
			"The access token expiry UTC time '%s' is earlier than current UTC time '%s'.", tok.expires.UTC().Format(time.RFC1123), now.UTC().Format(time.RFC1123)))
		return nil, false
	}
	if tok.audience != normalizeAudience("https://"+r.Host) && tok.audience != normalizeAudience(s.URL()) && !armAudiences[tok.audience] {
		challenge("The access token has been obtained for wrong audience or resource.")
		writeError(w, errorf(http.StatusUnauthorized, "InvalidAuthenticationTokenAudience",
			"The access token has been obtained for wrong audience or resource '%s'. It should exactly match with one of the allowed audiences 'https://%s/', 'https://management.core.windows.net/', 'https://management.azure.com/'.", tok.audience, r.Host))
		return nil, false
	}
	// The grant is read from the live credential so that a revoked subscription takes effect
	// for tokens already issued, like an RBAC change.
	s.credMu.RLock()
	cred := s.creds[strings.ToLower(tok.tenant)+"/"+strings.ToLower(tok.clientID)]
	// The subscription and tenant listings are the caller's own: any valid token may list them.
	allowed := cred != nil && (rt.sub == "" || cred.allSubs || cred.subs[strings.ToLower(rt.sub)])
	s.credMu.RUnlock()
	if !allowed {
		objectID := tok.cred.objectID
		writeError(w, errorf(http.StatusForbidden, "AuthorizationFailed",
			"The client '%s' with object id '%s' does not have authorization to perform action '%s' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
			tok.clientID, objectID, rbacAction(r.Method, rt), scopeOf(rt)))
		return nil, false
	}
	return tok, true
}

func rbacAction(method string, rt *route) string {
	res := "Microsoft.ContainerService/managedClusters"
	switch rt.kind {
	case routePool, routePoolList:
		res += "/agentPools"
	case routeAdminCredential:
		return res + "/listClusterAdminCredential/action"
	case routeOperation, routeOperationResult:
		return "Microsoft.ContainerService/locations/operations/read"
	}
	switch method {
	case http.MethodPut, http.MethodPatch:
		return res + "/write"
	case http.MethodDelete:
		return res + "/delete"
	}
	return res + "/read"
}

func scopeOf(rt *route) string {
	sc := "/subscriptions/" + rt.sub
	if rt.rg != "" {
		sc += "/resourceGroups/" + rt.rg
	}
	if rt.name != "" {
		sc += "/providers/Microsoft.ContainerService/managedClusters/" + rt.name
	}
	if rt.pool != "" {
		sc += "/agentPools/" + rt.pool
	}
	return sc
}
