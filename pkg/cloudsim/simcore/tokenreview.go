package simcore

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Backend is a real Kubernetes API server that serves simulated clusters: their endpoint and CA
// in the simulated API are the backend's, and the backend's kube-apiserver is started with
// --authentication-token-webhook-config-file pointing at TokenReviewPath(Name) of a simulator
// (or of a TokenReviewHandler combining several), so it authenticates the providers' tokens
// the way the provider's own API server would. Several simulated clusters may share a backend;
// a token is accepted by a backend only for a cluster it serves.
type Backend struct {
	// Name identifies the backend in the TokenReview path; [a-z0-9-]+.
	Name string
	// Endpoint is the API server's URL, https://host:port.
	Endpoint string
	// CAPEM is the PEM of the CA that signed the API server's serving certificate.
	CAPEM []byte
}

// HostPort is the endpoint without its scheme, as GKE reports a cluster's endpoint.
func (b *Backend) HostPort() string {
	return strings.TrimPrefix(strings.TrimPrefix(b.Endpoint, "https://"), "http://")
}

// TokenReviewPrefix is the path under which simulators answer TokenReview requests; the rest of
// the path is the backend's name.
const TokenReviewPrefix = "/tokenreview/"

// TokenReviewPath is the TokenReview webhook path for the backend called name.
func TokenReviewPath(name string) string { return TokenReviewPrefix + name }

// ReviewedUser is the identity a valid token authenticates as.
type ReviewedUser struct {
	Username string              `json:"username"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// TokenReviewer checks bearer tokens for the clusters a backend serves.
type TokenReviewer interface {
	// ReviewToken reports whether token is of this reviewer's kind (recognized); if it is, the
	// user it authenticates as for a cluster served by backend, or why it is refused. The reason
	// must never contain the token.
	ReviewToken(backend, token string) (user ReviewedUser, recognized bool, reason string)
}

type tokenReview struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Spec       tokenReviewSpec   `json:"spec"`
	Status     tokenReviewStatus `json:"status"`
}

type tokenReviewSpec struct {
	Token     string   `json:"token,omitempty"`
	Audiences []string `json:"audiences,omitempty"`
}

type tokenReviewStatus struct {
	Authenticated bool          `json:"authenticated"`
	User          *ReviewedUser `json:"user,omitempty"`
	Audiences     []string      `json:"audiences,omitempty"`
	Error         string        `json:"error,omitempty"`
}

// TokenReviewHandler answers Kubernetes TokenReview requests (authentication.k8s.io/v1, JSON, as
// kube-apiserver's token webhook sends them) at TokenReviewPrefix+<backend>, asking each
// reviewer in turn: a token is accepted when any reviewer accepts it, else refused with the
// first refusal's reason. Refusals are answered 200 with
// authenticated false and a reason, as the webhook protocol wants; the API server then answers
// its client 401.
func TokenReviewHandler(reviewers ...TokenReviewer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		backend, ok := strings.CutPrefix(r.URL.Path, TokenReviewPrefix)
		if !ok || backend == "" || strings.Contains(backend, "/") {
			http.Error(w, "TokenReview path must be "+TokenReviewPrefix+"<backend>", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "TokenReview takes POST", http.StatusMethodNotAllowed)
			return
		}
		var in tokenReview
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(body, &in)
		}
		if err != nil || in.Kind != "TokenReview" {
			http.Error(w, "the body is not a TokenReview", http.StatusBadRequest)
			return
		}
		apiVersion := in.APIVersion
		if apiVersion == "" {
			apiVersion = "authentication.k8s.io/v1"
		}
		out := tokenReview{APIVersion: apiVersion, Kind: "TokenReview"}
		if user, recognized, reason := review(reviewers, backend, in.Spec.Token); !recognized {
			out.Status.Error = "the token is of no kind this simulator issues"
		} else if reason != "" {
			out.Status.Error = reason
		} else {
			out.Status = tokenReviewStatus{Authenticated: true, User: &user, Audiences: in.Spec.Audiences}
		}
		b, _ := json.Marshal(out)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}

// review asks every reviewer and accepts the token when one accepts it. Several simulators of
// one provider may serve clusters on the same backend (tests start one each): one refusing a
// token it did not issue must not hide the one that did. Otherwise the first refusal decides.
func review(reviewers []TokenReviewer, backend, token string) (user ReviewedUser, recognized bool, reason string) {
	for _, rv := range reviewers {
		u, ok, why := rv.ReviewToken(backend, token)
		switch {
		case !ok:
		case why == "":
			return u, true, ""
		case !recognized:
			recognized, reason = true, why
		}
	}
	return ReviewedUser{}, recognized, reason
}

// Reviewers is a set of TokenReviewers that changes while it serves (tests add a simulator
// each); it reviews as TokenReviewHandler does.
type Reviewers struct {
	mu sync.Mutex
	rs []TokenReviewer
}

// Add adds r; remove takes it out again.
func (s *Reviewers) Add(r TokenReviewer) (remove func()) {
	s.mu.Lock()
	s.rs = append(s.rs, r)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.rs = slices.DeleteFunc(s.rs, func(x TokenReviewer) bool { return x == r })
		s.mu.Unlock()
	}
}

// ReviewToken implements TokenReviewer.
func (s *Reviewers) ReviewToken(backend, token string) (ReviewedUser, bool, string) {
	s.mu.Lock()
	rs := slices.Clone(s.rs)
	s.mu.Unlock()
	return review(rs, backend, token)
}

// WebhookKubeconfig returns a kubeconfig for kube-apiserver's
// --authentication-token-webhook-config-file that sends TokenReviews to url (the full URL,
// TokenReviewPath included). caPEM is needed for an https url.
func WebhookKubeconfig(url string, caPEM []byte) []byte {
	cluster := "    server: " + url + "\n"
	if len(caPEM) > 0 {
		cluster += "    certificate-authority-data: " + b64(caPEM) + "\n"
	}
	return []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: simulator\n  cluster:\n" + cluster +
		"users:\n- name: apiserver\n  user: {}\ncontexts:\n- name: webhook\n  context:\n    cluster: simulator\n    user: apiserver\ncurrent-context: webhook\n")
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
