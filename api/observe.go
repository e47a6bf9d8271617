package api

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/quantserve/quantserve/telemetry"
)

// Every request, HTTP or gRPC, gets a request id (the client's X-Request-Id
// when valid, else a new one, returned in the response), a server span
// whose parent is the client's trace context if any (W3C traceparent, or
// what OTEL_PROPAGATORS names), one log line at info level when it ends
// (method, route, model, version, status, duration, request id, trace
// id; a failed request's always, the others' at most
// Options.RequestLogRate a second: reqlog.go), and its count and latency
// in /metrics with bounded labels. An
// inference's span carries its model and version. Probes (health checks
// and /metrics scrapes, HTTP or gRPC) get no span and log at debug level:
// they are counted in /metrics all the same. Over HTTP an answer of known
// length is sent before any of that is recorded (sendAnswer).

// requestIDHeader carries the request id both ways (gRPC: the metadata
// key x-request-id).
const requestIDHeader = "X-Request-Id"

// maxRequestIDLen bounds a client's request id.
const maxRequestIDLen = 128

// reqInfo is what a request's log line and metrics learn as it is served.
type reqInfo struct {
	id string
	// model and version are set once an inference has found its model
	// version: they label the per-model latency.
	model   string
	version string
	// route names a request answered before routing (a CORS preflight).
	route string
}

type reqInfoKey struct{}

func infoOf(ctx context.Context) *reqInfo {
	if in, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		return in
	}
	return &reqInfo{}
}

// noteInference records the model version an inference runs on, in the
// request's info and on its span.
func noteInference(ctx context.Context, model, version string) {
	in := infoOf(ctx)
	in.model, in.version = model, version
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("model", model), attribute.String("version", version))
	}
}

// probePaths are the HTTP paths of probes (GET or HEAD).
var probePaths = map[string]bool{"/v2/health/live": true, "/v2/health/ready": true, "/metrics": true}

// isProbe reports whether an HTTP request is a health probe or a scrape.
func isProbe(method, path string) bool {
	if method != http.MethodGet && method != http.MethodHead {
		return false
	}
	return probePaths[strings.TrimRight(path, "/")]
}

// grpcProbes are the full methods of gRPC health checks.
var grpcProbes = map[string]bool{
	"/inference.GRPCInferenceService/ServerLive":  true,
	"/inference.GRPCInferenceService/ServerReady": true,
	"/grpc.health.v1.Health/Check":                true,
	"/grpc.health.v1.Health/List":                 true,
	"/grpc.health.v1.Health/Watch":                true,
}

// requestID returns the client's id when it is valid (1 to 128 visible
// ASCII characters), else a new random one.
func requestID(given string) string {
	if validRequestID(given) {
		return given
	}
	return newRequestID()
}

// idAlphabet is RFC 4648 base32's.
const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// newRequestID returns 26 base32 characters (130 random bits), as
// crypto/rand.Text does, drawn from the runtime's per-thread ChaCha8
// generator (seeded from the system's entropy): a request id has to be
// unique, not secret, and this takes no system call and no lock.
func newRequestID() string {
	var b [26]byte
	var x uint64
	for i := range b {
		if i%12 == 0 {
			x = rand.Uint64()
		}
		b[i] = idAlphabet[x&31]
		x >>= 5
	}
	return string(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// propagatorOf returns p, or W3C trace context (traceparent, tracestate)
// when p is nil.
func propagatorOf(p propagation.TextMapPropagator) propagation.TextMapPropagator {
	if p == nil {
		return propagation.TraceContext{}
	}
	return p
}

// propFields returns the header names p reads (canonical, as net/http
// keys a request's headers) and their gRPC metadata keys (lower case).
func propFields(p propagation.TextMapPropagator) (header, md []string) {
	for _, f := range p.Fields() {
		header = append(header, http.CanonicalHeaderKey(f))
		md = append(md, strings.ToLower(f))
	}
	return header, md
}

// carries tells whether a request's headers hold any field the propagator
// reads: most carry none, and then there is no trace context to extract.
func (s *server) carries(h http.Header) bool {
	for _, k := range s.propHeader {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}

// tracerOf returns the tracer requests' spans start from: without a
// provider, or with telemetry's IDs-only one (cmd/serve's when nothing is
// exported), an idsOnlyTracer, which starts a span only for a request
// whose log line is written.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil || tp == telemetry.IDsOnlyTracerProvider() {
		return idsOnlyTracer{telemetry.IDsOnlyTracerProvider().Tracer(tracerName)}
	}
	return tp.Tracer(tracerName)
}

const tracerName = "github.com/quantserve/quantserve/api"

// idsOnlyTracer starts spans that are never sampled, recorded or
// exported (telemetry.IDsOnlyTracerProvider): only their ids are used, so
// observe gives them no attributes.
type idsOnlyTracer struct{ trace.Tracer }

// serverSpan is the option of every server span, as a slice the calls to
// Start share.
var serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// reqState is what observe allocates for a request, in one piece: its
// info, the context carrying it and the writer recording the answer.
type reqState struct {
	info reqInfo
	ctx  infoCtx
	w    statusWriter
}

// infoCtx is a context carrying a request's info (infoOf), as
// context.WithValue(parent, reqInfoKey{}, info) would.
type infoCtx struct {
	context.Context
	info *reqInfo
}

func (c *infoCtx) Value(key any) any {
	if _, ok := key.(reqInfoKey); ok {
		return c.info
	}
	return c.Context.Value(key)
}

// statusWriter records the status and length of an answer. It passes
// flushes, ReadFrom and hijacks on, and Unwrap gives http.ResponseController
// the writer beneath (deadlines).
type statusWriter struct {
	http.ResponseWriter
	status      int
	bytes       int
	wroteHeader bool
}

// WriteHeader passes an informational (1xx) status on and the first final
// one, which it records; later ones are superfluous and dropped.
func (w *statusWriter) WriteHeader(code int) {
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := io.Copy(w.ResponseWriter, r)
	w.bytes += int(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Status is the answer's status, 0 before one is written.
func (w *statusWriter) Status() int { return w.status }

// BytesWritten is the length of the body written so far.
func (w *statusWriter) BytesWritten() int { return w.bytes }

// observe is the outermost HTTP middleware: request id, server span,
// request log line and request metrics.
func (s *server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_, idsOnly := s.tracer.(idsOnlyTracer)
		rs := &reqState{}
		info := &rs.info
		info.id = requestID(r.Header.Get(requestIDHeader))
		w.Header().Set(requestIDHeader, info.id)
		method := telemetry.Method(r.Method)
		ctx := r.Context()
		if s.carries(r.Header) {
			ctx = s.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
		}
		probe := isProbe(r.Method, r.URL.Path)
		span := trace.SpanFromContext(ctx) // a probe's: nothing records it
		switch {
		case probe, idsOnly: // an idsOnly span is started for the log line only (idsOf)
		default:
			ctx, span = s.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
				attribute.String("http.request.method", method), attribute.String("url.path", r.URL.Path),
				attribute.String("request.id", info.id)))
		}
		rs.ctx = infoCtx{Context: ctx, info: info}
		ctx = &rs.ctx
		rs.w.ResponseWriter = w
		ww := &rs.w
		defer func() {
			d := time.Since(start)
			sendAnswer(w, ww)
			route := info.route
			if route == "" {
				if rc := chi.RouteContext(ctx); rc != nil {
					route = rc.RoutePattern()
				}
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK // nothing written: net/http answers 200
			}
			if !probe && span.IsRecording() {
				if route != "" {
					span.SetName(method + " " + route)
					span.SetAttributes(attribute.String("http.route", route))
				}
				span.SetAttributes(attribute.Int("http.response.status_code", status))
				if status >= 500 {
					span.SetStatus(codes.Error, http.StatusText(status))
				}
			}
			if !probe && !idsOnly {
				span.End()
			}
			s.tel.Request(ctx, route, method, status, d)
			model, version := info.model, info.version
			if model != "" {
				s.tel.InferenceLatency(ctx, model, version, d)
			} else if rc := chi.RouteContext(ctx); rc != nil {
				model, version = rc.URLParam("model"), rc.URLParam("version")
			}
			skipped, ok := s.logLine(ctx, probe, status >= 400, start)
			if !ok {
				return // a probe's line at info level, or past the rate: nothing to build
			}
			// room for every attribute logRequest adds: one allocation
			attrs := make([]slog.Attr, 0, 16)
			attrs = append(attrs, slog.String("method", method), slog.String("route", route), slog.String("path", r.URL.Path))
			s.logRequest(ctx, probe, s.idsOf(ctx, probe, method), attrs, model, version, slog.Int("status", status), d, info.id, skipped,
				slog.Int("bytes", ww.BytesWritten()), slog.String("remote", r.RemoteAddr))
		}()
		next.ServeHTTP(ww, r.WithContext(ctx))
	})
}

// logLevel is the level of a request's log line.
func logLevel(probe bool) slog.Level {
	if probe {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// sendAnswer sends a complete answer to the client before the request's
// span, metrics and log line are recorded, so their cost (and a log
// writer's lock) is no part of the answer's latency. An answer is complete
// when its status and Content-Length are set and that many bytes are
// written; any other is left to net/http, which sets its length, or
// chunks it, once the handler returns.
func sendAnswer(w http.ResponseWriter, ww *statusWriter) {
	if ww.Status() == 0 {
		return
	}
	n, err := strconv.Atoi(w.Header().Get("Content-Length"))
	if err != nil || n != ww.BytesWritten() {
		return
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// idsOf returns the trace and span ids a request's log line names: its
// span's, or a probe's parent's (the client's, if any). Without a
// provider (idsOnlyTracer) nothing records the request's span, so it is
// started here, only for the requests whose line is written: its ids are
// all there is to it (a new span id, the client's trace id if it sent
// one).
func (s *server) idsOf(ctx context.Context, probe bool, name string) trace.SpanContext {
	if _, idsOnly := s.tracer.(idsOnlyTracer); idsOnly && !probe {
		_, span := s.tracer.Start(ctx, name, serverSpan...)
		return span.SpanContext()
	}
	return trace.SpanContextFromContext(ctx)
}

// logRequest writes a request's one line at info level, a probe's at
// debug level, once logLine said to; sc names its trace and span,
// skipped is the lines held back before it (reqlog.go).
func (s *server) logRequest(ctx context.Context, probe bool, sc trace.SpanContext, attrs []slog.Attr, model, version string, status slog.Attr, d time.Duration, id string, skipped int64, extra ...slog.Attr) {
	level := logLevel(probe)
	if model != "" {
		attrs = append(attrs, slog.String("model", model))
		if version != "" {
			attrs = append(attrs, slog.String("version", version))
		}
	}
	attrs = append(attrs, status, slog.Duration("duration", d), slog.String("request_id", id))
	if sc.HasTraceID() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	attrs = append(attrs, extra...)
	if skipped > 0 {
		attrs = append(attrs, unlogged(skipped))
	}
	s.log.LogAttrs(ctx, level, "request", attrs...)
}

// observeModels exports the state of every model version in /metrics
// (telemetry.ObserveModels), as the repository index shows it: a model
// that failed to load is there, unavailable.
func (s *server) observeModels() {
	if s.tel == nil || s.repo == nil {
		return
	}
	err := s.tel.ObserveModels(func() []telemetry.ModelState {
		var out []telemetry.ModelState
		for _, row := range s.repo.Index() {
			out = append(out, telemetry.ModelState{Model: row.Name, Version: row.Version, State: row.State})
		}
		return out
	})
	if err != nil {
		s.log.Error("model state metrics disabled", "err", err)
	}
	s.observeLayers()
}
