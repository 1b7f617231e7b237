package eks

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// STS GetCallerIdentity, and EKS bearer tokens built from it.
//
// An EKS token is "k8s-aws-v1." + base64url(presigned GetCallerIdentity URL), signed with the
// header x-k8s-aws-id: <cluster name>. The header is not in the URL: the cluster's
// authenticator adds its own cluster name when it checks the URL, so a token signed for another
// cluster fails the signature. The URL is valid for 15 minutes after its X-Amz-Date, whatever
// X-Amz-Expires says (aws-iam-authenticator sets it to 60 for old servers).

const (
	// TokenPrefix starts every EKS bearer token.
	TokenPrefix = "k8s-aws-v1."
	// ClusterIDHeader is the signed header naming the cluster a token is for.
	ClusterIDHeader = "x-k8s-aws-id"
	// TokenLifetime is how long after signing a token is accepted.
	TokenLifetime = 15 * time.Minute

	stsService = "sts"
	stsXMLNS   = "https://sts.amazonaws.com/doc/2011-06-15/"
)

// emptySHA256 is the payload hash of a presigned GET.
var emptySHA256 = func() string { s := sha256.Sum256(nil); return hex.EncodeToString(s[:]) }()

// isSTSCall reports whether a request to "/" is an STS Query API call.
func isSTSCall(r *http.Request) bool {
	if r.URL.Query().Has("Action") {
		return true
	}
	return r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded")
}

type stsError struct {
	status        int
	code, message string
}

// serveSTS answers STS GetCallerIdentity, signed either in the Authorization header (the SDK's
// sts client) or in the query (a presigned URL, as an EKS token carries).
func (s *Server) serveSTS(w http.ResponseWriter, r *http.Request) {
	s.counters.Inc("GetCallerIdentity")
	reqID := s.requestID()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeSTSError(w, r, reqID, stsError{http.StatusBadRequest, "InvalidRequest", "reading the request body failed"})
		return
	}
	params := r.URL.Query()
	if r.Method == http.MethodPost {
		form, _ := url.ParseQuery(string(body))
		for k, v := range form {
			params[k] = v
		}
	}
	if a := params.Get("Action"); a != "GetCallerIdentity" {
		writeSTSError(w, r, reqID, stsError{http.StatusBadRequest, "InvalidAction", fmt.Sprintf("Could not find operation %s for version %s", a, params.Get("Version"))})
		return
	}
	var accessKey string
	if r.Header.Get("Authorization") != "" {
		_, ak, aerr := s.authenticate(r, body, stsService)
		if aerr != nil {
			writeSTSError(w, r, reqID, stsError{aerr.status, aerr.code, aerr.message})
			return
		}
		accessKey = ak
	} else {
		ak, _, serr := s.verifyPresigned(r, s.clock.Now())
		if serr != nil {
			writeSTSError(w, r, reqID, *serr)
			return
		}
		accessKey = ak
	}
	arn := s.principals[accessKey]
	result := callerIdentity{Arn: arn, UserID: userID(accessKey), Account: s.account}
	if wantsJSON(r) {
		var out struct {
			GetCallerIdentityResponse struct {
				GetCallerIdentityResult callerIdentity
				ResponseMetadata        struct{ RequestId string }
			}
		}
		out.GetCallerIdentityResponse.GetCallerIdentityResult = result
		out.GetCallerIdentityResponse.ResponseMetadata.RequestId = reqID
		b, _ := json.Marshal(out)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Requestid", reqID)
		_, _ = w.Write(b)
		return
	}
	out := struct {
		XMLName xml.Name       `xml:"GetCallerIdentityResponse"`
		XMLNS   string         `xml:"xmlns,attr"`
		Result  callerIdentity `xml:"GetCallerIdentityResult"`
		Meta    struct {
			RequestID string `xml:"RequestId"`
		} `xml:"ResponseMetadata"`
	}{XMLNS: stsXMLNS, Result: result}
	out.Meta.RequestID = reqID
	b, _ := xml.Marshal(out)
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", reqID)
	_, _ = w.Write(b)
}

type callerIdentity struct {
	Arn     string `xml:"Arn" json:"Arn"`
	UserID  string `xml:"UserId" json:"UserId"`
	Account string `xml:"Account" json:"Account"`
}

func userID(accessKey string) string {
	return "AIDA" + strings.ToUpper(stableHex("user/"+accessKey, 17))
}

func wantsJSON(r *http.Request) bool { return strings.Contains(r.Header.Get("Accept"), "json") }

func writeSTSError(w http.ResponseWriter, r *http.Request, reqID string, e stsError) {
	w.Header().Set("X-Amzn-Requestid", reqID)
	typ := "Sender"
	if e.status >= 500 {
		typ = "Receiver"
	}
	if wantsJSON(r) {
		b, _ := json.Marshal(map[string]any{"Error": map[string]string{"Type": typ, "Code": e.code, "Message": e.message}, "RequestId": reqID})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(e.status)
		_, _ = w.Write(b)
		return
	}
	out := struct {
		XMLName xml.Name `xml:"ErrorResponse"`
		XMLNS   string   `xml:"xmlns,attr"`
		Error   struct {
			Type    string `xml:"Type"`
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		} `xml:"Error"`
		RequestID string `xml:"RequestId"`
	}{XMLNS: stsXMLNS, RequestID: reqID}
	out.Error.Type, out.Error.Code, out.Error.Message = typ, e.code, e.message
	b, _ := xml.Marshal(out)
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}

// verifyPresigned checks a query-signed (presigned) STS request against the keys the simulator
// knows and the 15-minute validity of a presigned GetCallerIdentity, on the simulator's clock.
// It returns the access key that signed it and the signing time.
func (s *Server) verifyPresigned(r *http.Request, now time.Time) (string, time.Time, *stsError) {
	p, err := s.parsePresigned(r)
	if err != nil {
		return "", time.Time{}, err
	}
	if !p.signatureValid() {
		return "", time.Time{}, errPresignedSignature
	}
	if err := p.current(now); err != nil {
		return "", time.Time{}, err
	}
	return p.a.accessKey, p.signedAt, nil
}

var errPresignedSignature = &stsError{http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."}

// presigned is a presigned STS request whose form, key and date have been checked; what is left
// is its signature, which covers headers that are not in the URL (an EKS token's cluster name),
// and its age.
type presigned struct {
	r        *http.Request
	query    string // canonical, without X-Amz-Signature
	a        sigV4Auth
	v        *verifier
	amzDate  string
	signedAt time.Time
}

func (s *Server) parsePresigned(r *http.Request) (*presigned, *stsError) {
	q := r.URL.Query()
	deny := func(code, format string, args ...any) (*presigned, *stsError) {
		return nil, &stsError{http.StatusForbidden, code, fmt.Sprintf(format, args...)}
	}
	if q.Get("X-Amz-Algorithm") != sigAlgorithm {
		return deny("IncompleteSignature", "X-Amz-Algorithm must be %s", sigAlgorithm)
	}
	scope := strings.Split(q.Get("X-Amz-Credential"), "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return deny("IncompleteSignature", "X-Amz-Credential is not of the form AKID/date/region/service/aws4_request")
	}
	a := sigV4Auth{accessKey: scope[0], date: scope[1], region: scope[2], service: scope[3], signature: q.Get("X-Amz-Signature")}
	a.signedHeaders = strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	if a.service != stsService {
		return deny("SignatureDoesNotMatch", "Credential should be scoped to correct service: '%s'.", stsService)
	}
	if !slices.Contains(a.signedHeaders, "host") {
		return deny("SignatureDoesNotMatch", "'Host' must be a signed header.")
	}
	if _, err := strconv.Atoi(q.Get("X-Amz-Expires")); err != nil {
		return deny("AuthorizationQueryParametersError", "X-Amz-Expires must be a number of seconds")
	}
	amzDate := q.Get("X-Amz-Date")
	signedAt, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || amzDate[:8] != a.date {
		return deny("SignatureDoesNotMatch", "X-Amz-Date is missing or does not match the credential scope")
	}
	secret, ok := s.creds[a.accessKey]
	if !ok {
		return deny("InvalidClientTokenId", "The security token included in the request is invalid.")
	}
	q.Del("X-Amz-Signature")
	return &presigned{r: r, query: canonicalQuery(q.Encode()), a: a, v: newVerifier(s.keys.get(a.accessKey, secret, a.date, a.region, a.service)),
		amzDate: amzDate, signedAt: signedAt}, nil
}

// signatureValid checks the signature against the request's current headers. Presigned URLs
// sign either the empty payload or none.
func (p *presigned) signatureValid() bool {
	return p.v.valid(p.r, p.query, p.a, p.amzDate, emptySHA256) || p.v.valid(p.r, p.query, p.a, p.amzDate, "UNSIGNED-PAYLOAD")
}

// current refuses a presigned GetCallerIdentity signed more than 15 minutes from now.
func (p *presigned) current(now time.Time) *stsError {
	f := "20060102T150405Z"
	if now.After(p.signedAt.Add(TokenLifetime)) {
		return &stsError{http.StatusForbidden, "ExpiredToken", fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 15 min.)", p.amzDate, now.UTC().Format(f), now.UTC().Format(f))}
	}
	if p.signedAt.After(now.Add(TokenLifetime)) {
		return &stsError{http.StatusForbidden, "SignatureDoesNotMatch", fmt.Sprintf("Signature not yet current: %s is still later than %s (%s + 15 min.)", p.amzDate, now.UTC().Format(f), now.UTC().Format(f))}
	}
	return nil
}

// ReviewToken implements simcore.TokenReviewer for EKS tokens, as aws-iam-authenticator in the
// cluster's control plane does: the presigned URL must be a GetCallerIdentity signed by a known
// key less than 15 minutes ago (simulator clock) with x-k8s-aws-id naming a cluster the backend
// serves, and the cluster must have an access entry for the key's principal. The user is the
// entry's username and Kubernetes groups (plus system:masters for ClusterAdminPolicy at
// cluster scope).
func (s *Server) ReviewToken(backend, token string) (simcore.ReviewedUser, bool, string) {
	raw, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return simcore.ReviewedUser{}, false, ""
	}
	refuse := func(reason string) (simcore.ReviewedUser, bool, string) {
		return simcore.ReviewedUser{}, true, reason
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(raw, "="))
	if err != nil {
		return refuse("the EKS token is not base64url")
	}
	u, err := url.Parse(string(b))
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return refuse("the EKS token is not a presigned STS URL")
	}
	q := u.Query()
	if q.Get("Action") != "GetCallerIdentity" {
		return refuse("the EKS token is not a presigned GetCallerIdentity")
	}
	if !slices.Contains(strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), ClusterIDHeader) {
		return refuse("the EKS token does not sign " + ClusterIDHeader)
	}
	// The token's cluster is only in its signature: check everything else once, then the
	// signature with each cluster name the backend serves (one hash and HMAC per name).
	r := &http.Request{Method: http.MethodGet, URL: u, Host: u.Host, Header: http.Header{}}
	p, serr := s.parsePresigned(r)
	if serr != nil {
		return refuse("STS refused the token: " + serr.code + ": " + serr.message)
	}
	s.servedMu.RLock()
	names := make(map[string]bool, len(s.served[backend]))
	for k := range s.served[backend] {
		names[k.name] = true
	}
	s.servedMu.RUnlock()
	if len(names) == 0 {
		return refuse("backend " + backend + " serves no EKS cluster")
	}
	for name := range names {
		r.Header.Set(ClusterIDHeader, name)
		if !p.signatureValid() {
			continue
		}
		now := s.clock.Now()
		if serr := p.current(now); serr != nil {
			return refuse("STS refused the token: " + serr.code + ": " + serr.message)
		}
		return s.reviewFor(backend, name, p.a.accessKey, now)
	}
	return refuse("STS refused the token: its signature does not match for any cluster this API server serves (a token for another cluster, or forged)")
}

// reviewFor finishes a review of a token validly signed by accessKey for the cluster called name.
func (s *Server) reviewFor(backend, name, accessKey string, now time.Time) (simcore.ReviewedUser, bool, string) {
	s.servedMu.RLock()
	var keys []clusterKey
	for k := range s.served[backend] {
		if k.name == name {
			keys = append(keys, k)
		}
	}
	s.servedMu.RUnlock()
	principal := s.principals[accessKey]
	for _, k := range keys {
		var t time.Time
		cl, err := s.lockCluster(k.region, k.name, &t)
		if err != nil {
			continue
		}
		if cl.backend == nil || cl.backend.Name != backend || cl.status == StatusCreating {
			cl.mu.Unlock()
			continue
		}
		if cl.authMode == AuthModeConfigMap {
			cl.mu.Unlock()
			return simcore.ReviewedUser{}, true, "cluster " + name + " uses CONFIG_MAP authentication, which the simulator does not serve"
		}
		e := cl.access[principal]
		if e == nil {
			cl.mu.Unlock()
			return simcore.ReviewedUser{}, true, "cluster " + name + " has no access entry for " + principal
		}
		groups := slices.Clone(e.groups)
		for _, p := range e.policies {
			if p.policyARN == ClusterAdminPolicy && p.scopeType == "cluster" {
				groups = append(groups, MastersGroup)
			}
		}
		user := simcore.ReviewedUser{
			Username: strings.ReplaceAll(e.username, "{{SessionName}}", accessKey),
			UID:      "aws-iam-authenticator:" + s.account + ":" + userID(accessKey),
			Groups:   groups,
			Extra: map[string][]string{
				"arn": {principal}, "canonicalArn": {principal}, "accessKeyId": {accessKey},
			},
		}
		cl.mu.Unlock()
		return user, true, ""
	}
	return simcore.ReviewedUser{}, true, "backend " + backend + " serves no active cluster " + name
}
