package api

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/quantserve/quantserve/oip/grpcpb"
)

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// waitSpan returns the ended span named name, waiting for it: a server
// span ends just after its response is sent. A span still missing after a
// minute fails the test with the spans there are.
func waitSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		spans := exp.GetSpans()
		for _, s := range spans {
			if s.Name == name {
				return s
			}
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name)
			}
			t.Fatalf("no span %q ended within a minute; spans: %q", name, names)
		}
		runtime.Gosched()
	}
}

// checkTrace checks that the server span name continues the client's
// trace and has the decode, queue, execute and encode steps as children.
func checkTrace(t *testing.T, exp *tracetest.InMemoryExporter, name string) {
	t.Helper()
	root := waitSpan(t, exp, name)
	if root.SpanKind != trace.SpanKindServer || root.SpanContext.TraceID().String() != clientTraceID ||
		root.Parent.SpanID().String() != clientSpanID || !root.Parent.IsRemote() {
		t.Errorf("%s: kind %v, trace %v, parent %v: not the client's trace", name, root.SpanKind, root.SpanContext.TraceID(), root.Parent.SpanID())
	}
	var children []string
	for _, s := range exp.GetSpans() {
		if s.Parent.SpanID() == root.SpanContext.SpanID() {
			children = append(children, s.Name)
			if s.SpanContext.TraceID() != root.SpanContext.TraceID() {
				t.Errorf("%s: child %s in trace %v", name, s.Name, s.SpanContext.TraceID())
			}
		}
	}
	slices.Sort(children)
	if want := []string{"decode", "encode", "execute", "queue"}; !slices.Equal(children, want) {
		t.Errorf("%s: children %v, want %v", name, children, want)
	}
}

// TestTracing records spans with the SDK's in-memory exporter: an infer
// over HTTP and one over gRPC, each sent with a W3C traceparent, give a
// server span in the client's trace with a child per step.
func TestTracing(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	_, url, c, _ := grpcTestServer(t, Options{Repository: mnistRepo(), TracerProvider: tp})
	traceparent := "00-" + clientTraceID + "-" + clientSpanID + "-01"

	r := doWith(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784)), map[string]string{"traceparent": traceparent})
	if r.status != 200 {
		t.Fatalf("infer: %d %s", r.status, r.body)
	}
	checkTrace(t, exp, "POST /v2/models/{model}/infer")
	root := waitSpan(t, exp, "POST /v2/models/{model}/infer")
	attrs := map[string]string{}
	for _, kv := range root.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["http.route"] != "/v2/models/{model}/infer" || attrs["http.response.status_code"] != "200" || attrs["request.id"] != r.header.Get("X-Request-Id") {
		t.Errorf("server span attributes %v", attrs)
	}

	exp.Reset()
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "traceparent", traceparent)
	if _, err := c.ModelInfer(ctx, &grpcpb.ModelInferRequest{ModelName: "mnist", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{
		Name: "input", Datatype: "FP32", Shape: []int64{1, 784}, Contents: &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 784)}}}}); err != nil {
		t.Fatal(err)
	}
	checkTrace(t, exp, "inference.GRPCInferenceService/ModelInfer")

	// a failed step marks its span, and a request without traceparent
	// starts a trace of its own
	exp.Reset()
	if r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 3}, make([]float32, 3))); r.status != 400 {
		t.Fatalf("bad infer: %d", r.status)
	}
	root = waitSpan(t, exp, "POST /v2/models/{model}/infer")
	if root.Parent.IsValid() || root.SpanContext.TraceID().String() == clientTraceID {
		t.Errorf("a request without traceparent has parent %v", root.Parent)
	}
	for _, s := range exp.GetSpans() {
		if s.Name == "execute" && s.Status.Code.String() != "Error" {
			t.Errorf("the failed execute step has status %v", s.Status)
		}
	}
}

// TestRequestID: a client's valid X-Request-Id comes back; an invalid or
// missing one is replaced by a new id, different for each request.
func TestRequestID(t *testing.T) {
	url := embeddedServer(t)
	if r := doWith(t, "GET", url+"/v2/health/live", "", map[string]string{"X-Request-Id": "abc-123_x:y/z"}); r.header.Get("X-Request-Id") != "abc-123_x:y/z" {
		t.Errorf("client id not honoured: %q", r.header.Get("X-Request-Id"))
	}
	seen := map[string]bool{}
	for _, bad := range []string{"", "has space", strings.Repeat("a", maxRequestIDLen+1), "é"} {
		var h map[string]string
		if bad != "" {
			h = map[string]string{"X-Request-Id": bad}
		}
		id := doWith(t, "GET", url+"/v2/models/nope", "", h).header.Get("X-Request-Id")
		if id == bad || !validRequestID(id) || seen[id] {
			t.Errorf("client id %q answered with %q", bad, id)
		}
		seen[id] = true
	}
}

// TestCORS: off by default; with origins, simple requests from them get
// Access-Control-Allow-Origin and exposed headers, preflights are answered
// 204, and other origins get nothing.
func TestCORS(t *testing.T) {
	off := embeddedServer(t)
	r := doWith(t, "GET", off+"/v2/health/live", "", map[string]string{"Origin": "https://app.example"})
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS off answers %v", r.header)
	}
	preflight := map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
	if r := doWith(t, "OPTIONS", off+"/v2/models/mnist/infer", "", preflight); r.status != 405 {
		t.Errorf("preflight with CORS off: %d", r.status)
	}

	url := newTestHTTPServer(t, Options{Repository: mnistRepo(), CORSOrigins: []string{"https://app.example", "http://localhost:3000"}, Logger: quietLog()})
	r = doWith(t, "OPTIONS", url+"/v2/models/mnist/infer", "", preflight)
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(r.header.Get("Access-Control-Allow-Headers")), "content-type") ||
		!slices.Contains(r.header.Values("Vary"), "Origin") {
		t.Errorf("preflight: %d %v", r.status, r.header)
	}
	r = doWith(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784)), map[string]string{"Origin": "http://localhost:3000"})
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "X-Request-Id") {
		t.Errorf("infer from an allowed origin: %d %v", r.status, r.header)
	}
	other := map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
	if r := doWith(t, "OPTIONS", url+"/v2/models/mnist/infer", "", other); r.status != 405 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", r.status, r.header)
	}
	if r := doWith(t, "GET", url+"/v2/health/live", "", map[string]string{"Origin": "https://evil.example"}); r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET from another origin: %d %v", r.status, r.header)
	}

	anyURL := newTestHTTPServer(t, Options{Repository: mnistRepo(), CORSOrigins: []string{"*"}, Logger: quietLog()})
	if r := doWith(t, "GET", anyURL+"/v2", "", map[string]string{"Origin": "https://anywhere.example"}); r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("--cors-origins '*': %v", r.header)
	}

	for in, want := range map[string]string{"": "[]", " https://a.example , http://b.example:8080 ": "[https://a.example http://b.example:8080]", "*": "[*]"} {
		got, err := ParseCORSOrigins(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("ParseCORSOrigins(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"app.example", "https://a.example/x", "ftp://a.example", "https://"} {
		if _, err := ParseCORSOrigins(bad); err == nil {
			t.Errorf("ParseCORSOrigins(%q) accepted", bad)
		}
	}
}

// TestMetricLabelsBounded sends 2,500 made-up methods (and as many
// made-up paths): they fold into one method label ("other") and one route
// ("unmatched"), so /metrics stays the size it was. It also has the Go
// runtime's and the process's metrics, and inference latency by model and
// version for HTTP and gRPC alike.
func TestMetricLabelsBounded(t *testing.T) {
	_, url, c, _ := grpcTestServer(t, Options{Repository: mnistRepo()})
	get := func() (int, map[string]*dto.MetricFamily) {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		parser := expfmt.NewTextParser(pmodel.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(io.TeeReader(resp.Body, &b))
		if err != nil {
			t.Fatal(err)
		}
		return b.Len(), fams
	}
	infer := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	do(t, "POST", url+"/v2/models/mnist/infer", infer)
	do(t, "FOO", url+"/v2/health/live", "")
	do(t, "GET", url+"/nope", "")
	for i := 0; i < 2; i++ {
		do(t, "POST", url+"/v2/models/mnist/versions/1/infer", infer)
		if _, err := c.ModelInfer(ctxT(t), &grpcpb.ModelInferRequest{ModelName: "mnist", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{
			Name: "input", Datatype: "FP32", Shape: []int64{1, 784}, Contents: &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 784)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := get()
	client := &http.Client{}
	for i := 0; i < 2500; i++ {
		req, _ := http.NewRequest(fmt.Sprintf("M%04d", i), fmt.Sprintf("%s/made/up/%d", url, i), nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	after, fams := get()
	t.Logf("/metrics: %d bytes before the flood, %d after", before, after)
	if after > before+8192 {
		t.Errorf("/metrics grew from %d to %d bytes with 2,500 made-up methods", before, after)
	}
	methods := map[string]bool{}
	for _, m := range fams["quantserve_http_requests_total"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "method" {
				methods[l.GetValue()] = true
			}
			if strings.Contains(l.GetName(), "overflow") {
				t.Errorf("overflow series: %v", m)
			}
		}
	}
	for m := range methods {
		if !slices.Contains([]string{"GET", "POST", "other"}, m) {
			t.Errorf("method label %q", m)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds", "process_resident_memory_bytes", "process_cpu_seconds_total", "quantserve_grpc_requests_total"} {
		if fams[name] == nil {
			t.Errorf("no %s in /metrics", name)
		}
	}
	var count uint64
	for _, m := range fams["quantserve_inference_duration_seconds"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["model"] == "mnist" && labels["version"] == "1" {
			count += m.Histogram.GetSampleCount()
		}
	}
	if count != 5 { // 3 over HTTP, 2 over gRPC
		t.Errorf("inference latency samples for mnist version 1: %d, want 5", count)
	}
}
