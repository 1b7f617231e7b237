package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cookies. The session cookie holds the viewer's bearer token (server mode) or the access key
// (local mode); it is HttpOnly and SameSite=Strict, and Secure when the dashboard is reached
// over HTTPS.
const (
	sessionCookie   = "drover_session"
	namespaceCookie = "drover_namespace"
)

// viewer is the identity a request is served with.
type viewer struct {
	client client.WithWatch
	// rest lists (listStream).
	rest   rest.Interface
	config *rest.Config
	user   string
	// secret is what the session rests on (token or access key); the CSRF token derives from it.
	secret string
	// ambient: the credential came from a cookie, so state-changing requests must prove they
	// come from a dashboard page (same origin and the form's CSRF token).
	ambient bool
	// home are the namespaces to look in when a kind cannot be listed cluster-wide.
	home []string
}

// csrfToken is the form token of state-changing requests: an HMAC of a fixed label keyed by the
// session's secret, so every replica derives the same one and no one without the secret can.
func (v *viewer) csrfToken() string {
	m := hmac.New(sha256.New, []byte(v.secret))
	m.Write([]byte("drover-dashboard-csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var errLogin = errors.New("not signed in")

// errCannotCheck is the sign-in page's words when the API server did not answer whether a
// credential is valid.
const errCannotCheck = "cannot reach the management API server to check this token: try again"

// checkError: the API server did not answer whether a credential is valid (it was not
// refused either): the sign-in is not made, and may be tried again.
type checkError struct{ err error }

func (e *checkError) Error() string { return errCannotCheck + " (" + e.err.Error() + ")" }
func (e *checkError) Unwrap() error { return e.err }

// viewerFor resolves the request's identity. errLogin means no (valid) credential.
func (h *Handler) viewerFor(r *http.Request) (*viewer, error) {
	if h.opts.Local != nil {
		c, err := r.Cookie(sessionCookie)
		if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(h.opts.AccessKey)) != 1 {
			return nil, errLogin
		}
		v, err := h.newViewer(r.Context(), rest.CopyConfig(h.base), h.opts.AccessKey)
		if err != nil {
			return nil, err
		}
		v.ambient = true
		v.home = homeNamespaces(r, h.opts.Namespaces)
		return v, nil
	}
	token, ambient := "", false
	if auth := r.Header.Get("Authorization"); auth != "" {
		t, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || strings.TrimSpace(t) == "" {
			return nil, errLogin
		}
		token = strings.TrimSpace(t)
	} else if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		token, ambient = c.Value, true
	}
	if token == "" {
		return nil, errLogin
	}
	cfg := rest.CopyConfig(h.base)
	cfg.BearerToken = token
	v, err := h.newViewer(r.Context(), cfg, token)
	if err != nil {
		return nil, err
	}
	v.ambient = ambient
	v.home = homeNamespaces(r, h.opts.Namespaces)
	return v, nil
}

// homeNamespaces are the configured fallback namespaces and the one chosen at login.
func homeNamespaces(r *http.Request, configured []string) []string {
	out := append([]string(nil), configured...)
	if c, err := r.Cookie(namespaceCookie); err == nil && validNamespace(c.Value) {
		out = append([]string{c.Value}, out...)
	}
	return dedupe(out)
}

func (h *Handler) newViewer(ctx context.Context, cfg *rest.Config, secret string) (*viewer, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: h.scheme, Mapper: h.mapper, HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	rcfg := rest.CopyConfig(cfg)
	rcfg.NegotiatedSerializer = h.codecs
	rc, err := rest.UnversionedRESTClientForConfigAndClient(rcfg, hc)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	user, err := h.whoAmI(ctx, cfg, secret)
	if err != nil {
		return nil, err
	}
	return &viewer{client: c, rest: rc, config: cfg, user: user, secret: secret}, nil
}

// whoAmI asks the API server who the credential is (SelfSubjectReview), remembered for
// SessionTTL by the credential's hash. An unauthenticated credential is errLogin.
func (h *Handler) whoAmI(ctx context.Context, cfg *rest.Config, secret string) (string, error) {
	key := tokenKey(secret)
	now := h.opts.Now()
	h.mu.Lock()
	s, ok := h.sessions[key]
	h.mu.Unlock()
	if ok && now.Before(s.expires) {
		return s.user, nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("clientset: %w", err)
	}
	res, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case apierrors.IsUnauthorized(err):
		return "", errLogin
	case err != nil:
		// Only a review the API server answered vouches for the credential: an error (the API
		// server down, a proxy's 502) says nothing of it, and taking it as a sign-in would let
		// any token in, and remember it for SessionTTL.
		ctrl.LoggerFrom(ctx).V(1).Info("SelfSubjectReview failed", "error", err.Error())
		return "", &checkError{err: err}
	}
	user := res.Status.UserInfo.Username
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sessions) > 10000 {
		for k, s := range h.sessions {
			if !now.Before(s.expires) {
				delete(h.sessions, k)
			}
		}
	}
	h.sessions[key] = session{user: user, expires: now.Add(h.opts.SessionTTL)}
	return user, nil
}

// forget drops a credential the API server no longer accepts.
func (h *Handler) forget(secret string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sessions, tokenKey(secret))
}

// withViewer serves API-like endpoints (event stream, actions): no credential is 401.
func (h *Handler) withViewer(f func(http.ResponseWriter, *http.Request, *viewer)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := h.viewerFor(r)
		if errors.Is(err, errLogin) {
			http.Error(w, "sign in to the dashboard first", http.StatusUnauthorized)
			return
		}
		if err != nil {
			h.readFailed(w, r, nil, err)
			return
		}
		f(w, r, v)
	})
}

// secureRequest: the dashboard was reached over HTTPS (directly or through a TLS-terminating
// proxy), so cookies are Secure.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	//nolint:gosec // Secure whenever the dashboard is reached over HTTPS; on plain-HTTP loopback it cannot be
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: secureRequest(r),
		SameSite: http.SameSiteStrictMode, MaxAge: maxAge})
}

// sameOrigin checks that a state-changing browser request comes from a dashboard page: Origin
// (or, without it, Referer) must be this host, and no fetch metadata may say cross-site.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		ref, err := url.Parse(r.Referer())
		if r.Referer() == "" || err != nil {
			return false
		}
		return ref.Host == r.Host
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// checkCSRF guards a state-changing request made with an ambient (cookie) credential.
func checkCSRF(r *http.Request, v *viewer) error {
	if !v.ambient {
		return nil // an Authorization header is not sent by a browser on its own
	}
	if !sameOrigin(r) {
		return errors.New("request not made from a dashboard page (origin check failed)")
	}
	if got := r.PostFormValue("csrf"); subtle.ConstantTimeCompare([]byte(got), []byte(v.csrfToken())) != 1 {
		return errors.New("missing or wrong form token: reload the page and try again")
	}
	return nil
}

type loginData struct {
	Next  string
	Error string
	// Detail is the underlying error, in small print.
	Detail    string
	Namespace string
	// KeyNeeded: local mode without the access key (the page says where the URL was printed).
	KeyNeeded bool
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.opts.Local != nil {
		h.localKey(w, r)
		return
	}
	d := loginData{Next: safeNext(r.URL.Query().Get("next"))}
	if r.URL.Query().Get("expired") != "" {
		d.Error = "The API server no longer accepts your token: sign in again."
	}
	h.render(w, r, http.StatusOK, "login", &layoutData{Title: "Sign in", Mode: "server"}, d)
}

// localKey trades the access key of the printed URL for the session cookie.
func (h *Handler) localKey(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	if subtle.ConstantTimeCompare([]byte(key), []byte(h.opts.AccessKey)) != 1 {
		d := loginData{KeyNeeded: true}
		h.render(w, r, http.StatusUnauthorized, "login", &layoutData{Title: "Access key needed", Mode: "local"}, d)
		return
	}
	setCookie(w, r, sessionCookie, h.opts.AccessKey, 0)
	http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther) //nolint:gosec // safeNext keeps it on the dashboard
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.opts.Local != nil || !sameOrigin(r) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	ns := strings.TrimSpace(r.PostFormValue("namespace"))
	d := loginData{Next: safeNext(r.PostFormValue("next")), Namespace: ns}
	l := &layoutData{Title: "Sign in", Mode: "server"}
	if ns != "" && !validNamespace(ns) {
		d.Error = fmt.Sprintf("%q is not a namespace name.", ns)
		h.render(w, r, http.StatusBadRequest, "login", l, d)
		return
	}
	if token == "" {
		d.Error = "Paste a bearer token."
		h.render(w, r, http.StatusBadRequest, "login", l, d)
		return
	}
	cfg := rest.CopyConfig(h.base)
	cfg.BearerToken = token
	h.forget(token)
	if _, err := h.whoAmI(r.Context(), cfg, token); err != nil {
		h.loginFailed(w, r, l, d, err)
		return
	}
	setCookie(w, r, sessionCookie, token, 0)
	if ns != "" {
		setCookie(w, r, namespaceCookie, ns, 0)
	} else {
		setCookie(w, r, namespaceCookie, "", -1)
	}
	http.Redirect(w, r, d.Next, http.StatusSeeOther)
}

// loginFailed answers a sign-in whose token was not taken: refused (401), or not checked
// because the API server did not answer (503, with the error in small print: try again).
func (h *Handler) loginFailed(w http.ResponseWriter, r *http.Request, l *layoutData, d loginData, err error) {
	var ce *checkError
	if errors.As(err, &ce) {
		d.Error, d.Detail = strings.ToUpper(errCannotCheck[:1])+errCannotCheck[1:]+".", ce.err.Error()
		h.render(w, r, http.StatusServiceUnavailable, "login", l, d)
		return
	}
	d.Error = "The API server did not accept this token."
	if !errors.Is(err, errLogin) {
		d.Error = "Could not check the token: " + err.Error()
	}
	h.render(w, r, http.StatusUnauthorized, "login", l, d)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		h.forget(c.Value)
	}
	setCookie(w, r, sessionCookie, "", -1)
	setCookie(w, r, namespaceCookie, "", -1)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target on the dashboard: a path of this origin, or "/".
//
// Browsers read a Location leniently: they drop tabs and newlines anywhere, take a backslash for
// a slash, and so go to another host for "/<tab>/evil.example" or "/\evil.example", which a
// prefix check lets through. So any control character or backslash (raw, or percent-encoded
// where it would be decoded before the path is read) refuses the target, and what is left must
// parse as a path alone: one leading slash, no scheme, no host.
func safeNext(next string) string {
	if !sameOriginPath(next) {
		return "/"
	}
	return next
}

func sameOriginPath(next string) bool {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return false
	}
	if strings.ContainsFunc(next, lenientRune) {
		return false
	}
	// An encoded slash, backslash or control character at the start would be one after a
	// decoding (a proxy's, or the path's own when it is used again): "/%2F/evil.example".
	if decoded, err := url.PathUnescape(next); err != nil || strings.HasPrefix(decoded, "//") ||
		strings.ContainsFunc(decoded, lenientRune) {
		return false
	}
	u, err := url.Parse(next)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && u.Opaque == "" && strings.HasPrefix(u.Path, "/")
}

// lenientRune: a character browsers drop from or reinterpret in a URL (control characters,
// backslash).
func lenientRune(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }
