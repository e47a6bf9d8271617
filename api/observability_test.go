package api

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/telemetry"
	"github.com/quantserve/quantserve/tensor"
)

// waitLog waits until the log holds at least n lines containing each of
// fragments, and returns the log; a minute without fails the test.
func waitLog(t *testing.T, logs *syncBuffer, n int, fragments ...string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := logs.String()
		count := 0
		for _, line := range strings.Split(got, "\n") {
			all := true
			for _, f := range fragments {
				all = all && strings.Contains(line, f)
			}
			if all {
				count++
			}
		}
		if count >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d log lines with %q within a minute; log:\n%s", count, n, fragments, got)
		}
		time.Sleep(time.Millisecond)
	}
}

// spanAttrs returns a span's attributes as strings.
func spanAttrs(s tracetest.SpanStub) map[string]string {
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	return attrs
}

// TestProbesUntracedAndLoggedAtDebug: health checks and scrapes, over
// HTTP and gRPC, start no span (not even when they carry a traceparent)
// and log at debug level, so the default level writes no line for them;
// inferences log at info level, and their spans carry model and version.
func TestProbesUntracedAndLoggedAtDebug(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, url, c, conn := grpcTestServer(t, Options{Repository: mnistRepo(), TracerProvider: tp, Logger: log})
	traceparent := map[string]string{"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-01"}

	for _, p := range []struct{ method, path string }{
		{"GET", "/v2/health/live"}, {"HEAD", "/v2/health/live"}, {"GET", "/v2/health/ready"},
		{"HEAD", "/v2/health/ready"}, {"GET", "/v2/health/ready/"}, {"GET", "/metrics"},
	} {
		if r := doWith(t, p.method, url+p.path, "", traceparent); r.status != 200 {
			t.Fatalf("%s %s: %d %s", p.method, p.path, r.status, r.body)
		}
	}
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "traceparent", traceparent["traceparent"])
	if _, err := c.ServerLive(ctx, &grpcpb.ServerLiveRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ServerReady(ctx, &grpcpb.ServerReadyRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784)))
	if r.status != 200 {
		t.Fatalf("infer: %d %s", r.status, r.body)
	}
	if _, err := c.ModelInfer(ctxT(t), &grpcpb.ModelInferRequest{ModelName: "mnist", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{
		Name: "input", Datatype: "FP32", Shape: []int64{1, 784}, Contents: &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 784)}}}}); err != nil {
		t.Fatal(err)
	}

	// every probe's line is out (its span, if it had one, ended before)
	waitLog(t, &logs, 2, "level=DEBUG msg=request method=GET route=/v2/health/ready")
	waitLog(t, &logs, 1, "level=DEBUG msg=request method=GET route=/v2/health/live")
	waitLog(t, &logs, 1, "level=DEBUG msg=request method=HEAD route=/v2/health/live")
	waitLog(t, &logs, 1, "level=DEBUG msg=request method=HEAD route=/v2/health/ready")
	waitLog(t, &logs, 1, "level=DEBUG msg=request method=GET route=/metrics")
	waitLog(t, &logs, 1, "level=DEBUG msg=request method=grpc route=/inference.GRPCInferenceService/ServerLive")
	waitLog(t, &logs, 1, "level=DEBUG msg=request method=grpc route=/inference.GRPCInferenceService/ServerReady")
	waitLog(t, &logs, 1, "level=DEBUG msg=request method=grpc route=/grpc.health.v1.Health/Check")
	got := waitLog(t, &logs, 1, "level=INFO msg=request method=POST route=/v2/models/{model}/infer ", "model=mnist version=1")
	waitLog(t, &logs, 1, "level=INFO msg=request method=grpc route=/inference.GRPCInferenceService/ModelInfer ", "model=mnist version=1")
	for _, line := range strings.Split(got, "\n") {
		if strings.Contains(line, "msg=request") && (strings.Contains(line, "health") || strings.Contains(line, "metrics") || strings.Contains(line, "Server")) &&
			!strings.Contains(line, "level=DEBUG") {
			t.Errorf("a probe logs above debug level: %s", line)
		}
	}

	for _, name := range []string{"POST /v2/models/{model}/infer", "inference.GRPCInferenceService/ModelInfer"} {
		a := spanAttrs(waitSpan(t, exp, name))
		if a["model"] != "mnist" || a["version"] != "1" {
			t.Errorf("%s: span attributes %v, want model mnist and version 1", name, a)
		}
	}
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
		if strings.Contains(s.Name, "health") || strings.Contains(s.Name, "metrics") || strings.Contains(s.Name, "Health") ||
			strings.Contains(s.Name, "Server") || s.Name == "GET" || s.Name == "HEAD" {
			t.Errorf("a probe was traced: span %q %v", s.Name, spanAttrs(s))
		}
	}
	if len(names) == 0 {
		t.Fatal("no span at all")
	}

	// at the default level, probes write nothing
	var infoLogs syncBuffer
	info := slog.New(slog.NewTextHandler(&infoLogs, nil))
	url = newTestHTTPServer(t, Options{Repository: mnistRepo(), Logger: info})
	for range 3 {
		do(t, "GET", url+"/v2/health/ready", "")
		do(t, "GET", url+"/metrics", "")
	}
	do(t, "GET", url+"/v2", "")
	got = waitLog(t, &infoLogs, 1, "level=INFO msg=request method=GET route=/v2 ")
	if strings.Contains(got, "health") || strings.Contains(got, "/metrics") {
		t.Errorf("probes logged at the default level:\n%s", got)
	}
}

// TestPropagatorOption: a server given another propagator (what
// OTEL_PROPAGATORS names) continues a trace sent in its headers.
func TestPropagatorOption(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	b3, err := telemetry.Propagator("b3")
	if err != nil {
		t.Fatal(err)
	}
	url := newTestHTTPServer(t, Options{Repository: mnistRepo(), TracerProvider: tp, Propagator: b3, Logger: quietLog()})
	r := doWith(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784)),
		map[string]string{"b3": clientTraceID + "-" + clientSpanID + "-1"})
	if r.status != 200 {
		t.Fatalf("infer: %d %s", r.status, r.body)
	}
	s := waitSpan(t, exp, "POST /v2/models/{model}/infer")
	if s.SpanContext.TraceID().String() != clientTraceID || s.Parent.SpanID().String() != clientSpanID {
		t.Errorf("span in trace %v with parent %v: not the b3 header's", s.SpanContext.TraceID(), s.Parent.SpanID())
	}
}

// scrapeFamilies fetches /metrics, checks it with Prometheus's linter (as
// promtool check metrics does) and parses it as Prometheus text.
func scrapeFamilies(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	r := do(t, "GET", url+"/metrics", "")
	if r.status != 200 {
		t.Fatalf("/metrics: %d %s", r.status, r.body)
	}
	problems, err := promlint.New(strings.NewReader(string(r.body))).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("/metrics does not lint clean: %v %v", err, problems)
	}
	parser := expfmt.NewTextParser(pmodel.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(r.body)))
	if err != nil {
		t.Fatalf("not Prometheus text: %v\n%s", err, r.body)
	}
	return families
}

// sampleOf returns the value of family's sample whose labels are exactly
// labels, and whether there is one.
func sampleOf(families map[string]*dto.MetricFamily, family string, labels map[string]string) (float64, bool) {
	f := families[family]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.Label {
			match = match && labels[l.GetName()] == l.GetValue()
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// wantStates checks quantserve_model_state of one model version: 1 for
// state, 0 for each other state.
func wantStates(t *testing.T, families map[string]*dto.MetricFamily, model, version, state string) {
	t.Helper()
	for _, s := range telemetry.ModelStates {
		want := 0.0
		if s == state {
			want = 1
		}
		got, ok := sampleOf(families, "quantserve_model_state", map[string]string{"model": model, "version": version, "state": s})
		if !ok || got != want {
			t.Errorf("quantserve_model_state{model=%q,version=%q,state=%q} = %v (present %v), want %v", model, version, s, got, ok, want)
		}
	}
}

// TestMetricsModelStatesZeroCountersAndService scrapes a real server
// while its models load and after: every model shows its state (loading,
// then ready or, for the one that fails, unavailable), a ready version's
// inference counters are there at zero before its first request, refusals
// at zero, and target_info names the service as OTEL_SERVICE_NAME says
// (quantserve without it).
func TestMetricsModelStatesZeroCountersAndService(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_SERVICE_NAME", "scorer")
	dir := writeRepo(t, map[string]map[int][]byte{
		"good": {1: onnxbuild.Identity(tensor.Float32, []int{-1})},
		"bad":  {1: []byte("not an ONNX model")},
	}, nil)
	repo, load, err := repository.Start(dir, serverOptions())
	if err != nil {
		t.Fatal(err)
	}
	url := newTestHTTPServer(t, Options{Repository: repo, Version: "test", Logger: quietLog()})

	m := scrapeFamilies(t, url)
	wantStates(t, m, "good", "", "loading")
	wantStates(t, m, "bad", "", "loading")
	if v, ok := sampleOf(m, "target_info", map[string]string{"service_name": "scorer", "service_version": "test",
		"telemetry_sdk_language": "go", "telemetry_sdk_name": "opentelemetry", "telemetry_sdk_version": sdkVersion(t, m)}); !ok || v != 1 {
		t.Errorf("target_info does not name the service scorer: %v", m["target_info"])
	}

	load(t.Context())
	m = scrapeFamilies(t, url)
	wantStates(t, m, "good", "1", "ready")
	wantStates(t, m, "bad", "1", "unavailable")
	if _, ok := sampleOf(m, "quantserve_model_state", map[string]string{"model": "good", "version": "", "state": "loading"}); ok {
		t.Error("a loaded model is still shown loading")
	}
	for _, outcome := range []string{"ok", "error"} {
		if v, ok := sampleOf(m, "quantserve_inferences_total", map[string]string{"model": "good", "version": "1", "outcome": outcome}); !ok || v != 0 {
			t.Errorf("quantserve_inferences_total{model=good,version=1,outcome=%s} = %v (present %v) before any request, want 0", outcome, v, ok)
		}
	}
	for _, reason := range []string{"inflight", "memory"} {
		if v, ok := sampleOf(m, "quantserve_rejected_total", map[string]string{"reason": reason}); !ok || v != 0 {
			t.Errorf("quantserve_rejected_total{reason=%s} = %v (present %v) before any refusal, want 0", reason, v, ok)
		}
	}

	if r := do(t, "POST", url+"/v2/models/good/infer", `{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1,2]}]}`); r.status != 200 {
		t.Fatalf("infer: %d %s", r.status, r.body)
	}
	m = scrapeFamilies(t, url)
	if v, _ := sampleOf(m, "quantserve_inferences_total", map[string]string{"model": "good", "version": "1", "outcome": "ok"}); v != 1 {
		t.Errorf("quantserve_inferences_total{model=good,version=1,outcome=ok} = %v after one inference", v)
	}
	if v, _ := sampleOf(m, "quantserve_inferences_total", map[string]string{"model": "good", "version": "1", "outcome": "error"}); v != 0 {
		t.Errorf("quantserve_inferences_total{model=good,version=1,outcome=error} = %v after one good inference", v)
	}

	t.Setenv("OTEL_SERVICE_NAME", "")
	m = scrapeFamilies(t, newTestHTTPServer(t, Options{Repository: mnistRepo(), Version: "test", Logger: quietLog()}))
	if v, ok := sampleOf(m, "target_info", map[string]string{"service_name": telemetry.DefaultServiceName, "service_version": "test",
		"telemetry_sdk_language": "go", "telemetry_sdk_name": "opentelemetry", "telemetry_sdk_version": sdkVersion(t, m)}); !ok || v != 1 {
		t.Errorf("target_info without OTEL_SERVICE_NAME: %v", m["target_info"])
	}
	wantStates(t, m, "mnist", "1", "ready")
}

// sdkVersion returns target_info's telemetry_sdk_version.
func sdkVersion(t *testing.T, m map[string]*dto.MetricFamily) string {
	t.Helper()
	f := m["target_info"]
	if f == nil || len(f.Metric) != 1 {
		t.Fatalf("target_info: %v", f)
	}
	for _, l := range f.Metric[0].Label {
		if l.GetName() == "telemetry_sdk_version" {
			return l.GetValue()
		}
	}
	return ""
}
