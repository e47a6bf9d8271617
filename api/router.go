package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/quantserve/quantserve/api/reference"
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
	// MaxInflightBytes bounds the bytes work requests in flight hold
	// (bodies and decoded tensors); 0 means DefaultMaxInflightBytes.
	MaxInflightBytes int64
	// MaxRequestBytes bounds what one work request may hold of that
	// budget: its body, decoded tensors, every value the model makes
	// for it and its encoded answer; 0 means all of MaxInflightBytes.
	MaxRequestBytes int64
	// IOTimeout bounds the receiving of a work request's body, and the
	// sending of its answer; 0 means RequestTimeout.
	IOTimeout time.Duration
	// Draining, when it returns true, makes readiness answer 503 and every
	// response close its connection, so clients and load balancers move
	// away while requests are still served (a graceful shutdown's first
	// phase). nil means never.
	Draining func() bool
	Logger   *slog.Logger
	// RequestLogRate bounds the request lines logged a second for
	// requests that succeed (a failed request's line is always
	// logged; probes log at debug level, unbounded): 0 means
	// DefaultRequestLogRate, negative means every request's.
	RequestLogRate int
	// TracerProvider receives each request's spans (its parent taken
	// from a W3C traceparent); nil gives spans trace ids for the log but
	// records none.
	TracerProvider trace.TracerProvider
	// Propagator reads a request's trace context from its headers or
	// metadata; nil means W3C trace context (traceparent).
	Propagator propagation.TextMapPropagator
	// CORSOrigins are the origins browsers may call from (exact, or "*"
	// for any); empty disables CORS.
	CORSOrigins []string
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
	ioTimeout  time.Duration
	maxBody    int64
	budget     *budget
	draining   func() bool
	panics     panicLog
	log        *slog.Logger
	tracer     trace.Tracer
	prop       propagation.TextMapPropagator
	propHeader []string // the header names prop reads
	propMD     []string // their gRPC metadata keys
	logRate    *lineRate
	cors       *corsPolicy
}

// NewRouter returns the HTTP handler serving every route. (New gives a
// server that also serves gRPC with the same limits.)
func NewRouter(opts Options) http.Handler { return newServer(opts).routes() }

func newServer(opts Options) *server { return buildServer(opts, telemetry.New) }

// buildServer is newServer with the constructor of the server's own
// telemetry, used when opts has none.
func buildServer(opts Options, newTelemetry func(version, kernels string) (*telemetry.Telemetry, error)) *server {
	// The logger first: everything after may log.
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &server{repo: opts.Repository, version: opts.Version, kernels: opts.Kernels, maxBody: opts.MaxBodyBytes, log: log, draining: opts.Draining}
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
		tel, err := newTelemetry(s.version, s.kernels)
		if err != nil {
			s.log.Error("metrics disabled", "err", err)
		}
		s.tel = tel
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.ioTimeout = opts.IOTimeout; s.ioTimeout <= 0 {
		s.ioTimeout = s.timeout
	}
	s.budget = &budget{limit: opts.MaxInflightBytes, perRequest: opts.MaxRequestBytes}
	if s.budget.limit <= 0 {
		s.budget.limit = DefaultMaxInflightBytes
	}
	if s.budget.perRequest <= 0 || s.budget.perRequest > s.budget.limit {
		s.budget.perRequest = s.budget.limit
	}
	if s.draining == nil {
		s.draining = func() bool { return false }
	}
	s.tracer = tracerOf(opts.TracerProvider)
	s.prop = propagatorOf(opts.Propagator)
	s.propHeader, s.propMD = propFields(s.prop)
	s.logRate = newLineRate(opts.RequestLogRate)
	s.cors = newCORSPolicy(opts.CORSOrigins)
	s.observeBatching()
	s.observeModels()
	return s
}

func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.observe, s.corsHandler, s.drain, s.recoverer)
	r.Use(middleware.StripSlashes) // "/v2/" (the OIP spec's path) is "/v2"
	r.NotFound(s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return errorf(CodeNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	}).ServeHTTP)
	r.MethodNotAllowed(s.handle(func(w http.ResponseWriter, req *http.Request) error {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allowed = append(allowed, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return errorf(CodeMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", req.Method, req.URL.Path, strings.Join(allowed, ", ")))
	}).ServeHTTP)

	r.Method(http.MethodGet, "/metrics", s.handle(s.metrics))
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		r.Method(m, "/v2/health/live", s.handle(s.live))
		r.Method(m, "/v2/health/ready", s.handle(s.ready))
	}
	r.Method(http.MethodGet, "/v2", s.handle(s.serverMetadata))
	r.Method(http.MethodGet, "/v2/models/stats", s.handle(s.stats))
	for _, prefix := range modelPrefixes {
		r.Method(http.MethodGet, prefix, s.handle(s.modelMetadata))
		r.Method(http.MethodGet, prefix+"/ready", s.handle(s.modelReady))
		r.Method(http.MethodGet, prefix+"/stats", s.handle(s.stats))
		r.Method(http.MethodGet, prefix+"/config", s.handle(s.modelConfig))
		r.Method(http.MethodPost, prefix+"/infer", s.work(s.infer))
	}
	s.mountAutodiff(r)
	r.Method(http.MethodPost, "/v2/repository/index", s.handle(s.repositoryIndex))
	r.Method(http.MethodGet, "/openapi.yaml", s.handle(s.openapiDocument))
	r.Method(http.MethodGet, "/docs", s.handle(s.apiReference))
	r.Method(http.MethodGet, "/docs/"+reference.ScriptName, s.handle(s.apiReferenceScript))
	r.Group(func(r chi.Router) {
		r.Use(s.requireAdmin)
		r.Method(http.MethodPost, "/v2/repository/models/{model}/load", s.handle(s.repositoryLoad))
		r.Method(http.MethodPost, "/v2/repository/models/{model}/unload", s.handle(s.repositoryUnload))
	})
	r.Method(http.MethodPost, "/v1/ops/quantize", s.work(s.opQuantize))
	r.Method(http.MethodPost, "/v1/ops/dequantize", s.work(s.opDequantize))
	r.Method(http.MethodPost, "/v1/ops/matmul", s.work(s.opMatMul))
	r.Method(http.MethodPost, "/v1/ops/qmatmul", s.work(s.opQMatMul))
	return r
}

// drain closes every connection after its response while the server
// drains, so keep-alive clients reconnect (to another replica) instead of
// sending on a connection about to be closed.
func (s *server) drain(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a panic in a handler (or an operator it runs) into a 500
// JSON error. Each panic is counted in /metrics by site; its stack is
// logged at most once a minute per site. The server keeps serving.
func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.writeError(w, r, s.panicked(r.Context(), slog.String("path", r.URL.Path), p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// panicked records a recovered panic p of a request (where: its path or
// gRPC method): counted in /metrics by site, its stack logged at most once
// a minute per site. It returns the request's 500 error.
func (s *server) panicked(ctx context.Context, where slog.Attr, p any) error {
	site := panicSite()
	s.tel.Panic(ctx, site)
	if n, ok := s.panics.allow(site, time.Now()); ok {
		s.log.ErrorContext(ctx, "panic serving request", where, "site", site, "panic", p,
			"suppressed", n, "stack", string(debug.Stack()))
	}
	return &PanicError{Value: p, Site: site}
}

// panicLog remembers when each panic site last logged its stack.
type panicLog struct {
	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int // panics not logged since
}

// panicLogEvery is how often one site may log a stack.
const panicLogEvery = time.Minute

// allow reports whether site may log now, and how many of its panics were
// not logged since it last did.
func (l *panicLog) allow(site string, now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last, l.held = map[string]time.Time{}, map[string]int{}
	}
	if t, ok := l.last[site]; ok && now.Sub(t) < panicLogEvery {
		l.held[site]++
		return 0, false
	}
	n := l.held[site]
	l.last[site], l.held[site] = now, 0
	return n, true
}

// panicSite names the function and line that panicked: the first frame
// below runtime.gopanic outside the runtime.
func panicSite() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return fmt.Sprintf("%s (%s:%d)", f.Function, path.Base(f.File), f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
