package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/repository"
)

// httpError is an error that carries its own status.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func errorf(status int, msg string) error { return &httpError{status, msg} }

// statusOf maps an error to its HTTP status. It is the only place that
// does.
func statusOf(err error) int {
	var he *httpError
	var oe *oip.Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.status
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &oe), errors.Is(err, model.ErrInput):
		return http.StatusBadRequest
	case errors.Is(err, repository.ErrModelNotFound), errors.Is(err, repository.ErrVersionNotFound):
		return http.StatusNotFound
	case errors.Is(err, repository.ErrInvalidName), errors.Is(err, repository.ErrLoadFailed):
		return http.StatusBadRequest
	case errors.Is(err, repository.ErrNoRepository):
		return http.StatusConflict
	case errors.Is(err, dispatch.ErrAutodiffUnavailable), errors.Is(err, model.ErrUnsupported):
		return http.StatusNotImplemented // not built in: a gradient build, or an operator for these input types
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		return 499 // the client went away; nobody reads this
	}
	return http.StatusInternalServerError
}

// handler is an http.Handler that returns an error instead of writing one.
type handler func(w http.ResponseWriter, r *http.Request) error

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		writeError(w, r, err)
	}
}

func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	msg := err.Error()
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		msg = "request body is larger than the server's limit of " + formatBytes(mbe.Limit) + " (--max-body-bytes)"
	}
	if status == http.StatusGatewayTimeout {
		msg = "the request took longer than the server's --request-timeout: " + msg
	}
	if status >= 500 {
		slog.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
		if status == http.StatusInternalServerError {
			msg = "internal error: " + msg
		}
	}
	writeJSON(w, status, map[string]string{"error": msg})
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
