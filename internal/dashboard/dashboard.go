// Package dashboard is drover's web dashboard: server-rendered HTML pages of the hosted
// clusters, the fleet, Bundles, GitRepos and migrations, live over Server-Sent Events, and three
// actions ("refresh now" on a hosted cluster, pausing and resuming a Bundle's rollout and a
// GitRepo's fetching).
//
// Every Kubernetes request is made with the viewer's own identity, so a viewer sees and does
// exactly what RBAC lets them:
//   - server mode (drover server --ui-address): the viewer's bearer token, from an
//     Authorization header or the login form (kept in an HttpOnly, SameSite=Strict cookie), is
//     passed through to the management API server; drover adds only the server's address and CA,
//     never its own credentials, and needs no impersonation right;
//   - local mode (drover dashboard): the caller's kubeconfig identity, behind a random access key
//     in the URL it prints, so other local users cannot borrow it.
//
// Lists the viewer may not make cluster-wide fall back to the namespaces they can read (see
// scope); a refusal is shown on the page, never as an error page.
package dashboard

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configure a dashboard. Exactly one of APIServer and Local is set.
type Options struct {
	// APIServer is the management API server for server mode: only its address, CA and TLS
	// settings are used (rest.AnonymousClientConfig); each viewer brings a bearer token.
	APIServer *rest.Config
	// Local is the identity of local mode (drover dashboard): the caller's kubeconfig.
	Local *rest.Config
	// AccessKey guards local mode: the URL printed carries it, and a browser without it (or its
	// cookie) is refused. Required with Local.
	AccessKey string
	// Namespaces are where to look when the viewer may not list a kind in all namespaces and
	// chose none (local mode: the kubeconfig context's namespace). The login form can add one.
	Namespaces []string
	// SessionTTL is how long a viewer's checked identity is remembered (default 30 s).
	SessionTTL time.Duration
	// ListMaxAge is how old a viewer's cached list may get before it is listed again with their
	// credential (default 1 min); it is never served past twice that, which bounds how long
	// rights taken away still show.
	ListMaxAge time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Handler serves the dashboard.
type Handler struct {
	opts   Options
	base   *rest.Config
	scheme *runtime.Scheme
	codecs runtime.NegotiatedSerializer
	mapper meta.RESTMapper
	mux    *http.ServeMux
	pages  map[string]*pageTemplate
	cache  *viewCache

	// sessions remembers, by the sha256 of a token, who it is (never the token itself).
	mu       sync.Mutex
	sessions map[string]session
	// streams counts each sign-in's open event streams (by the sha256 of its token): each
	// keeps list-and-watch calls open with the viewer's identity.
	streams map[string]int
}

// MaxStreamsPerViewer bounds one sign-in's open event streams (one per open dashboard tab),
// so that a viewer cannot make drover hold an unbounded number of watches.
const MaxStreamsPerViewer = 16

// openStream counts one more event stream of the viewer's; false when it has too many.
func (h *Handler) openStream(v *viewer) (release func(), ok bool) {
	k := tokenKey(v.secret)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.streams == nil {
		h.streams = map[string]int{}
	}
	if h.streams[k] >= MaxStreamsPerViewer {
		return nil, false
	}
	h.streams[k]++
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.streams[k]--; h.streams[k] <= 0 {
			delete(h.streams, k)
		}
	}, true
}

type session struct {
	user    string
	expires time.Time
}

// New returns the dashboard handler.
func New(opts Options) (*Handler, error) {
	if (opts.APIServer == nil) == (opts.Local == nil) {
		return nil, errors.New("dashboard: set exactly one of APIServer (server mode) and Local (local mode)")
	}
	if opts.Local != nil && opts.AccessKey == "" {
		return nil, errors.New("dashboard: local mode needs an AccessKey")
	}
	if opts.SessionTTL == 0 {
		opts.SessionTTL = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ListMaxAge == 0 {
		opts.ListMaxAge = time.Minute
	}
	scheme := newScheme()
	h := &Handler{opts: opts, scheme: scheme, codecs: serializer.NewCodecFactory(scheme).WithoutConversion(), mapper: newMapper(), sessions: map[string]session{},
		cache: newViewCache(opts.ListMaxAge, opts.Now, ctrl.Log.WithName("dashboard"))}
	if opts.APIServer != nil {
		h.base = rest.AnonymousClientConfig(opts.APIServer)
		// The dashboard runs next to the API server: compressing a list of a thousand objects
		// costs both sides more CPU than the bytes it saves.
		h.base.DisableCompression = true
	} else {
		h.base = rest.CopyConfig(opts.Local)
	}
	// Each request has its own client; pages list several kinds, some in several namespaces.
	h.base.QPS, h.base.Burst = 100, 200
	h.base.UserAgent = "drover-dashboard"
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	h.pages = pages
	h.routes()
	return h, nil
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, managementv1alpha1.AddToScheme, fleetv1alpha1.AddToScheme, migrationv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // conflicting registrations: a programming error
		}
	}
	return s
}

// newMapper knows every kind the dashboard reads, so a viewer's client needs no discovery.
func newMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	add := func(gv schema.GroupVersion, scope meta.RESTScope, kinds ...string) {
		for _, k := range kinds {
			m.Add(gv.WithKind(k), scope)
		}
	}
	add(managementv1alpha1.GroupVersion, meta.RESTScopeNamespace, "Cluster")
	add(fleetv1alpha1.GroupVersion, meta.RESTScopeNamespace, "Cluster", "Bundle", "BundleDeployment", "GitRepo", "ClusterRegistrationToken")
	add(migrationv1alpha1.GroupVersion, meta.RESTScopeNamespace, "CloudProviderMigration")
	add(corev1.SchemeGroupVersion, meta.RESTScopeNamespace, "Event")
	add(corev1.SchemeGroupVersion, meta.RESTScopeRoot, "Namespace")
	add(authorizationv1.SchemeGroupVersion, meta.RESTScopeRoot, "SelfSubjectAccessReview")
	return m
}

func (h *Handler) routes() {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(static)))
	mux.HandleFunc("GET /login", h.loginPage)
	mux.HandleFunc("POST /login", h.login)
	mux.HandleFunc("POST /logout", h.logout)
	mux.Handle("GET /{$}", h.page(h.overview))
	mux.Handle("GET /hosted", h.page(h.hostedList))
	mux.Handle("GET /hosted/{namespace}/{name}", h.page(h.hostedCluster))
	mux.Handle("POST /hosted/{namespace}/{name}/refresh", h.withViewer(h.refreshNow))
	mux.Handle("GET /fleet", h.page(h.fleetList))
	mux.Handle("GET /bundles", h.page(h.bundles))
	mux.Handle("POST /bundles/{namespace}/{name}/{action}", h.withViewer(h.pause(bundlePause)))
	mux.Handle("GET /gitrepos", h.page(h.gitRepos))
	mux.Handle("POST /gitrepos/{namespace}/{name}/{action}", h.withViewer(h.pause(gitRepoPause)))
	mux.Handle("GET /migrations", h.page(h.migrations))
	mux.Handle("GET /tokens", h.page(h.tokens))
	mux.Handle("GET /watch", h.withViewer(h.watch))
	h.mux = mux
}

// ServeHTTP serves the dashboard, with headers that keep pages out of frames and caches and
// forbid scripts from anywhere but the dashboard itself.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/static/") {
		hd.Set("Cache-Control", "no-store")
	}
	h.mux.ServeHTTP(w, r)
}

func staticFiles(fsys fs.FS) http.Handler {
	fileServer := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		fileServer.ServeHTTP(w, r)
	})
}

// tokenKey is how a token is known in memory: its sha256, never the token.
func tokenKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Server serves a Handler on an address, as a controller-runtime Runnable of drover server
// (every replica serves it: no leader election).
type Server struct {
	Handler http.Handler
	// Listener is the bound address (Listen).
	Listener net.Listener
	// CertFile and KeyFile, when set, serve HTTPS.
	CertFile, KeyFile string
}

// Listen binds addr at once, so a taken address fails drover at start, not later.
func Listen(flag, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: cannot listen (%w): pass a free address", flag, addr, errors.Unwrap(err))
	}
	return l, nil
}

// Start serves until ctx ends, then shuts down (open event streams end with it).
func (s *Server) Start(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() {
		if s.CertFile != "" {
			done <- srv.ServeTLS(s.Listener, s.CertFile, s.KeyFile)
			return
		}
		done <- srv.Serve(s.Listener)
	}()
	ctrl.LoggerFrom(ctx).Info("Dashboard serving", "address", s.Listener.Addr().String(), "tls", s.CertFile != "")
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		return nil
	}
}

// NeedLeaderElection is false: every replica serves the dashboard.
func (s *Server) NeedLeaderElection() bool { return false }
