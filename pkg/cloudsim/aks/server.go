package aks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// Credential is one Entra ID application (service principal) the simulator accepts, and the
// subscriptions it may manage. "*" in Subscriptions grants every subscription.
type Credential struct {
	TenantID      string
	ClientID      string
	ClientSecret  string
	Subscriptions []string
}

// Options configures a Server. The zero value is usable but accepts no credential.
type Options struct {
	// Credentials are the applications that can get tokens (see SetCredential to change them
	// while running, e.g. to rotate a secret).
	Credentials []Credential
	// Delay is how long every long-running operation (create, update, upgrade, scale, delete)
	// stays in progress. Default 2s; tests use a few tens of milliseconds.
	Delay time.Duration
	// Clock drives long-running operations. Default simcore.RealClock. Token expiry follows the
	// wall clock, because the SDK caches tokens by wall time.
	Clock simcore.Clock
	// Faults is the initial fault configuration (see Faults() to change it while running).
	Faults simcore.FaultConfig
	// ThrottleRetryAfter is the back-off a throttled (429) answer asks for. It is sent as
	// Retry-After in whole seconds, rounded up, as ARM does, and also as retry-after-ms, which
	// azcore's retry policy prefers, so a test can set it to a few milliseconds and stay fast.
	// Default 1s; negative sends neither header (azcore then uses its exponential back-off).
	ThrottleRetryAfter time.Duration
	// PollRetryAfter, when positive, is sent (as Retry-After and retry-after-ms) on responses
	// that start or poll a long-running operation. azcore's pollers honour it instead of their
	// polling frequency, so it stays off by default to keep PollUntilDone frequencies in charge.
	PollRetryAfter time.Duration
	// TokenLifetime is the lifetime of issued access tokens. Default 1h.
	TokenLifetime time.Duration
	// KubernetesVersions is the list of major.minor.patch versions offered. Default
	// DefaultKubernetesVersions.
	KubernetesVersions []string
	// ListPageSize is the number of clusters per page of a list (the rest follows nextLink).
	// Default 100.
	ListPageSize int
	// ResourceGroups, when not empty, are the only resource groups that exist (in every
	// subscription); others answer 404 ResourceGroupNotFound. Empty means every group exists.
	ResourceGroups []string
	// Hostnames are extra DNS names or IPs for the serving certificate, besides localhost,
	// 127.0.0.1 and ::1.
	Hostnames []string
	// Backend, when set, serves every cluster created from then on: the kubeconfigs of
	// listClusterUserCredential and listClusterAdminCredential point at it, and its TokenReview
	// path accepts their tokens (see SetBackend to point one cluster elsewhere).
	Backend *simcore.Backend
	// KubeTokenLifetime is how long a token of a listed kubeconfig is accepted, on Clock.
	// Default 1h.
	KubeTokenLifetime time.Duration
}

// Server simulates Entra ID (client-credentials tokens) and the ARM Microsoft.ContainerService
// managedClusters and agentPools APIs over HTTPS, for the unmodified Azure SDK.
type Server struct {
	opts     Options
	clock    simcore.Clock
	faults   *simcore.Faults
	counters simcore.Counters
	certs    *serverCerts
	versions versionSet
	rgs      map[string]bool

	credMu sync.RWMutex
	creds  map[string]*credential // tenant/clientID, lower case

	tokMu     sync.RWMutex
	tokens    map[string]*accessToken
	lastPrune time.Time

	mu       sync.Mutex
	clusters map[string]*cluster // sub/rg/name, lower case
	keys     []string            // sorted keys of clusters, for listing and paging
	ops      map[string]*operation
	opQueue  []*operation // creation order, for pruning finished operations
	opHead   int

	reqSeq atomic.Uint64
	errSeq atomic.Uint64
	hook   atomic.Pointer[func(op string, r *http.Request)]

	kubeMu     sync.Mutex
	kubeTokens map[string]kubeToken

	srvMu sync.Mutex
	srv   *http.Server
	url   atomic.Pointer[string]

	clientOnce sync.Once
	transport  *http.Transport
	client     *http.Client
}

// New builds a Server (and its CA) without listening; see Start, or use Handler directly.
func New(opts Options) (*Server, error) {
	if opts.Delay <= 0 {
		opts.Delay = 2 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = simcore.RealClock{}
	}
	if opts.ThrottleRetryAfter == 0 {
		opts.ThrottleRetryAfter = time.Second
	}
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = time.Hour
	}
	if opts.KubeTokenLifetime <= 0 {
		opts.KubeTokenLifetime = time.Hour
	}
	if opts.ListPageSize <= 0 {
		opts.ListPageSize = 100
	}
	vs, err := newVersionSet(opts.KubernetesVersions)
	if err != nil {
		return nil, err
	}
	certs, err := newServerCerts(opts.Hostnames)
	if err != nil {
		return nil, fmt.Errorf("aks simulator: %w", err)
	}
	s := &Server{
		opts:     opts,
		clock:    opts.Clock,
		faults:   simcore.NewFaults(opts.Faults),
		certs:    certs,
		versions: vs,
		creds:    make(map[string]*credential),
		tokens:   make(map[string]*accessToken),
		clusters: make(map[string]*cluster),
		ops:      make(map[string]*operation),

		kubeTokens: make(map[string]kubeToken),
	}
	if len(opts.ResourceGroups) > 0 {
		s.rgs = make(map[string]bool, len(opts.ResourceGroups))
		for _, rg := range opts.ResourceGroups {
			s.rgs[strings.ToLower(rg)] = true
		}
	}
	for _, c := range opts.Credentials {
		if err := s.SetCredential(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Start serves HTTPS on addr (e.g. "127.0.0.1:0"); URL reports the address chosen.
func (s *Server) Start(addr string) error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv != nil {
		return errors.New("aks simulator: already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("aks simulator: listening on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           s,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{s.certs.leaf}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	s.srv = srv
	u := "https://" + ln.Addr().String()
	s.url.Store(&u)
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	return nil
}

// Close stops serving and closes open connections.
func (s *Server) Close() error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	s.srv = nil
	if err != nil {
		return fmt.Errorf("aks simulator: closing: %w", err)
	}
	return nil
}

// Shutdown stops serving gracefully.
func (s *Server) Shutdown(ctx context.Context) error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	s.srv = nil
	if err != nil {
		return fmt.Errorf("aks simulator: shutting down: %w", err)
	}
	return nil
}

// URL is the base URL (https://host:port) of both the Entra ID authority host and ARM.
// It is empty until Start.
func (s *Server) URL() string {
	if u := s.url.Load(); u != nil {
		return *u
	}
	return ""
}

// Handler is the simulator's http.Handler (the Server itself), for serving it elsewhere or
// calling it directly in benchmarks.
func (s *Server) Handler() http.Handler { return s }

// Counters counts every call by operation name ("Token", "ManagedClusters.Get",
// "AgentPools.CreateOrUpdate", ...), including faulted and unauthenticated ones.
func (s *Server) Counters() *simcore.Counters { return &s.counters }

// Faults is the live fault injector; Set changes it while running.
func (s *Server) Faults() *simcore.Faults { return s.faults }

// Delay is the duration of every long-running operation.
func (s *Server) Delay() time.Duration { return s.opts.Delay }

func (s *Server) now() time.Time { return s.clock.Now() }

// requestID returns a unique, uuid-shaped id for x-ms-request-id and friends.
func (s *Server) requestID() string {
	n := s.reqSeq.Add(1)
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", n)
}

// SetRequestHook installs f (nil removes it), called with each request's operation name before
// the request is handled and without any simulator lock held: tests use it to act between two
// calls of a client, e.g. a change in the console between drover's GET and its PUT.
func (s *Server) SetRequestHook(f func(op string, r *http.Request)) {
	if f == nil {
		s.hook.Store(nil)
		return
	}
	s.hook.Store(&f)
}

// ServeHTTP routes one request: count it, apply injected faults, authenticate, then handle.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, simcore.TokenReviewPrefix) {
		s.counters.Inc("TokenReview")
		simcore.TokenReviewHandler(s).ServeHTTP(w, r)
		return
	}
	rt := parseRoute(r)
	s.counters.Inc(rt.op)
	if f := s.hook.Load(); f != nil {
		(*f)(rt.op, r)
	}
	h := w.Header()
	id := s.requestID()
	h["X-Ms-Request-Id"] = []string{id}
	h["X-Ms-Correlation-Request-Id"] = []string{id}

	fault, latency := s.faults.Decide(rt.op)
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	switch fault {
	case simcore.FaultThrottle:
		s.writeThrottled(w, r, rt)
		return
	case simcore.FaultServerError:
		s.writeServerError(w, rt)
		return
	case simcore.FaultDrop:
		simcore.DropConnection(w)
		return
	}

	switch rt.kind {
	case routeUnknown:
		writeError(w, errorf(http.StatusNotFound, "InvalidResourceType", "The resource type or path '%s' is not supported by the AKS simulator.", r.URL.Path))
		return
	case routeBadMethod:
		writeError(w, errorf(http.StatusMethodNotAllowed, "MethodNotAllowed", "The HTTP method '%s' is not supported for '%s'.", r.Method, r.URL.Path))
		return
	case routeOpenIDConfig:
		s.handleOpenIDConfig(w, r, rt)
		return
	case routeInstanceDiscovery:
		s.handleInstanceDiscovery(w, r)
		return
	case routeToken:
		s.handleToken(w, r, rt)
		return
	case routeMetadata:
		handleMetadata(w, r)
		return
	}

	tok, ok := s.authorize(w, r, rt)
	if !ok {
		return
	}
	rt.apiVersion = r.URL.Query().Get("api-version")
	if rt.apiVersion == "" {
		writeError(w, badRequest("MissingApiVersionParameter", "The api-version query parameter (?api-version=) is required for all requests."))
		return
	}
	if rt.rg != "" && s.rgs != nil && !s.rgs[strings.ToLower(rt.rg)] {
		writeError(w, errorf(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", rt.rg))
		return
	}
	switch rt.kind {
	case routeSubscriptionList:
		s.handleListSubscriptions(w, tok)
	case routeTenantList:
		s.handleListTenants(w, tok)
	case routeClusterList, routeClusterListRG:
		s.handleListClusters(w, r, rt)
	case routeCluster:
		switch r.Method {
		case http.MethodGet:
			s.handleGetCluster(w, rt)
		case http.MethodPut:
			s.handlePutCluster(w, r, rt, tok)
		case http.MethodPatch:
			s.handleUpdateTags(w, r, rt)
		case http.MethodDelete:
			s.handleDeleteCluster(w, r, rt)
		}
	case routeAdminCredential:
		s.handleCredential(w, rt, true)
	case routeUserCredential:
		s.handleCredential(w, rt, false)
	case routePoolList:
		s.handleListPools(w, rt)
	case routePool:
		switch r.Method {
		case http.MethodGet:
			s.handleGetPool(w, rt)
		case http.MethodPut:
			s.handlePutPool(w, r, rt)
		case http.MethodDelete:
			s.handleDeletePool(w, r, rt)
		}
	case routeOperation, routeOperationResult:
		s.handleOperation(w, r, rt)
	}
}

func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead
}

// writeThrottled answers like ARM (or Entra ID for token calls) when a request is throttled.
func (s *Server) writeThrottled(w http.ResponseWriter, r *http.Request, rt *route) {
	setRetryAfter(w.Header(), s.opts.ThrottleRetryAfter)
	secs := max(int64((s.opts.ThrottleRetryAfter+time.Second-1)/time.Second), 1)
	if rt.isEntra() {
		writeJSON(w, http.StatusTooManyRequests, oauthError{
			Error:       "temporarily_unavailable",
			Description: fmt.Sprintf("AADSTS50196: The server terminated an operation because it encountered a client request loop. Please retry after %d seconds.", secs),
			ErrorCodes:  []int{50196},
		})
		return
	}
	kind := "read"
	hdr := "X-Ms-Ratelimit-Remaining-Subscription-Reads"
	if isWrite(r.Method) {
		kind, hdr = "write", "X-Ms-Ratelimit-Remaining-Subscription-Writes"
	}
	w.Header()[hdr] = []string{"0"}
	writeError(w, errorf(http.StatusTooManyRequests, "SubscriptionRequestsThrottled",
		"Number of '%s' requests for subscription '%s' actor 'simulator' exceeded. Please try again after '%d' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling",
		kind, rt.sub, secs))
}

// writeServerError alternates 500 and 503, the two transient 5xx answers ARM gives.
func (s *Server) writeServerError(w http.ResponseWriter, rt *route) {
	odd := s.errSeq.Add(1)%2 == 1
	if rt.isEntra() {
		status := http.StatusInternalServerError
		if !odd {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, oauthError{Error: "server_error", Description: "AADSTS90033: A transient error has occurred. Please try again.", ErrorCodes: []int{90033}})
		return
	}
	if odd {
		writeError(w, errorf(http.StatusInternalServerError, "InternalServerError", "Encountered internal server error. Diagnostic information: timestamp '%s'.", s.now().UTC().Format(time.RFC3339)))
		return
	}
	writeError(w, errorf(http.StatusServiceUnavailable, "ServiceUnavailable", "The server is currently unable to handle the request due to a temporary overloading or maintenance. Please retry later."))
}

// setRetryAfter sets Retry-After (whole seconds, at least 1) and retry-after-ms (exact). A
// negative or zero d sets nothing.
func setRetryAfter(h http.Header, d time.Duration) {
	if d <= 0 {
		return
	}
	secs := max(int64((d+time.Second-1)/time.Second), 1)
	h["Retry-After"] = []string{fmt.Sprint(secs)}
	h["Retry-After-Ms"] = []string{fmt.Sprint(max(d.Milliseconds(), 1))}
}
