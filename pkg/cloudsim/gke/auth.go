package gke

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

const (
	jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

	scopeCloudPlatform     = "https://www.googleapis.com/auth/cloud-platform"
	scopeContainer         = "https://www.googleapis.com/auth/container"
	scopeContainerReadOnly = "https://www.googleapis.com/auth/container.read-only"

	// jwtSkew is the clock skew Google tolerates on assertion iat/exp.
	jwtSkew = 5 * time.Minute
	// maxAssertionLifetime is the longest exp-iat Google accepts ("short-lived token (60 minutes)").
	maxAssertionLifetime = time.Hour
)

// scopes is what an access token may do in this API.
type scopes uint8

const (
	scopeRead scopes = 1 << iota
	scopeWrite
)

func parseScopes(s string) scopes {
	var sc scopes
	for _, f := range strings.Fields(s) {
		switch f {
		case scopeCloudPlatform, scopeContainer:
			sc |= scopeRead | scopeWrite
		case scopeContainerReadOnly:
			sc |= scopeRead
		}
	}
	return sc
}

// serviceAccount is a simulated IAM service account: its public keys and the projects it may use.
type serviceAccount struct {
	email    string
	projects map[string]bool // nil grants every project
	keys     map[string]*rsa.PublicKey
}

func (sa *serviceAccount) allowed(project string) bool {
	return sa.projects == nil || sa.projects[project]
}

type accessToken struct {
	sa     *serviceAccount
	scopes scopes
	expiry time.Time
}

// authority issues and checks credentials. It has its own lock so that token checks on the hot
// path do not wait for state changes.
type authority struct {
	mu        sync.RWMutex
	accounts  map[string]*serviceAccount
	tokens    map[string]accessToken
	lastSweep int
	ttl       time.Duration
	now       func() time.Time
}

// serviceAccountFile is the JSON key file Google issues for a service account.
type serviceAccountFile struct {
	Type                    string `json:"type"`
	ProjectID               string `json:"project_id,omitempty"`
	PrivateKeyID            string `json:"private_key_id"`
	PrivateKey              string `json:"private_key"`
	ClientEmail             string `json:"client_email"`
	ClientID                string `json:"client_id"`
	AuthURI                 string `json:"auth_uri"`
	TokenURI                string `json:"token_uri"`
	AuthProviderX509CertURL string `json:"auth_provider_x509_cert_url"`
	ClientX509CertURL       string `json:"client_x509_cert_url"`
	UniverseDomain          string `json:"universe_domain"`
}

// NewServiceAccountKey creates a key for the service account email (creating the account on first
// use) and returns its JSON key file, whose token_uri points at this simulator's /token endpoint.
// The account may use the given projects; an account first created without projects may use
// every project. Calling it again for the same email adds a key and grants the extra projects. The base URL must be known (see
// SetBaseURL; NewTestServer sets it).
func (s *Server) NewServiceAccountKey(email string, projects ...string) ([]byte, error) {
	if email == "" || !strings.Contains(email, "@") {
		return nil, fmt.Errorf("gke: service account email %q is not an email address", email)
	}
	base := s.BaseURL()
	if base == "" {
		return nil, errors.New("gke: the simulator's base URL is not set; call SetBaseURL first")
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("gke: generating the key of %s: %w", email, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("gke: encoding the key of %s: %w", email, err)
	}
	kid := randomHex(20)

	a := &s.auth
	a.mu.Lock()
	sa := a.accounts[email]
	if sa == nil {
		sa = &serviceAccount{email: email, keys: map[string]*rsa.PublicKey{}}
		if len(projects) > 0 {
			sa.projects = map[string]bool{}
		}
		a.accounts[email] = sa
	}
	sa.keys[kid] = &key.PublicKey
	if sa.projects != nil {
		for _, p := range projects {
			sa.projects[p] = true
		}
	}
	a.mu.Unlock()

	var projectID string
	if len(projects) > 0 {
		projectID = projects[0]
	}
	clientID, _ := rand.Int(rand.Reader, new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil))
	f := serviceAccountFile{
		Type:                    "service_account",
		ProjectID:               projectID,
		PrivateKeyID:            kid,
		PrivateKey:              string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		ClientEmail:             email,
		ClientID:                clientID.String(),
		AuthURI:                 "https://accounts.google.com/o/oauth2/auth",
		TokenURI:                base + "/token",
		AuthProviderX509CertURL: "https://www.googleapis.com/oauth2/v1/certs",
		ClientX509CertURL:       "https://www.googleapis.com/robot/v1/metadata/x509/" + email,
		UniverseDomain:          "googleapis.com",
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("gke: encoding the key file of %s: %w", email, err)
	}
	return b, nil
}

type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

type jwtClaims struct {
	Iss   string `json:"iss"`
	Sub   string `json:"sub"`
	Aud   string `json:"aud"`
	Scope string `json:"scope"`
	Iat   int64  `json:"iat"`
	Exp   int64  `json:"exp"`
}

// errGrant is a token endpoint refusal, described as Google describes it.
type errGrant string

func (e errGrant) Error() string { return string(e) }

const (
	errBadSignature  errGrant = "Invalid JWT Signature."
	errNoAccount     errGrant = "Invalid grant: account not found"
	errBadTimeframe  errGrant = "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
	errMalformedJWT  errGrant = "Invalid JWT: could not be parsed."
	errAlgNotAllowed errGrant = "Invalid JWT: the signing algorithm must be RS256."
)

// verifyJWT checks an RS256 JWT signed by one of the keys of the service account named by iss.
func (a *authority) verifyJWT(tok string) (*serviceAccount, jwtClaims, error) {
	var h jwtHeader
	var c jwtClaims
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, c, errMalformedJWT
	}
	if err := decodeSegment(parts[0], &h); err != nil {
		return nil, c, errMalformedJWT
	}
	if err := decodeSegment(parts[1], &c); err != nil {
		return nil, c, errMalformedJWT
	}
	if h.Alg != "RS256" {
		return nil, c, errAlgNotAllowed
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, c, errMalformedJWT
	}
	a.mu.RLock()
	sa := a.accounts[c.Iss]
	var keys []*rsa.PublicKey
	if sa != nil {
		if k, ok := sa.keys[h.Kid]; ok {
			keys = append(keys, k)
		} else {
			for _, k := range sa.keys {
				keys = append(keys, k)
			}
		}
	}
	a.mu.RUnlock()
	if sa == nil {
		return nil, c, errNoAccount
	}
	sum := sha256.Sum256([]byte(tok[:len(parts[0])+1+len(parts[1])]))
	verified := false
	for _, k := range keys {
		if rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, c, errBadSignature
	}
	now := a.now()
	iat, exp := time.Unix(c.Iat, 0), time.Unix(c.Exp, 0)
	if c.Exp == 0 || exp.Before(iat) || exp.Sub(iat) > maxAssertionLifetime+jwtSkew ||
		iat.After(now.Add(jwtSkew)) || exp.Before(now.Add(-jwtSkew)) {
		return nil, c, errBadTimeframe
	}
	return sa, c, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// handleToken is the OAuth2 token endpoint: the JWT-bearer grant of a service account
// (RFC 7523), as google's auth libraries use it for service_account keys.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, "token", "") {
		return
	}
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "The token endpoint only accepts POST.")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "Could not parse the request body.")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != jwtBearerGrant {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+gt)
		return
	}
	assertion := r.PostForm.Get("assertion")
	if assertion == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "Missing required parameter: assertion")
		return
	}
	sa, claims, err := s.auth.verifyJWT(assertion)
	if err != nil {
		// Google answers every refused grant with 400 invalid_grant (RFC 6749 §5.2).
		oauthError(w, http.StatusBadRequest, "invalid_grant", err.Error())
		return
	}
	sc := parseScopes(claims.Scope)
	if sc == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
		return
	}
	tok := "ya29.c." + randomToken(48)
	s.auth.store(tok, accessToken{sa: sa, scopes: sc, expiry: s.auth.now().Add(s.auth.ttl)})
	b, _ := json.Marshal(struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		TokenType   string `json:"token_type"`
	}{tok, int64(s.auth.ttl/time.Second) - 1, "Bearer"})
	writeJSON(w, http.StatusOK, b)
}

func (a *authority) store(tok string, at accessToken) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.tokens); n >= 2*a.lastSweep+1024 {
		now := a.now()
		for k, v := range a.tokens {
			if now.After(v.expiry) {
				delete(a.tokens, k)
			}
		}
		a.lastSweep = len(a.tokens)
	}
	a.tokens[tok] = at
}

// authenticate returns the token presented as "Authorization: Bearer". An access token from
// /token is a map lookup; a self-signed JWT (what the auth library sends instead of calling the
// token endpoint when audiences or scoped JWTs are enabled) is verified once and then cached.
func (a *authority) authenticate(r *http.Request) (accessToken, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return accessToken{}, false
	}
	now := a.now()
	a.mu.RLock()
	at, ok := a.tokens[tok]
	a.mu.RUnlock()
	if ok {
		return at, now.Before(at.expiry)
	}
	if strings.Count(tok, ".") != 2 {
		return accessToken{}, false
	}
	sa, claims, err := a.verifyJWT(tok)
	if err != nil {
		return accessToken{}, false
	}
	// A self-signed JWT names the API as its audience or carries scopes.
	sc := parseScopes(claims.Scope)
	if claims.Scope == "" && claims.Aud != "" {
		sc = scopeRead | scopeWrite
	}
	if sc == 0 {
		return accessToken{}, false
	}
	at = accessToken{sa: sa, scopes: sc, expiry: time.Unix(claims.Exp, 0)}
	a.store(tok, at)
	return at, true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
