package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// received collects what an OTLP receiver was sent.
type received struct {
	mu    sync.Mutex
	spans map[string]string // span name -> service.name of its resource
}

func (r *received) add(req *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans[s.Name] = service
			}
		}
	}
}

func (r *received) get(name string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.spans[name]
	return s, ok
}

type traceReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	got *received
}

func (t *traceReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	t.got.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// sendSpan starts and ends a span on a tracing set up from the process's
// environment, then shuts it down (which flushes the batch).
func sendSpan(t *testing.T, name string) *Tracing {
	t.Helper()
	tr, err := NewTracing(t.Context(), os.Getenv, "v-test")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider.Tracer("test").Start(t.Context(), name)
	if !span.IsRecording() {
		t.Errorf("%s: the span is not recorded with %s", name, tr.Exporter)
	}
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	return tr
}

// TestOTLPExport exports a span to real OTLP receivers on 127.0.0.1 over
// http/protobuf (the default) and grpc, as the standard variables ask.
func TestOTLPExport(t *testing.T) {
	got := &received{spans: map[string]string{}}
	httpRecv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		got.add(&req)
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(httpRecv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(g, &traceReceiver{got: got})
	go g.Serve(ln)
	t.Cleanup(g.Stop)

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", httpRecv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	if tr := sendSpan(t, "over-http"); !strings.Contains(tr.Exporter, "http/protobuf") {
		t.Errorf("exporter %q", tr.Exporter)
	}
	if svc, ok := got.get("over-http"); !ok || svc != "quantserve" {
		t.Errorf("http/protobuf: span received %v, service %q", ok, svc)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
	t.Setenv("OTEL_SERVICE_NAME", "qs-canary")
	if tr := sendSpan(t, "over-grpc"); !strings.Contains(tr.Exporter, "grpc") {
		t.Errorf("exporter %q", tr.Exporter)
	}
	if svc, ok := got.get("over-grpc"); !ok || svc != "qs-canary" {
		t.Errorf("grpc: span received %v, service %q", ok, svc)
	}
}

// TestNoExportWithoutEndpoint: without an endpoint (or with export
// switched off) spans get ids for the log and are not recorded; values
// quantserve cannot honour are start-up errors.
func TestNoExportWithoutEndpoint(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
	} {
		tr, err := NewTracing(t.Context(), func(k string) string { return env[k] }, "v")
		if err != nil || tr.Exporter != "none" {
			t.Fatalf("%v: %v %v", env, tr, err)
		}
		_, span := tr.Provider.Tracer("test").Start(t.Context(), "x")
		if span.IsRecording() || !span.SpanContext().IsValid() {
			t.Errorf("%v: recording %v, ids %v", env, span.IsRecording(), span.SpanContext())
		}
		span.End()
	}
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
	} {
		if _, err := NewTracing(t.Context(), func(k string) string { return env[k] }, "v"); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
}
