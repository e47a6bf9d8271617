package api

import (
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/quantserve/quantserve/dispatch"
)

// TestMetrics scrapes /metrics after real requests and parses the
// Prometheus text: request counts by route pattern and code, inference
// counts by model and outcome, and the build info naming the kernels.
func TestMetrics(t *testing.T) {
	url := embeddedServer(t)
	good := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	for i := 0; i < 3; i++ {
		do(t, "POST", url+"/v2/models/mnist/infer", good)
	}
	do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 3}, []float32{1, 2, 3}))
	do(t, "GET", url+"/v2/models/nope", "")
	r := do(t, "GET", url+"/metrics", "")
	if r.status != 200 {
		t.Fatalf("/metrics: %d %s", r.status, r.body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(r.body)))
	if err != nil {
		t.Fatalf("not Prometheus text: %v\n%s", err, r.body)
	}
	value := func(family string, labels map[string]string) float64 {
		f := families[family]
		if f == nil {
			t.Fatalf("no metric %s in:\n%s", family, r.body)
		}
		for _, m := range f.Metric {
			match := true
			for k, v := range labels {
				found := false
				for _, l := range m.Label {
					if l.GetName() == k && l.GetValue() == v {
						found = true
					}
				}
				match = match && found
			}
			if match {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
		return 0
	}
	if v := value("quantserve_http_requests_total", map[string]string{"route": "/v2/models/{model}/infer", "method": "POST", "code": "200"}); v != 3 {
		t.Errorf("infer 200s counted %v, want 3", v)
	}
	if v := value("quantserve_http_requests_total", map[string]string{"route": "/v2/models/{model}/infer", "code": "400"}); v != 1 {
		t.Errorf("infer 400s counted %v, want 1", v)
	}
	if v := value("quantserve_http_requests_total", map[string]string{"route": "/v2/models/{model}", "code": "404"}); v != 1 {
		t.Errorf("404s counted %v, want 1", v)
	}
	if v := value("quantserve_inferences_total", map[string]string{"model": "mnist", "version": "1", "outcome": "ok"}); v != 3 {
		t.Errorf("inferences ok %v, want 3", v)
	}
	if v := value("quantserve_inferences_total", map[string]string{"model": "mnist", "outcome": "error"}); v != 1 {
		t.Errorf("inferences failed %v, want 1", v)
	}
	if v := value("quantserve_http_request_duration_seconds", map[string]string{"route": "/v2/models/{model}/infer"}); v != 4 {
		t.Errorf("latency samples %v, want 4", v)
	}
	if v := value("quantserve_build_info", map[string]string{"kernels": dispatch.Default().String(), "version": "test"}); v != 1 {
		t.Errorf("build info %v", v)
	}
}
