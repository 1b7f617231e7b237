package aks

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is an ARM error response: an HTTP status plus the {"error":{"code","message"}} body
// that azcore turns into a *azcore.ResponseError with ErrorCode set to code.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func badRequest(code, format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, code, format, args...)
}

func invalidParameter(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, "InvalidParameter", format, args...)
}

func propertyChangeNotAllowed(prop string) *apiError {
	return badRequest("PropertyChangeNotAllowed", "Changing property '%s' is not allowed.", prop)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, errorResponse{Error: errorBody{Code: e.code, Message: e.message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "aks simulator: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

var contentTypeJSON = []string{"application/json; charset=utf-8"}
