// Package webhook receives Git push webhooks (GitHub, GitLab, Gitea/Forgejo, Bitbucket Cloud)
// on drover server and makes the GitRepos following the pushed repository and ref fetch at
// once, instead of at their next poll.
//
// A request is verified first, with the provider's secret from one server-wide Secret (as
// Fleet does): a bad or missing signature is 401 and changes nothing. A verified push names the
// repository (its clone URLs, normalised so https, ssh and scp-style forms match) and the refs
// pushed; the GitRepos of that repository (found through a cache index by normalised URL) that
// follow one of the refs get the annotation fleet.drover.io/fetch-requested set to the time,
// which the GitRepo controller takes as "fetch now". The annotation is written through the API,
// so it works on whichever replica receives the request, leader or not. An unknown repository
// is 404; other events (ping, issues, ...) are acknowledged with 200 and ignored.
//
// The receiver is meant to face the internet, so what an unauthenticated request can cost is
// bounded: the cheap checks (method, event header, content type, declared size) come first;
// then a token bucket and a limit on the requests processed at once refuse the excess with 429
// (nothing is queued); the webhook Secret is read at most once per SecretTTL (a missing Secret
// too), never once per request, so unsigned junk does not turn into API server load.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/metrics"
)

// DefaultSecretName is the Secret holding the webhook secrets, one key per provider.
const DefaultSecretName = "drover-webhook"

// repoIndex indexes GitRepos by NormalizeURL(spec.repo).
const repoIndex = "webhook.repo"

// maxBody bounds a payload (GitHub caps them at 25 MB).
const maxBody = 25 << 20

// Defaults of the receiver's limits (Options and Receiver fields left zero).
const (
	// DefaultSecretTTL is how long the webhook Secret, as read (or found missing), is used
	// before it is read again: a rotation takes effect within it.
	DefaultSecretTTL = 10 * time.Second
	// DefaultRateLimit is the sustained rate of deliveries (per second, per replica) past the
	// cheap checks; DefaultRateBurst how many may come at once above it.
	DefaultRateLimit = 10
	DefaultRateBurst = 50
	// DefaultMaxInFlight is how many deliveries one replica processes at once (reading the
	// body, verifying, requesting fetches). With maxBody it bounds the memory payloads take.
	DefaultMaxInFlight = 8
)

// secretReadTimeout bounds one read of the webhook Secret.
const secretReadTimeout = 10 * time.Second

// The limits a delivery can be refused by.
const (
	limitRate        = iota // the token bucket
	limitConcurrency        // MaxInFlight
	numLimits
)

var limitNames = [numLimits]string{limitRate: "rate", limitConcurrency: "concurrency"}

func init() {
	// Both series exist from the start.
	for _, l := range limitNames {
		metrics.WebhookThrottled.WithLabelValues(l)
	}
}

// throttleLogEvery is how often, at most, refusals by the limits are logged (with counts: one
// line per refusal would be a flood of its own).
const throttleLogEvery = time.Minute

// Options configure the receiver.
type Options struct {
	// Addr is the listen address (e.g. ":8090").
	Addr string
	// Listener, when set, is used instead of listening on Addr (tests).
	Listener net.Listener
	// SecretNamespace and SecretName locate the Secret with the providers' secrets (keys
	// github, gitlab, gitea, bitbucket). Default name: DefaultSecretName.
	SecretNamespace, SecretName string
	// SecretTTL, RateLimit, RateBurst and MaxInFlight are the Receiver's (zero: the defaults).
	SecretTTL   time.Duration
	RateLimit   float64
	RateBurst   int
	MaxInFlight int
}

// Receiver is the webhook's http.Handler. Set its fields before the first request.
type Receiver struct {
	// Client lists GitRepos (cached, with the index Setup adds) and patches them.
	Client client.Client
	// SecretReader reads the webhook Secret (the API reader: not through the manager's cache,
	// which would need list and watch on Secrets). The receiver keeps what it read for
	// SecretTTL.
	SecretReader client.Reader
	// SecretNamespace and SecretName locate the webhook Secret.
	SecretNamespace, SecretName string
	// SecretTTL is how long the Secret as read, or its absence, is used before it is read
	// again (zero: DefaultSecretTTL). A rotated secret applies within it.
	SecretTTL time.Duration
	// RateLimit (deliveries per second) and RateBurst are the token bucket deliveries that
	// pass the cheap checks draw from; the excess is answered 429 (zero: DefaultRateLimit,
	// DefaultRateBurst).
	RateLimit float64
	RateBurst int
	// MaxInFlight is how many deliveries are processed at once; more are answered 429 at once
	// (zero: DefaultMaxInFlight).
	MaxInFlight int
	// Now returns the current time (default time.Now). It also drives the Secret's TTL and the
	// token bucket.
	Now func() time.Time

	initOnce   sync.Once
	limiter    *rate.Limiter
	retryAfter string        // Retry-After of a 429 from the token bucket
	inFlight   chan struct{} // a slot per delivery being processed
	secretLock chan struct{} // held while the cached Secret is looked at or read
	cached     cachedSecret  // guarded by secretLock

	throttled       [numLimits]atomic.Int64 // deliveries refused by each limit
	throttleLogNext atomic.Int64            // unix nanoseconds before which no refusal is logged
}

// cachedSecret is the webhook Secret as last read.
type cachedSecret struct {
	read   bool      // a read was attempted
	at     time.Time // when
	data   map[string][]byte
	exists bool  // the Secret was found (at this read or, after a failed one, an earlier read)
	err    error // the last read failed (other than not found) and nothing was read before
}

// +kubebuilder:rbac:groups=fleet.drover.io,resources=gitrepos,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",namespace=drover-system,resources=secrets,verbs=get

// Setup adds the GitRepo URL index and the receiver's HTTP server to mgr. The server runs on
// every replica (not only the leader): the fetch request it writes reaches the leader through
// the API.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.SecretName == "" {
		opts.SecretName = DefaultSecretName
	}
	if err := IndexGitRepos(mgr); err != nil {
		return err
	}
	rcv := &Receiver{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), SecretNamespace: opts.SecretNamespace, SecretName: opts.SecretName,
		SecretTTL: opts.SecretTTL, RateLimit: opts.RateLimit, RateBurst: opts.RateBurst, MaxInFlight: opts.MaxInFlight}
	if err := mgr.Add(&runnable{addr: opts.Addr, ln: opts.Listener, handler: rcv}); err != nil {
		return fmt.Errorf("add webhook receiver: %w", err)
	}
	return nil
}

// Controllers returns a function for server.Options.Controllers.
func Controllers(opts Options) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error { return Setup(mgr, opts) }
}

// IndexGitRepos indexes GitRepos by normalised repository URL.
func IndexGitRepos(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &fleetv1alpha1.GitRepo{}, repoIndex, repoKeys); err != nil {
		return fmt.Errorf("index GitRepos by repository URL: %w", err)
	}
	return nil
}

// repoKeys is the index function of repoIndex.
func repoKeys(o client.Object) []string {
	if k := NormalizeURL(o.(*fleetv1alpha1.GitRepo).Spec.Repo); k != "" {
		return []string{k}
	}
	return nil
}

// runnable serves the receiver until the manager stops.
type runnable struct {
	addr    string
	ln      net.Listener
	handler http.Handler
}

// NeedLeaderElection is false: every replica receives webhooks.
func (r *runnable) NeedLeaderElection() bool { return false }

func (r *runnable) Start(ctx context.Context) error {
	ln := r.ln
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", r.addr); err != nil {
			return fmt.Errorf("--webhook-bind-address %s: %w", r.addr, err)
		}
	}
	srv := &http.Server{Handler: r.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	ctrl.LoggerFrom(ctx).Info("Serving Git push webhooks", "address", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("webhook receiver: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown) //nolint:contextcheck // the manager's context is done by now
}

func (r *Receiver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// init sets up the limits from the fields, once.
func (r *Receiver) init() {
	r.initOnce.Do(func() {
		limit, burst, inFlight := r.RateLimit, r.RateBurst, r.MaxInFlight
		if limit <= 0 {
			limit = DefaultRateLimit
		}
		if burst <= 0 {
			burst = DefaultRateBurst
		}
		if inFlight <= 0 {
			inFlight = DefaultMaxInFlight
		}
		r.limiter = rate.NewLimiter(rate.Limit(limit), burst)
		// A token comes back within 1/limit seconds.
		r.retryAfter = strconv.Itoa(max(1, int(math.Ceil(1/limit))))
		r.inFlight = make(chan struct{}, inFlight)
		r.secretLock = make(chan struct{}, 1)
	})
}

func (r *Receiver) secretTTL() time.Duration {
	if r.SecretTTL > 0 {
		return r.SecretTTL
	}
	return DefaultSecretTTL
}

// throttle answers 429: limit refused the delivery before anything was read or queued.
// Refusals are counted and logged at most once per throttleLogEvery, with the counts so far.
func (r *Receiver) throttle(ctx context.Context, w http.ResponseWriter, limit int, retryAfter string) {
	r.throttled[limit].Add(1)
	metrics.WebhookThrottled.WithLabelValues(limitNames[limit]).Inc()
	now := r.now().UnixNano()
	if next := r.throttleLogNext.Load(); now >= next && r.throttleLogNext.CompareAndSwap(next, now+int64(throttleLogEvery)) {
		ctrl.LoggerFrom(ctx).WithName("webhook").Info("Webhook deliveries refused with 429 by the receiver's limits (counts since the start)",
			limitNames[limitRate], r.throttled[limitRate].Load(), limitNames[limitConcurrency], r.throttled[limitConcurrency].Load())
	}
	w.Header().Set("Retry-After", retryAfter)
	http.Error(w, "too many webhook deliveries, retry later", http.StatusTooManyRequests)
}

// isJSON says whether the Content-Type is application/json (all providers send it when the
// webhook is set up with content type JSON; GitHub's form-encoded payloads are not understood).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// ServeHTTP handles one webhook delivery.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	log := ctrl.LoggerFrom(req.Context()).WithName("webhook")
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a push webhook here", http.StatusMethodNotAllowed)
		return
	}
	provider, event := detect(req.Header)
	if provider == "" {
		http.Error(w, "not a GitHub, GitLab, Gitea/Forgejo or Bitbucket webhook (no event header)", http.StatusBadRequest)
		return
	}
	if !isJSON(req.Header.Get("Content-Type")) {
		http.Error(w, "set the webhook's content type to application/json", http.StatusUnsupportedMediaType)
		return
	}
	if req.ContentLength > maxBody {
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	// The limits, before anything that reads the body, the Secret or the API. Refused
	// deliveries are answered at once: nothing waits for a token or a slot.
	r.init()
	if !r.limiter.AllowN(r.now(), 1) {
		r.throttle(req.Context(), w, limitRate, r.retryAfter)
		return
	}
	select {
	case r.inFlight <- struct{}{}:
		defer func() { <-r.inFlight }()
	default:
		r.throttle(req.Context(), w, limitConcurrency, "1")
		return
	}
	log = log.WithValues("provider", provider, "event", event)
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read payload", http.StatusBadRequest)
		return
	}
	secret, err := r.secret(req.Context(), provider)
	if err == nil {
		err = verify(provider, req.Header, body, secret)
	}
	if err != nil {
		// The log says why (never a secret or signature value); the caller only that it failed.
		log.Info("Webhook refused: not verified", "reason", err.Error())
		http.Error(w, "signature not verified", http.StatusUnauthorized)
		return
	}
	if !isPush(provider, event) {
		writeText(w, http.StatusOK, "ignored: not a push event")
		return
	}
	p, err := parsePush(provider, body)
	if err != nil {
		log.Info("Webhook refused: bad payload", "error", err.Error())
		http.Error(w, "malformed push payload", http.StatusBadRequest)
		return
	}
	repos, err := r.gitRepos(req.Context(), p.URLs)
	if err != nil {
		log.Error(err, "Listing GitRepos for a webhook")
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if len(repos) == 0 {
		log.Info("Webhook for a repository no GitRepo follows", "urls", p.URLs)
		http.Error(w, "no GitRepo follows this repository", http.StatusNotFound)
		return
	}
	stamp := r.now().UTC().Format(time.RFC3339Nano)
	var triggered []string
	for i := range repos {
		gr := &repos[i]
		if !follows(gr, p) {
			continue
		}
		if err := r.requestFetch(req.Context(), gr, stamp); err != nil {
			log.Error(err, "Requesting a fetch", "gitrepo", client.ObjectKeyFromObject(gr))
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		triggered = append(triggered, client.ObjectKeyFromObject(gr).String())
	}
	log.Info("Push received", "refs", p.Refs, "gitrepos", triggered)
	if len(triggered) == 0 {
		writeText(w, http.StatusOK, "ignored: no GitRepo of this repository follows the refs pushed")
		return
	}
	noun := "GitRepos"
	if len(triggered) == 1 {
		noun = "GitRepo"
	}
	writeText(w, http.StatusAccepted, fmt.Sprintf("fetch requested for %d %s", len(triggered), noun))
}

// writeText answers with a fixed message (never one echoing the request).
func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}

// secret returns the provider's secret from the webhook Secret (nil when the Secret or its key
// is missing: verification then fails).
func (r *Receiver) secret(ctx context.Context, p Provider) ([]byte, error) {
	c, err := r.secretData(ctx)
	switch {
	case err != nil:
		return nil, err
	case c.err != nil:
		return nil, fmt.Errorf("read Secret %s/%s: %w", r.SecretNamespace, r.SecretName, c.err)
	case !c.exists:
		return nil, fmt.Errorf("the Secret %s/%s was not found", r.SecretNamespace, r.SecretName)
	}
	v := c.data[string(p)]
	if len(v) == 0 {
		return nil, fmt.Errorf("the Secret %s/%s has no key %s", r.SecretNamespace, r.SecretName, p)
	}
	return v, nil
}

// secretData returns the webhook Secret as read at most SecretTTL ago, reading it when that
// read is older. Every outcome is kept for the TTL, so the Secret is read at most once per TTL
// whatever the requests: found, not found (the absence), or failed (then the Secret read
// before, if any, is used until the next read). Requests arriving during a read wait for it
// rather than reading too.
func (r *Receiver) secretData(ctx context.Context) (cachedSecret, error) {
	r.init()
	select {
	case r.secretLock <- struct{}{}:
	case <-ctx.Done():
		return cachedSecret{}, fmt.Errorf("waiting for the Secret %s/%s: %w", r.SecretNamespace, r.SecretName, ctx.Err())
	}
	defer func() { <-r.secretLock }()
	now := r.now()
	if c := r.cached; c.read && !now.Before(c.at) && now.Before(c.at.Add(r.secretTTL())) {
		return c, nil
	}
	// Not cancelled with the request: a client hanging up during the read must not leave the
	// read undone (and the next request reading again).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), secretReadTimeout)
	defer cancel()
	s := &corev1.Secret{}
	err := r.SecretReader.Get(rctx, client.ObjectKey{Namespace: r.SecretNamespace, Name: r.SecretName}, s)
	next := cachedSecret{read: true, at: now}
	switch {
	case err == nil:
		next.data, next.exists = s.Data, true
	case apierrors.IsNotFound(err):
	case r.cached.exists:
		ctrl.LoggerFrom(ctx).WithName("webhook").Error(err, "Reading the webhook Secret; using the one read before", "secret", client.ObjectKey{Namespace: r.SecretNamespace, Name: r.SecretName})
		next.data, next.exists = r.cached.data, true
	default:
		next.err = err
	}
	r.cached = next
	return next, nil
}

// gitRepos returns the GitRepos (all namespaces) whose repository is one of urls.
func (r *Receiver) gitRepos(ctx context.Context, urls []string) ([]fleetv1alpha1.GitRepo, error) {
	var out []fleetv1alpha1.GitRepo
	seen := map[types.UID]bool{}
	var keys []string
	for _, u := range urls {
		if k := NormalizeURL(u); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		var list fleetv1alpha1.GitRepoList
		if err := r.Client.List(ctx, &list, client.MatchingFields{repoIndex: k}); err != nil {
			return nil, fmt.Errorf("list GitRepos of %s: %w", k, err)
		}
		for _, gr := range list.Items {
			if !seen[gr.UID] {
				seen[gr.UID] = true
				out = append(out, gr)
			}
		}
	}
	return out, nil
}

// follows says whether gr would deploy something new after push p: it follows one of the
// branches or tags pushed (a GitRepo without branch, tag or revision follows the default
// branch; when the payload does not name it, any branch push counts). Paused GitRepos and those
// pinned to a revision never do.
func follows(gr *fleetv1alpha1.GitRepo, p *push) bool {
	s := &gr.Spec
	switch {
	case s.Paused || s.Revision != "":
		return false
	case s.Branch != "":
		return slices.Contains(p.Refs, "refs/heads/"+s.Branch)
	case s.Tag != "":
		return slices.Contains(p.Refs, "refs/tags/"+s.Tag)
	case p.DefaultBranch != "":
		return slices.Contains(p.Refs, "refs/heads/"+p.DefaultBranch)
	}
	for _, ref := range p.Refs {
		if strings.HasPrefix(ref, "refs/heads/") {
			return true
		}
	}
	return false
}

// requestFetch sets gr's fetch-requested annotation to stamp.
func (r *Receiver) requestFetch(ctx context.Context, gr *fleetv1alpha1.GitRepo, stamp string) error {
	patch := client.MergeFrom(gr.DeepCopy())
	if gr.Annotations == nil {
		gr.Annotations = map[string]string{}
	}
	gr.Annotations[fleetv1alpha1.FetchRequestedAnnotation] = stamp
	if err := r.Client.Patch(ctx, gr, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("annotate GitRepo %s/%s: %w", gr.Namespace, gr.Name, err)
	}
	return nil
}
