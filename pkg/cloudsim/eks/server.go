package eks

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"math/big"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// Defaults used when Options leaves a field empty.
const (
	DefaultAccessKeyID     = "AKIADROVEREKSSIM0001"
	DefaultSecretAccessKey = "drover-eks-simulator-secret-access-key"
	DefaultAccountID       = "123456789012"
	DefaultDelay           = 2 * time.Second
)

// maxBody bounds request bodies; real EKS requests are a few kilobytes.
const maxBody = 1 << 20

// Options configures a Server.
type Options struct {
	// Credentials maps access key IDs to secret access keys. Requests signed with any other
	// key are refused. Nil means {DefaultAccessKeyID: DefaultSecretAccessKey}.
	Credentials map[string]string
	// Delay is how long creating, updating and deleting take. Zero means DefaultDelay; a
	// negative value makes every transition finish by the next call.
	Delay time.Duration
	// UpdateStatusLag is how long a cluster or node group keeps reporting ACTIVE after
	// accepting an update (real EKS does so for a few seconds, which is why callers must also
	// check ListUpdates); zero reports UPDATING at once. The update is InProgress, and blocks
	// others, throughout.
	UpdateStatusLag time.Duration
	// Clock drives the state machines; nil means the wall clock.
	Clock simcore.Clock
	// Faults injects throttling, 5xx, dropped connections and latency; nil injects nothing
	// until configured through Server.Faults().Set. Faults are drawn for authenticated calls
	// only, so a seeded run is not perturbed by refused credentials.
	Faults *simcore.Faults
	// AccountID appears in ARNs; empty means DefaultAccountID.
	AccountID string
	// Principals maps access key IDs to the IAM principal ARN they belong to (what STS
	// GetCallerIdentity returns and access entries name). A key without an entry belongs to
	// the IAM user arn:aws:iam::<account>:user/<access key ID>, DefaultAccessKeyID to
	// DefaultUserName.
	Principals map[string]string
	// Backend, when set, serves every cluster created from then on: DescribeCluster reports
	// its endpoint and CA, and its TokenReview path accepts tokens for those clusters (see
	// SetBackend to point one cluster elsewhere).
	Backend *simcore.Backend
}

// DefaultUserName is the IAM user DefaultAccessKeyID belongs to.
const DefaultUserName = "drover-simulator"

// Server is a simulated EKS control-plane API: an http.Handler speaking the REST-JSON protocol
// of the real service, so the unmodified aws-sdk-go-v2 eks client works against it through
// BaseEndpoint. State is kept per region (taken from the SigV4 credential scope) and cluster
// name, and advances lazily (see simcore), so one Server holds tens of thousands of clusters.
type Server struct {
	creds     map[string]string
	delay     time.Duration
	statusLag time.Duration
	clock     simcore.Clock
	faults    *simcore.Faults
	account   string
	counters  simcore.Counters
	mux       *http.ServeMux
	caData    string
	keys      keyCache

	seed   maphash.Seed
	shards [64]shard

	reqPrefix string
	reqSeq    atomic.Uint64

	principals map[string]string
	backend    *simcore.Backend
	// served indexes, by backend name, the clusters a backend serves (a hint: the cluster's own
	// backend field decides).
	servedMu sync.RWMutex
	served   map[string]map[clusterKey]bool
}

type clusterKey struct{ region, name string }

type shard struct {
	mu sync.RWMutex
	m  map[clusterKey]*cluster
}

// New returns a Server configured by opts.
func New(opts Options) *Server {
	s := &Server{
		creds:     maps.Clone(opts.Credentials),
		delay:     opts.Delay,
		statusLag: max(opts.UpdateStatusLag, 0),
		clock:     opts.Clock,
		faults:    opts.Faults,
		account:   opts.AccountID,
		seed:      maphash.MakeSeed(),
		caData:    newCAData(),
		backend:   opts.Backend,
		served:    map[string]map[clusterKey]bool{},
	}
	if s.creds == nil {
		s.creds = map[string]string{DefaultAccessKeyID: DefaultSecretAccessKey}
	}
	switch {
	case s.delay == 0:
		s.delay = DefaultDelay
	case s.delay < 0:
		s.delay = 0
	}
	if s.clock == nil {
		s.clock = simcore.RealClock{}
	}
	if s.faults == nil {
		s.faults = &simcore.Faults{}
	}
	if s.account == "" {
		s.account = DefaultAccountID
	}
	s.principals = make(map[string]string, len(s.creds))
	for ak := range s.creds {
		s.principals[ak] = "arn:aws:iam::" + s.account + ":user/" + ak
	}
	if _, ok := s.creds[DefaultAccessKeyID]; ok {
		s.principals[DefaultAccessKeyID] = "arn:aws:iam::" + s.account + ":user/" + DefaultUserName
	}
	maps.Copy(s.principals, opts.Principals)
	for i := range s.shards {
		s.shards[i].m = make(map[clusterKey]*cluster)
	}
	var p [4]byte
	_, _ = rand.Read(p[:])
	s.reqPrefix = fmt.Sprintf("%x-0000-4000-8000-", p)
	s.routes()
	return s
}

// Counters returns the per-operation call counters (every call, including refused and
// fault-injected ones, is counted under its EKS operation name).
func (s *Server) Counters() *simcore.Counters { return &s.counters }

// Faults returns the fault injector; Set on it changes the faults of a running Server.
func (s *Server) Faults() *simcore.Faults { return s.faults }

// Cluster returns a deep copy of the cluster called name in region, with its node groups,
// tags and updates, as the API would show it now.
func (s *Server) Cluster(region, name string) (ClusterState, bool) {
	var now time.Time
	c, err := s.lockCluster(region, name, &now)
	if err != nil {
		return ClusterState{}, false
	}
	defer c.mu.Unlock()
	return c.snapshot(), true
}

// ClusterCount returns the number of clusters in every region, including those still being
// created or deleted.
func (s *Server) ClusterCount() int {
	now := s.clock.Now()
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		for _, c := range sh.m {
			c.mu.Lock()
			c.settle(now)
			if !c.gone {
				n++
			}
			c.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	return n
}

// ServeHTTP answers one EKS API call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// call is one authenticated request, handed to an operation.
type call struct {
	r         *http.Request
	body      []byte
	region    string
	accessKey string
	now       time.Time
}

type operation func(*call) (any, error)

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	for _, rt := range []struct {
		pattern, op string
		fn          operation
	}{
		{"POST /clusters", "CreateCluster", s.createCluster},
		{"GET /clusters", "ListClusters", s.listClusters},
		{"GET /clusters/{name}", "DescribeCluster", s.describeCluster},
		{"DELETE /clusters/{name}", "DeleteCluster", s.deleteCluster},
		{"POST /clusters/{name}/update-config", "UpdateClusterConfig", s.updateClusterConfig},
		{"POST /clusters/{name}/updates", "UpdateClusterVersion", s.updateClusterVersion},
		{"GET /clusters/{name}/updates", "ListUpdates", s.listUpdates},
		{"GET /clusters/{name}/updates/{id}", "DescribeUpdate", s.describeUpdate},
		{"POST /clusters/{name}/node-groups", "CreateNodegroup", s.createNodegroup},
		{"GET /clusters/{name}/node-groups", "ListNodegroups", s.listNodegroups},
		{"GET /clusters/{name}/node-groups/{ng}", "DescribeNodegroup", s.describeNodegroup},
		{"DELETE /clusters/{name}/node-groups/{ng}", "DeleteNodegroup", s.deleteNodegroup},
		{"POST /clusters/{name}/node-groups/{ng}/update-config", "UpdateNodegroupConfig", s.updateNodegroupConfig},
		{"POST /clusters/{name}/node-groups/{ng}/update-version", "UpdateNodegroupVersion", s.updateNodegroupVersion},
		{"POST /clusters/{name}/access-entries", "CreateAccessEntry", s.createAccessEntry},
		{"GET /clusters/{name}/access-entries", "ListAccessEntries", s.listAccessEntries},
		{"GET /clusters/{name}/access-entries/{principal}", "DescribeAccessEntry", s.describeAccessEntry},
		{"DELETE /clusters/{name}/access-entries/{principal}", "DeleteAccessEntry", s.deleteAccessEntry},
		{"POST /clusters/{name}/access-entries/{principal}/access-policies", "AssociateAccessPolicy", s.associateAccessPolicy},
		{"GET /clusters/{name}/access-entries/{principal}/access-policies", "ListAssociatedAccessPolicies", s.listAssociatedAccessPolicies},
		{"POST /tags/{arn...}", "TagResource", s.tagResource},
		{"DELETE /tags/{arn...}", "UntagResource", s.untagResource},
		{"GET /tags/{arn...}", "ListTagsForResource", s.listTagsForResource},
	} {
		s.mux.HandleFunc(rt.pattern, s.handler(rt.op, rt.fn))
	}
	s.mux.Handle(simcore.TokenReviewPrefix, simcore.TokenReviewHandler(s))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && isSTSCall(r) {
			s.serveSTS(w, r)
			return
		}
		s.counters.Inc("Unknown")
		writeError(w, s.requestID(), newAPIError(http.StatusNotFound, "UnknownOperationException",
			"The EKS simulator has no operation %s %s", r.Method, r.URL.Path))
	})
}

// handler wraps an operation with what every call gets: counting, authentication, fault
// injection and the REST-JSON response encoding.
func (s *Server) handler(op string, fn operation) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.counters.Inc(op)
		reqID := s.requestID()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			writeError(w, reqID, newAPIError(http.StatusBadRequest, "SerializationException", "reading request body: %v", err))
			return
		}
		region, accessKey, aerr := s.authenticate(r, body, sigService)
		if aerr != nil {
			writeError(w, reqID, aerr)
			return
		}
		fault, latency := s.faults.Decide(op)
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
		case simcore.FaultDrop:
			simcore.DropConnection(w)
			return
		case simcore.FaultThrottle:
			writeError(w, reqID, errThrottled)
			return
		case simcore.FaultServerError:
			writeError(w, reqID, errServer)
			return
		}

		out, err := fn(&call{r: r, body: body, region: region, accessKey: accessKey, now: s.clock.Now()})
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = newAPIError(http.StatusInternalServerError, "ServerException", "%s: %v", op, err)
			}
			writeError(w, reqID, ae)
			return
		}
		resp, err := json.Marshal(out)
		if err != nil {
			writeError(w, reqID, newAPIError(http.StatusInternalServerError, "ServerException", "%s: encoding response: %v", op, err))
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Amzn-Requestid", reqID)
		h.Set("Content-Length", strconv.Itoa(len(resp)))
		_, _ = w.Write(resp)
	}
}

func (s *Server) requestID() string {
	return s.reqPrefix + fmt.Sprintf("%012x", s.reqSeq.Add(1))
}

// decode reads the JSON body of c into v.
func (c *call) decode(v any) error {
	if len(c.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return newAPIError(http.StatusBadRequest, "SerializationException", "request body is not valid JSON for this operation: %v", err)
	}
	return nil
}

func (s *Server) shard(k clusterKey) *shard {
	return &s.shards[maphash.Comparable(s.seed, k)%uint64(len(s.shards))]
}

// lockCluster returns the cluster called name in region, locked and settled. It reads the
// clock into *now only once it holds the lock, so the calls on one cluster see time move
// forward in the order they are served: an update can never start, by its own timestamp,
// before the previous one has finished.
func (s *Server) lockCluster(region, name string, now *time.Time) (*cluster, error) {
	k := clusterKey{region, name}
	sh := s.shard(k)
	sh.mu.RLock()
	c := sh.m[k]
	sh.mu.RUnlock()
	if c == nil {
		return nil, clusterNotFound(name)
	}
	c.mu.Lock()
	*now = s.clock.Now()
	c.settle(*now)
	if c.gone {
		c.mu.Unlock()
		sh.mu.Lock()
		if sh.m[k] == c {
			delete(sh.m, k)
		}
		sh.mu.Unlock()
		return nil, clusterNotFound(name)
	}
	return c, nil
}

// newCAData returns a base64-encoded PEM self-signed CA certificate, shared by every
// simulated cluster: drover stores and parses it, nothing verifies a chain with it.
func newCAData() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("eks simulator: generating CA key: %v", err))
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubernetes"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(fmt.Sprintf("eks simulator: creating CA certificate: %v", err))
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
