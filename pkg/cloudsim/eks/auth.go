package eks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/smithy-go/encoding/httpbinding"
)

// The simulator verifies AWS Signature Version 4 itself, from the SignedHeaders the client
// lists, rather than re-signing with the SDK's signer: that way any SigV4 client (the SDK,
// the AWS CLI, curl --aws-sigv4) is checked by the same rules AWS applies.

const (
	sigAlgorithm = "AWS4-HMAC-SHA256"
	sigService   = "eks"
)

func incompleteSignature(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "IncompleteSignatureException", format, args...)
}

type sigV4Auth struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

// parseAuthorization splits "AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/SERVICE/aws4_request,
// SignedHeaders=a;b, Signature=hex".
func parseAuthorization(h string) (sigV4Auth, *apiError) {
	var a sigV4Auth
	rest, ok := strings.CutPrefix(h, sigAlgorithm+" ")
	if !ok {
		return a, incompleteSignature("Authorization header must use %s", sigAlgorithm)
	}
	var cred, signed string
	for part := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		case "Signature":
			a.signature = v
		}
	}
	if cred == "" || signed == "" || a.signature == "" {
		return a, incompleteSignature("Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters")
	}
	scope := strings.Split(cred, "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return a, incompleteSignature("Credential %q is not of the form AKID/date/region/service/aws4_request", cred)
	}
	a.accessKey, a.date, a.region, a.service = scope[0], scope[1], scope[2], scope[3]
	a.signedHeaders = strings.Split(signed, ";")
	return a, nil
}

// authenticate verifies r's signature and returns the region of its credential scope, which
// is the region the request is about (EKS state is regional), and the access key that signed it.
func (s *Server) authenticate(r *http.Request, body []byte, service string) (string, string, *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", "", errMissingAuth
	}
	a, err := parseAuthorization(h)
	if err != nil {
		return "", "", err
	}
	secret, ok := s.creds[a.accessKey]
	if !ok {
		return "", "", errUnknownKey
	}
	if a.service != service {
		return "", "", newAPIError(http.StatusForbidden, "InvalidSignatureException",
			"Credential should be scoped to correct service: '%s'.", service)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if len(amzDate) != len("20060102T150405Z") || amzDate[:8] != a.date {
		return "", "", newAPIError(http.StatusForbidden, "InvalidSignatureException",
			"Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s'", a.date, amzDate)
	}
	if !slices.Contains(a.signedHeaders, "host") {
		return "", "", newAPIError(http.StatusForbidden, "InvalidSignatureException", "'Host' must be a signed header.")
	}

	payloadHash := r.Header.Get("X-Amz-Content-Sha256")
	if payloadHash == "" || payloadHash == "UNSIGNED-PAYLOAD" {
		sum := sha256.Sum256(body)
		payloadHash = hex.EncodeToString(sum[:])
	}
	if !signatureValid(r, canonicalQuery(r.URL.RawQuery), a, s.keys.get(a.accessKey, secret, a.date, a.region, a.service), amzDate, payloadHash) {
		return "", "", errBadSignature
	}
	return a.region, a.accessKey, nil
}

// signatureValid recomputes the SigV4 signature of r from its canonical request (with the given
// canonical query and payload hash) and compares it with a's, in constant time.
func signatureValid(r *http.Request, query string, a sigV4Auth, key []byte, amzDate, payloadHash string) bool {
	return newVerifier(key).valid(r, query, a, amzDate, payloadHash)
}

// verifier checks signatures made with one signing key, reusing its buffers and HMAC state: a
// token review checks one token against every cluster name a backend serves.
type verifier struct {
	mac hash.Hash
	buf []byte
}

func newVerifier(key []byte) *verifier {
	return &verifier{mac: hmac.New(sha256.New, key), buf: make([]byte, 0, 1024)}
}

func (v *verifier) valid(r *http.Request, query string, a sigV4Auth, amzDate, payloadHash string) bool {
	b := append(v.buf[:0], r.Method...)
	b = append(b, '\n')
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b = append(b, httpbinding.EscapePath(path, false)...)
	b = append(b, '\n')
	b = append(b, query...)
	b = append(b, '\n')
	for _, name := range a.signedHeaders {
		b = append(b, name...)
		b = append(b, ':')
		switch name {
		case "host":
			b = append(b, r.Host...)
		case "content-length":
			if v := r.Header.Get("Content-Length"); v != "" {
				b = append(b, v...)
			} else {
				b = strconv.AppendInt(b, r.ContentLength, 10)
			}
		default:
			for i, v := range r.Header.Values(name) {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, strings.Join(strings.Fields(v), " ")...)
			}
		}
		b = append(b, '\n')
	}
	b = append(b, '\n')
	for i, name := range a.signedHeaders {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, name...)
	}
	b = append(b, '\n')
	b = append(b, payloadHash...)
	crSum := sha256.Sum256(b)

	b = append(b[:0], sigAlgorithm+"\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	b = append(b, a.date...)
	b = append(b, '/')
	b = append(b, a.region...)
	b = append(b, '/')
	b = append(b, a.service...)
	b = append(b, "/aws4_request\n"...)
	b = hex.AppendEncode(b, crSum[:])
	v.mac.Reset()
	v.mac.Write(b)
	var sum [sha256.Size]byte
	var want [2 * sha256.Size]byte
	hex.Encode(want[:], v.mac.Sum(sum[:0]))
	v.buf = b
	return hmac.Equal(want[:], []byte(a.signature))
}

// canonicalQuery sorts the query by encoded key, then value, encoding both as SigV4 wants
// (RFC 3986 unreserved characters only, a space as %20).
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, _ := url.ParseQuery(raw)
	type pair struct{ k, v string }
	pairs := make([]pair, 0, len(q))
	for k, vs := range q {
		ek := sigEscape(k)
		for _, v := range vs {
			pairs = append(pairs, pair{ek, sigEscape(v)})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if c := strings.Compare(a.k, b.k); c != 0 {
			return c
		}
		return strings.Compare(a.v, b.v)
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

func sigEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// keyCache memoises derived signing keys: four HMACs per request are most of the cost of
// verifying a signature, and a key only changes per access key, day and region.
type keyCache struct {
	mu   sync.Mutex
	keys map[string][]byte
}

func (c *keyCache) get(accessKey, secret, date, region, service string) []byte {
	id := accessKey + "/" + date + "/" + region + "/" + service
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.keys[id]; ok {
		return k
	}
	if c.keys == nil || len(c.keys) > 1024 {
		c.keys = make(map[string][]byte)
	}
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	k = hmacSHA256(k, "aws4_request")
	c.keys[id] = k
	return k
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
