package api

import (
	"log/slog"
	"regexp"
	"testing"

	"github.com/quantserve/quantserve/telemetry"
)

// TestIDsOnlyProvider: the provider cmd/serve passes when no exporter is
// set (telemetry.IDsOnlyTracerProvider) serves as no provider does: a
// request starts a span only for its log line (idsOnlyTracer), and the
// line names the client's trace, or a new one.
func TestIDsOnlyProvider(t *testing.T) {
	var logs syncBuffer
	s := newServer(Options{Repository: mnistRepo(), TracerProvider: telemetry.IDsOnlyTracerProvider(), RequestLogRate: -1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if _, ok := s.tracer.(idsOnlyTracer); !ok {
		t.Fatalf("tracer %T, want idsOnlyTracer", s.tracer)
	}
	url := newTestHTTPServerOf(t, s)
	body := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	traceparent := map[string]string{"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-01"}
	if r := doWith(t, "POST", url+"/v2/models/mnist/infer", body, traceparent); r.status != 200 {
		t.Fatalf("infer: %d %s", r.status, r.body)
	}
	got := waitLog(t, &logs, 1, "msg=request method=POST", "trace_id="+clientTraceID)
	if regexp.MustCompile(`span_id=`+clientSpanID).MatchString(got) || !regexp.MustCompile(`span_id=[0-9a-f]{16}`).MatchString(got) {
		t.Errorf("the line names no span of its own:\n%s", got)
	}
	if r := do(t, "POST", url+"/v2/models/mnist/infer", body); r.status != 200 {
		t.Fatalf("infer: %d %s", r.status, r.body)
	}
	got = waitLog(t, &logs, 2, "msg=request method=POST")
	if ids := regexp.MustCompile(`trace_id=([0-9a-f]{32})`).FindAllStringSubmatch(got, -1); len(ids) != 2 || ids[1][1] == clientTraceID || ids[1][1] == "00000000000000000000000000000000" {
		t.Errorf("a request without a traceparent: trace ids %v, want a new one\n%s", ids, got)
	}
}
