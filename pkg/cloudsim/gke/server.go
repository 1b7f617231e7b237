package gke

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Delay is how long every operation runs before it is DONE. Default 2s.
	Delay time.Duration
	// Clock drives operations; default the wall clock. Access tokens and JWT assertions are
	// always checked against the wall clock, because the SDK stamps and caches them with it.
	Clock simcore.Clock
	// Faults injects throttling, 5xx, dropped connections and latency; default none.
	Faults *simcore.Faults
	// DefaultVersion is the version of a cluster created without one ("-" or empty). It must be
	// one of Versions. Default DefaultVersion.
	DefaultVersion string
	// Versions are the versions the simulator offers. Default DefaultVersions.
	Versions []string
	// TokenTTL is the lifetime of an access token from /token. Default 1h, as Google's.
	TokenTTL time.Duration
	// StatusLag is how long a cluster and its node pools keep their status (RUNNING) after an
	// update operation starts: GKE does not show every operation in the cluster's status at
	// once (or at all, for some), so callers must also list operations. Zero shows RECONCILING
	// at once. The operation is RUNNING, and blocks others, throughout.
	StatusLag time.Duration
	// Backend, when set, serves every cluster created from then on: clusters.get reports its
	// endpoint and CA (masterAuth.clusterCaCertificate), and its TokenReview path accepts the
	// access tokens of service accounts allowed in the cluster's project (see SetBackend).
	Backend *simcore.Backend
}

// Server simulates the GKE container/v1 REST API and Google's OAuth2 token endpoint. It is an
// http.Handler; mount it at the root of a listener and point the SDK at it with
// option.WithEndpoint (see ClientOptions). It is safe for concurrent use.
type Server struct {
	delay    time.Duration
	lag      time.Duration
	clock    simcore.Clock
	faults   *simcore.Faults
	versions versionSet
	counters simcore.Counters
	auth     authority
	baseURL  atomic.Pointer[string]
	nFaults  atomic.Int64

	backend *simcore.Backend

	caOnce sync.Once
	caPEM  string // base64 PEM shared by every cluster's masterAuth

	mu       sync.Mutex
	projects map[string]*projectState
	ops      map[string]*opRec
	ipSeq    uint32
}

// New returns a Server. It panics if opts.Versions or opts.DefaultVersion are malformed, which is
// a programming error in the caller.
func New(opts Options) *Server {
	if opts.Delay <= 0 {
		opts.Delay = 2 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = simcore.RealClock{}
	}
	if opts.Faults == nil {
		opts.Faults = &simcore.Faults{}
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	vs, err := newVersionSet(opts.Versions, opts.DefaultVersion)
	if err != nil {
		panic(err)
	}
	s := &Server{
		delay:    opts.Delay,
		lag:      max(opts.StatusLag, 0),
		clock:    opts.Clock,
		faults:   opts.Faults,
		versions: vs,
		projects: map[string]*projectState{},
		ops:      map[string]*opRec{},
		backend:  opts.Backend,
	}
	s.auth = authority{
		accounts: map[string]*serviceAccount{},
		tokens:   map[string]accessToken{},
		ttl:      opts.TokenTTL,
		now:      time.Now,
	}
	return s
}

// SetBaseURL tells the simulator the URL it is served at (scheme://host:port, no trailing
// slash). Key files point their token_uri there and selfLinks use it.
func (s *Server) SetBaseURL(u string) {
	u = strings.TrimRight(u, "/")
	s.baseURL.Store(&u)
}

// BaseURL returns the URL set by SetBaseURL, or "".
func (s *Server) BaseURL() string {
	if p := s.baseURL.Load(); p != nil {
		return *p
	}
	return ""
}

// Counters returns the per-operation call counters. Operation names are the API method names
// without the "projects.locations." prefix ("clusters.get", "nodePools.setSize",
// "operations.get") plus "token" for the token endpoint.
func (s *Server) Counters() *simcore.Counters { return &s.counters }

// Faults returns the fault injector; change its configuration with Set.
func (s *Server) Faults() *simcore.Faults { return s.faults }

// ServeHTTP serves the token endpoint at /token and the API under /v1/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		s.handleToken(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, simcore.TokenReviewPrefix) {
		s.counters.Inc("tokenReview")
		simcore.TokenReviewHandler(s).ServeHTTP(w, r)
		return
	}
	rt, ok := parseRoute(r.Method, r.URL.Path)
	if !ok {
		s.counters.Inc("unknown")
		writeAPIError(w, errorf(http.StatusNotFound, "NOT_FOUND", "The requested URL %s was not found on this server.", r.URL.Path))
		return
	}
	if !s.admit(w, r, rt.op, rt.project) {
		return
	}
	at, ok := s.auth.authenticate(r)
	if !ok {
		writeAPIError(w, errUnauthenticated)
		return
	}
	need := scopeRead
	if rt.write {
		need = scopeWrite
	}
	if at.scopes&need == 0 {
		e := errorf(http.StatusForbidden, "PERMISSION_DENIED", "Request had insufficient authentication scopes.")
		e.details = []any{errorInfo("ACCESS_TOKEN_SCOPE_INSUFFICIENT", "googleapis.com", nil)}
		writeAPIError(w, e)
		return
	}
	if !at.sa.allowed(rt.project) {
		writeAPIError(w, permissionDenied(rt.permission(), rt.resource()))
		return
	}
	body, aerr := rt.handler(s, r, &rt)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// admit counts the call and applies the injected fault, if any. It reports whether the call
// may proceed.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, op, project string) bool {
	s.counters.Inc(op)
	fault, lat := s.faults.Decide(op)
	if lat > 0 && !sleep(r.Context(), lat) {
		return false
	}
	switch fault {
	case simcore.FaultThrottle:
		if op == "token" {
			w.Header().Set("Retry-After", "1")
			oauthError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "Rate Limit Exceeded")
			return false
		}
		writeAPIError(w, throttled(project))
		return false
	case simcore.FaultServerError:
		e := serverError(s.nFaults.Add(1))
		if op == "token" {
			oauthError(w, e.code, "internal_failure", "Backend Error")
			return false
		}
		writeAPIError(w, e)
		return false
	case simcore.FaultDrop:
		simcore.DropConnection(w)
		return false
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
