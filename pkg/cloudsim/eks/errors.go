package eks

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is an error answered in the EKS REST-JSON error shape: the code in the
// X-Amzn-ErrorType header (which the SDK reads first) and a JSON body with message and the
// names of the resources involved (which the SDK's typed exceptions carry).
type apiError struct {
	status  int
	code    string
	message string
	cluster string
	ng      string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// forCluster names the cluster (and node group) in the error body, as EKS does.
func (e *apiError) forCluster(cluster, ng string) *apiError {
	e.cluster, e.ng = cluster, ng
	return e
}

func newAPIError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func invalidParam(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidParameterException", format, args...)
}

func invalidRequest(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidRequestException", format, args...)
}

func resourceInUse(format string, args ...any) *apiError {
	return newAPIError(http.StatusConflict, "ResourceInUseException", format, args...)
}

func resourceNotFound(format string, args ...any) *apiError {
	return newAPIError(http.StatusNotFound, "ResourceNotFoundException", format, args...)
}

// The tagging operations use their own error shapes in the EKS model.
func badRequest(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "BadRequestException", format, args...)
}

func tagTargetNotFound(format string, args ...any) *apiError {
	return newAPIError(http.StatusNotFound, "NotFoundException", format, args...)
}

func clusterNotFound(name string) *apiError {
	return resourceNotFound("No cluster found for name: %s.", name).forCluster(name, "")
}

func nodegroupNotFound(cluster, ng string) *apiError {
	return resourceNotFound("No node group found for name: %s.", ng).forCluster(cluster, ng)
}

var (
	errThrottled = newAPIError(http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
	errServer    = newAPIError(http.StatusInternalServerError, "ServerException",
		"An internal error occurred. Try again (injected by the drover EKS simulator).")
	errMissingAuth = newAPIError(http.StatusForbidden, "MissingAuthenticationTokenException", "Missing Authentication Token")
	errUnknownKey  = newAPIError(http.StatusForbidden, "UnrecognizedClientException",
		"The security token included in the request is invalid.")
	errBadSignature = newAPIError(http.StatusForbidden, "InvalidSignatureException",
		"The request signature we calculated does not match the signature you provided. "+
			"Check your AWS Secret Access Key and signing method. Consult the service documentation for details.")
)

type errorBody struct {
	Message       string `json:"message"`
	ClusterName   string `json:"clusterName,omitempty"`
	NodegroupName string `json:"nodegroupName,omitempty"`
}

func writeError(w http.ResponseWriter, reqID string, e *apiError) {
	body, _ := json.Marshal(errorBody{Message: e.message, ClusterName: e.cluster, NodegroupName: e.ng})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Amzn-Requestid", reqID)
	h.Set("X-Amzn-Errortype", e.code)
	if e.status == http.StatusTooManyRequests {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}
