package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/telemetry"
)

// Options configure the router.
type Options struct {
	Repository     *repository.Repository
	Version        string               // server version reported by GET /v2
	Kernels        string               // kernel table reported by GET /v2
	Exec           *gemm.Engine         // runs the tensor endpoints; nil means gemm.Default()
	AdminToken     string               // bearer token for load/unload; empty disables them
	Telemetry      *telemetry.Telemetry // nil means a new one for this router
	MaxInFlight    int                  // concurrent work requests; 0 means DefaultMaxInFlight
	RequestTimeout time.Duration        // deadline of a work request; 0 means DefaultRequestTimeout
	MaxBodyBytes   int64                // request body limit; 0 means DefaultMaxBodyBytes
	Logger         *slog.Logger
}

// modelPrefixes are the two forms of a model's path: its default version,
// and a named version.
var modelPrefixes = []string{"/v2/models/{model}", "/v2/models/{model}/versions/{version}"}

// DefaultMaxBodyBytes is the default request body limit (64 MiB).
const DefaultMaxBodyBytes = 64 << 20

// ServerName is reported by GET /v2.
const ServerName = "quantserve"

type server struct {
	repo       *repository.Repository
	version    string
	kernels    string
	exec       *gemm.Engine
	adminToken string
	tel        *telemetry.Telemetry
	inflight   chan struct{}
	timeout    time.Duration
	maxBody    int64
	log        *slog.Logger
}

// NewRouter returns the HTTP handler serving every route.
func NewRouter(opts Options) http.Handler {
	s := &server{repo: opts.Repository, version: opts.Version, kernels: opts.Kernels, maxBody: opts.MaxBodyBytes, log: opts.Logger}
	s.adminToken = opts.AdminToken
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	s.inflight = make(chan struct{}, opts.MaxInFlight)
	if s.timeout = opts.RequestTimeout; s.timeout <= 0 {
		s.timeout = DefaultRequestTimeout
	}
	if s.exec = opts.Exec; s.exec == nil {
		s.exec = gemm.Default()
	}
	if s.kernels == "" {
		s.kernels = s.exec.Table().String()
	}
	if s.tel = opts.Telemetry; s.tel == nil {
		tel, err := telemetry.New(s.version, s.kernels)
		if err != nil {
			s.log.Error("metrics disabled", "err", err)
		}
		s.tel = tel
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	r := chi.NewRouter()
	r.Use(middleware.RequestID, s.accessLog, recoverer)
	r.NotFound(handler(func(w http.ResponseWriter, r *http.Request) error {
		return errorf(http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	}).ServeHTTP)
	r.MethodNotAllowed(handler(func(w http.ResponseWriter, req *http.Request) error {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allowed = append(allowed, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return errorf(http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", req.Method, req.URL.Path, strings.Join(allowed, ", ")))
	}).ServeHTTP)

	r.Method(http.MethodGet, "/metrics", handler(s.metrics))
	r.Method(http.MethodGet, "/v2/health/live", handler(s.live))
	r.Method(http.MethodGet, "/v2/health/ready", handler(s.ready))
	r.Method(http.MethodGet, "/v2", handler(s.serverMetadata))
	for _, prefix := range modelPrefixes {
		r.Method(http.MethodGet, prefix, handler(s.modelMetadata))
		r.Method(http.MethodGet, prefix+"/ready", handler(s.modelReady))
		r.With(s.limitWork, s.limitBody).Method(http.MethodPost, prefix+"/infer", handler(s.infer))
	}
	s.mountAutodiff(r)
	r.Method(http.MethodPost, "/v2/repository/index", handler(s.repositoryIndex))
	r.Group(func(r chi.Router) {
		r.Use(s.requireAdmin)
		r.Method(http.MethodPost, "/v2/repository/models/{model}/load", handler(s.repositoryLoad))
		r.Method(http.MethodPost, "/v2/repository/models/{model}/unload", handler(s.repositoryUnload))
	})
	r.Group(func(r chi.Router) {
		r.Use(s.limitWork, s.limitBody)
		r.Method(http.MethodPost, "/v1/ops/quantize", handler(s.opQuantize))
		r.Method(http.MethodPost, "/v1/ops/dequantize", handler(s.opDequantize))
		r.Method(http.MethodPost, "/v1/ops/matmul", handler(s.opMatMul))
		r.Method(http.MethodPost, "/v1/ops/qmatmul", handler(s.opQMatMul))
	})
	return r
}

// limitBody caps the request body; reading past the cap fails with a
// *http.MaxBytesError, answered with 413.
func (s *server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.maxBody {
			writeError(w, r, &http.MaxBytesError{Limit: s.maxBody})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a panic in a handler into a 500 JSON error, logged with
// its stack; the server keeps serving.
func recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				slog.ErrorContext(r.Context(), "panic serving request", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				writeError(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		start := time.Now()
		next.ServeHTTP(ww, r)
		if s.tel != nil {
			s.tel.Request(r.Context(), chi.RouteContext(r.Context()).RoutePattern(), r.Method, ww.Status(), time.Since(start))
		}
		s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", ww.Status(),
			"bytes", ww.BytesWritten(), "duration", time.Since(start), "request_id", middleware.GetReqID(r.Context()),
			"remote", r.RemoteAddr)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
