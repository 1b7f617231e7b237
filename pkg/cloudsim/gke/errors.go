package gke

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// apiError is a Google API error as the googleapis front end returns it: the google.rpc.Status
// fields plus the legacy "errors" list, whose reason googleapi.Error prints after the message.
type apiError struct {
	code    int
	status  string // google.rpc.Code name, e.g. FAILED_PRECONDITION
	message string
	details []any
	header  http.Header
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.code, e.status, e.message) }

// legacyReasons maps a status to the reason of the legacy "errors" item.
var legacyReasons = map[string]string{
	"INVALID_ARGUMENT":    "badRequest",
	"FAILED_PRECONDITION": "failedPrecondition",
	"NOT_FOUND":           "notFound",
	"ALREADY_EXISTS":      "alreadyExists",
	"PERMISSION_DENIED":   "forbidden",
	"UNAUTHENTICATED":     "authError",
	"RESOURCE_EXHAUSTED":  "rateLimitExceeded",
	"UNAVAILABLE":         "backendError",
	"INTERNAL":            "backendError",
}

func errorf(code int, status, format string, args ...any) *apiError {
	return &apiError{code: code, status: status, message: fmt.Sprintf(format, args...)}
}

func invalidArgument(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, "INVALID_ARGUMENT", format, args...)
}

func notFound(resource string) *apiError {
	return errorf(http.StatusNotFound, "NOT_FOUND", "Not found: %s.", resource)
}

func alreadyExists(resource string) *apiError {
	return errorf(http.StatusConflict, "ALREADY_EXISTS", "Already exists: %s.", resource)
}

func permissionDenied(permission, resource string) *apiError {
	return errorf(http.StatusForbidden, "PERMISSION_DENIED", "Required %q permission(s) for %q.", permission, resource)
}

// operationConflict is GKE's answer to a mutation while another operation runs on the cluster.
// Clients must retry it; it carries the ErrorInfo reason GKE sends so they can tell it apart from
// other FAILED_PRECONDITION errors such as a label fingerprint mismatch.
func operationConflict(opName string) *apiError {
	e := errorf(http.StatusBadRequest, "FAILED_PRECONDITION", "Cluster is running incompatible operation %s.", opName)
	e.details = []any{errorInfo("CLUSTER_ALREADY_HAS_OPERATION", "container.googleapis.com", nil)}
	return e
}

func errorInfo(reason, domain string, metadata map[string]string) map[string]any {
	d := map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": domain}
	if metadata != nil {
		d["metadata"] = metadata
	}
	return d
}

var errUnauthenticated = &apiError{
	code:   http.StatusUnauthorized,
	status: "UNAUTHENTICATED",
	message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie " +
		"or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
	header: http.Header{"Www-Authenticate": {`Bearer realm="https://accounts.google.com/"`}},
}

func throttled(project string) *apiError {
	consumer := "projects/" + project
	e := errorf(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED",
		"Quota exceeded for quota metric 'Requests' and limit 'Requests per minute' of service "+
			"'container.googleapis.com' for consumer '%s'.", consumer)
	e.details = []any{errorInfo("RATE_LIMIT_EXCEEDED", "googleapis.com", map[string]string{
		"service": "container.googleapis.com", "consumer": consumer, "quota_metric": "container.googleapis.com/requests",
	})}
	e.header = http.Header{"Retry-After": {"1"}}
	return e
}

func serverError(n int64) *apiError {
	if n%2 == 0 {
		return errorf(http.StatusServiceUnavailable, "UNAVAILABLE", "The service is currently unavailable.")
	}
	return errorf(http.StatusInternalServerError, "INTERNAL", "Internal error encountered.")
}

type errorItem struct {
	Message string `json:"message"`
	Domain  string `json:"domain"`
	Reason  string `json:"reason"`
}

type errorBody struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Errors  []errorItem `json:"errors,omitempty"`
	Status  string      `json:"status"`
	Details []any       `json:"details,omitempty"`
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	body := struct {
		Error errorBody `json:"error"`
	}{errorBody{
		Code:    e.code,
		Message: e.message,
		Errors:  []errorItem{{Message: e.message, Domain: "global", Reason: legacyReasons[e.status]}},
		Status:  e.status,
		Details: e.details,
	}}
	b, err := json.Marshal(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for k, v := range e.header {
		w.Header()[k] = slices.Clone(v) // e.header may be shared by every answer
	}
	writeJSON(w, e.code, b)
}

func writeJSON(w http.ResponseWriter, code int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// oauthError writes an error of the OAuth2 token endpoint (RFC 6749 §5.2), which is not shaped
// like the API errors.
func oauthError(w http.ResponseWriter, code int, errCode, description string) {
	b, _ := json.Marshal(map[string]string{"error": errCode, "error_description": description})
	writeJSON(w, code, b)
}
