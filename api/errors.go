package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"

	"google.golang.org/grpc/codes"

	"github.com/quantserve/quantserve/batching"
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/repository"
)

// Code is what an error means to a client. CodeOf derives it from any
// error, in one place; HTTPStatus renders it for HTTP, GRPCCode for gRPC.
type Code uint8

const (
	CodeInternal         Code = iota // a bug: 500
	CodeInvalid                      // bad input: 400
	CodeUnauthenticated              // missing or wrong token: 401
	CodePermissionDenied             // the feature is switched off: 403
	CodeNotFound                     // unknown model, version or route: 404
	CodeMethodNotAllowed             // 405
	CodeBodyTimeout                  // the body did not arrive within the deadline: 408
	CodeConflict                     // the server's set-up does not allow it: 409
	CodeTooLarge                     // over a size limit: 413
	CodeCanceled                     // the client went away: 499
	CodeUnimplemented                // not built in: 501
	CodeUnavailable                  // overloaded or draining; retry: 503 with Retry-After
	CodeDeadline                     // ran past its deadline: 504
	CodeUnsupportedMedia             // a body in a content coding the server does not decode: 415
)

var httpStatus = [...]int{
	CodeInternal:         http.StatusInternalServerError,
	CodeInvalid:          http.StatusBadRequest,
	CodeUnauthenticated:  http.StatusUnauthorized,
	CodePermissionDenied: http.StatusForbidden,
	CodeNotFound:         http.StatusNotFound,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeBodyTimeout:      http.StatusRequestTimeout,
	CodeConflict:         http.StatusConflict,
	CodeTooLarge:         http.StatusRequestEntityTooLarge,
	CodeCanceled:         499, // nginx's "client closed request"; nobody reads it
	CodeUnimplemented:    http.StatusNotImplemented,
	CodeUnavailable:      http.StatusServiceUnavailable,
	CodeDeadline:         http.StatusGatewayTimeout,
	CodeUnsupportedMedia: http.StatusUnsupportedMediaType,
}

// HTTPStatus returns the HTTP status of the code.
func (c Code) HTTPStatus() int {
	if int(c) < len(httpStatus) {
		return httpStatus[c]
	}
	return http.StatusInternalServerError
}

var grpcCode = [...]codes.Code{
	CodeInternal:         codes.Internal,
	CodeInvalid:          codes.InvalidArgument,
	CodeUnauthenticated:  codes.Unauthenticated,
	CodePermissionDenied: codes.PermissionDenied,
	CodeNotFound:         codes.NotFound,
	CodeMethodNotAllowed: codes.Unimplemented,
	CodeBodyTimeout:      codes.DeadlineExceeded,
	CodeConflict:         codes.FailedPrecondition,
	CodeTooLarge:         codes.ResourceExhausted,
	CodeCanceled:         codes.Canceled,
	CodeUnimplemented:    codes.Unimplemented,
	CodeUnavailable:      codes.Unavailable,
	CodeDeadline:         codes.DeadlineExceeded,
	CodeUnsupportedMedia: codes.Unimplemented,
}

// GRPCCode returns the gRPC status code of the code.
func (c Code) GRPCCode() codes.Code {
	if int(c) < len(grpcCode) {
		return grpcCode[c]
	}
	return codes.Internal
}

// Error is an error raised by the api package itself, with its code.
type Error struct {
	Code Code
	Msg  string
	// RetryAfter is the number of seconds a client should wait before
	// retrying (CodeUnavailable); 0 means the default of 1.
	RetryAfter int
}

func (e *Error) Error() string { return e.Msg }

func errorf(code Code, msg string) error { return &Error{Code: code, Msg: msg} }

// PanicError is a panic recovered while serving a request.
type PanicError struct {
	Value any
	Site  string // the function and line that panicked
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic at %s: %v", e.Site, e.Value) }

// CodeOf maps an error to its code. It is the only place that does.
func CodeOf(err error) Code {
	var ae *Error
	var oe *oip.Error
	var mbe *http.MaxBytesError
	var pe *PanicError
	switch {
	case err == nil:
		return CodeInternal
	case errors.As(err, &ae):
		return ae.Code
	case errors.As(err, &pe):
		return CodeInternal
	case errors.As(err, &mbe):
		return CodeTooLarge
	case errors.As(err, &oe), errors.Is(err, model.ErrInput):
		return CodeInvalid
	case errors.Is(err, repository.ErrModelNotFound), errors.Is(err, repository.ErrVersionNotFound):
		return CodeNotFound
	case errors.Is(err, repository.ErrInvalidName), errors.Is(err, repository.ErrLoadFailed):
		return CodeInvalid
	case errors.Is(err, repository.ErrNoRepository):
		return CodeConflict
	case errors.Is(err, repository.ErrBusy), errors.Is(err, batching.ErrQueueFull):
		return CodeUnavailable
	case errors.Is(err, repository.ErrStillInFlight):
		return CodeDeadline
	case errors.Is(err, dispatch.ErrAutodiffUnavailable), errors.Is(err, model.ErrUnsupported): // a gradient build, or an operator for these input types
		return CodeUnimplemented
	case errors.Is(err, os.ErrDeadlineExceeded):
		return CodeBodyTimeout // a read deadline on the connection
	case errors.Is(err, context.DeadlineExceeded):
		return CodeDeadline
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	}
	return CodeInternal
}

// handler is a route's handler: it returns an error instead of writing
// one. The server's handle renders the error.
type handler func(w http.ResponseWriter, r *http.Request) error

// handle adapts h to an http.Handler whose errors writeError renders.
func (s *server) handle(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// writeError renders err as {"error": "..."} with the status of its code,
// logging internal errors (and, at debug level, other 5xx) to the server's
// logger.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := CodeOf(err)
	status := code.HTTPStatus()
	msg := errorMessage(code, err)
	if code == CodeUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(err)))
	}
	switch {
	case code == CodeInternal:
		var pe *PanicError
		if !errors.As(err, &pe) { // panics are logged by the recoverer, rate-limited
			s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
		}
	case status >= 500:
		// overload and timeouts come in floods: /metrics counts them
		s.log.DebugContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

// errorMessage is what a client is told of err: its text, with the limit
// or flag to look at where one was hit.
func errorMessage(code Code, err error) string {
	msg := err.Error()
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		msg = "request body is larger than the server's limit of " + formatBytes(mbe.Limit) + " (--max-body-bytes)"
	}
	switch code {
	case CodeDeadline:
		var ae *Error
		if !errors.As(err, &ae) && errors.Is(err, context.DeadlineExceeded) {
			msg = "the request took longer than the server's --request-timeout: " + msg
		}
	case CodeBodyTimeout:
		msg = "the request body did not arrive within the server's --request-timeout: " + msg
	case CodeInternal:
		msg = "internal error: " + msg
	}
	return msg
}

// retryAfter returns the seconds a client refused with CodeUnavailable
// should wait.
func retryAfter(err error) int {
	var ae *Error
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		return ae.RetryAfter
	}
	return 1
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal error: encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return itoa(n>>10) + " KiB"
	}
	return itoa(n) + " bytes"
}
