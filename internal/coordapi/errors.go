package coordapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/semaphore"
	"github.com/coordkit/coordkit/session"
)

// The stable error codes of the API: the "code" of an error answer and of
// an "error" event. docs/api.md and openapi.json list them.
const (
	CodeBadRequest    = "bad_request" // malformed body, unknown field, bad name, prefix, limit or mode
	CodeUnsupported   = "unsupported_media_type"
	CodeUnauthorized  = "unauthorized"   // missing or wrong API token
	CodeForbidden     = "forbidden"      // no token configured and the Host is not loopback
	CodeNotFound      = "not_found"      // no such route
	CodeBusy          = "busy"           // try: held elsewhere, or no free slot
	CodeTimeout       = "timeout"        // not acquired within timeout
	CodeNameInUse     = "name_in_use"    // the name is another kind of primitive's
	CodeLimitMismatch = "limit_mismatch" // a semaphore's stored limit differs
	CodeSessionLost   = "session_lost"   // the agent's session ended while waiting
	CodeUnavailable   = "unavailable"    // etcd did not answer
	CodeShuttingDown  = "shutting_down"  // the agent is closing
)

// errorBody is every error answer: {"error":{"code":...,"message":...}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// codeOf maps an error of the library (or of the agent's context) to its
// code and the HTTP status it has when it is known before the stream starts.
func codeOf(err error) (string, int) {
	switch {
	case errors.Is(err, errShuttingDown), errors.Is(err, session.ErrClosed):
		return CodeShuttingDown, http.StatusServiceUnavailable
	case errors.Is(err, lock.ErrLocked), errors.Is(err, semaphore.ErrNoSlot):
		return CodeBusy, http.StatusConflict
	case errors.Is(err, errNoAnswer):
		return CodeUnavailable, http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout, http.StatusRequestTimeout
	case errors.Is(err, session.ErrNameInUse):
		return CodeNameInUse, http.StatusConflict
	case errors.Is(err, semaphore.ErrLimitMismatch):
		return CodeLimitMismatch, http.StatusConflict
	case errors.Is(err, session.ErrInvalidName), errors.Is(err, primitive.ErrInvalid),
		errors.Is(err, semaphore.ErrInvalid), errors.Is(err, session.ErrBadTTL),
		errors.Is(err, election.ErrBadPolicy), errors.Is(err, errBadRequest):
		return CodeBadRequest, http.StatusBadRequest
	case errors.Is(err, session.ErrGoneWhileWaiting), errors.Is(err, session.ErrExpired), errors.Is(err, session.ErrRevoked):
		return CodeSessionLost, http.StatusServiceUnavailable
	}
	return CodeUnavailable, http.StatusServiceUnavailable
}

// Errors of the agent itself.
var (
	// errBadRequest is wrapped by the errors of a request the agent refuses
	// before asking the library.
	errBadRequest = errors.New("coordapi: bad request")
	// errShuttingDown is the cause of every context the agent's Close ends.
	errShuttingDown = errors.New("coordapi: agent shutting down")
	// errNoAnswer: a read ran out of the request timeout, not of the
	// client's patience: etcd did not answer (unavailable, not timeout).
	errNoAnswer = errors.New("coordapi: etcd did not answer")
)
