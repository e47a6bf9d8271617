package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// scrape returns the families /metrics shows.
func scrape(t *testing.T, tel *Telemetry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(tel.Handler)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(pmodel.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// labelsOf returns a metric's labels as a map.
func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.Label {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// TestRequestCountsConcurrent records requests, inferences and gRPC calls
// from many goroutines at once, on label combinations first seen while
// others are being recorded, and finds every one in /metrics, under the
// labels it was recorded with.
func TestRequestCountsConcurrent(t *testing.T) {
	tel, err := New("v1", "reference")
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			for i := range each {
				status := 200 + (i+w)%3 // 200, 201, 202
				tel.Request(ctx, "/r", "POST", status, time.Millisecond)
				tel.Request(ctx, "", "BREW", 404, time.Millisecond)
				tel.Inference(ctx, "m", fmt.Sprint(i%2+1), i%4 != 0)
				tel.InferenceLatency(ctx, "m", fmt.Sprint(i%2+1), time.Millisecond)
				tel.GRPCRequest(ctx, "/s/M", "OK", time.Millisecond)
			}
		})
	}
	wg.Wait()
	f := scrape(t, tel)
	counts := map[string]float64{}
	for _, m := range f["quantserve_http_requests_total"].GetMetric() {
		l := labelsOf(m)
		counts[l["route"]+" "+l["method"]+" "+l["code"]] += m.GetCounter().GetValue()
	}
	total := float64(workers * each)
	if counts["/r POST 200"]+counts["/r POST 201"]+counts["/r POST 202"] != total || counts["unmatched other 404"] != total || len(counts) != 4 {
		t.Errorf("quantserve_http_requests_total: %v, want %v requests on /r (200, 201, 202) and on unmatched", counts, total)
	}
	for _, m := range f["quantserve_http_request_duration_seconds"].GetMetric() {
		if l := labelsOf(m); m.GetHistogram().GetSampleCount() != uint64(total) {
			t.Errorf("duration %v: %d samples, want %v", l, m.GetHistogram().GetSampleCount(), total)
		}
	}
	inf := map[string]float64{}
	for _, m := range f["quantserve_inferences_total"].GetMetric() {
		l := labelsOf(m)
		inf[l["version"]+" "+l["outcome"]] = m.GetCounter().GetValue()
	}
	if want := map[string]float64{"1 ok": total / 4, "1 error": total / 4, "2 ok": total / 2}; fmt.Sprint(inf) != fmt.Sprint(want) {
		t.Errorf("quantserve_inferences_total: %v, want %v", inf, want)
	}
	var latency uint64
	for _, m := range f["quantserve_inference_duration_seconds"].GetMetric() {
		latency += m.GetHistogram().GetSampleCount()
	}
	if latency != uint64(total) {
		t.Errorf("quantserve_inference_duration_seconds: %d samples, want %v", latency, total)
	}
	grpc := f["quantserve_grpc_requests_total"].GetMetric()
	if len(grpc) != 1 || grpc[0].GetCounter().GetValue() != total || labelsOf(grpc[0])["code"] != "OK" {
		t.Errorf("quantserve_grpc_requests_total: %v, want %v calls with code OK", grpc, total)
	}
}

// TestAttrCacheBound: past maxCachedAttrs label combinations the cache
// stops growing, and the measurements of further ones are recorded all the
// same.
func TestAttrCacheBound(t *testing.T) {
	tel, err := New("v1", "reference")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := maxCachedAttrs + 10
	for i := range n {
		tel.GRPCRequest(ctx, fmt.Sprintf("/s/M%d", i), "OK", time.Millisecond)
	}
	tel.GRPCRequest(ctx, "/s/M0", "OK", time.Millisecond)
	tel.GRPCRequest(ctx, fmt.Sprintf("/s/M%d", n-1), "OK", time.Millisecond)
	if got := len(*tel.grpcAttrs.m.Load()); got != maxCachedAttrs {
		t.Errorf("%d entries cached, want %d", got, maxCachedAttrs)
	}
	got := map[string]float64{}
	for _, m := range scrape(t, tel)["quantserve_grpc_requests_total"].GetMetric() {
		got[labelsOf(m)["method"]] = m.GetCounter().GetValue()
	}
	if len(got) != n || got["/s/M0"] != 2 || got[fmt.Sprintf("/s/M%d", n-1)] != 2 || got["/s/M5"] != 1 {
		t.Errorf("%d methods counted (want %d); M0 %v, M%d %v (want 2 each)", len(got), n, got["/s/M0"], n-1, got[fmt.Sprintf("/s/M%d", n-1)])
	}
}

// TestRecordingAllocations: once a label combination has been seen,
// recording a request of it allocates nothing of telemetry's own (the
// measurement options are prepared); what the metrics SDK allocates, if
// anything, is bounded by the same count before and after.
func TestRecordingAllocations(t *testing.T) {
	tel, err := New("v1", "reference")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tel.Request(ctx, "/r", "GET", 200, time.Millisecond)
	tel.Inference(ctx, "m", "1", true)
	tel.InferenceLatency(ctx, "m", "1", time.Millisecond)
	if n := testing.AllocsPerRun(200, func() {
		tel.Request(ctx, "/r", "GET", 200, time.Millisecond)
		tel.Inference(ctx, "m", "1", true)
		tel.InferenceLatency(ctx, "m", "1", time.Millisecond)
	}); n != 0 {
		t.Errorf("recording an inference request allocates %v times, want 0", n)
	}
}
