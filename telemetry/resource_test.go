package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const (
	traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanID  = "00f067aa0ba902b7"
)

// TestPropagatorsFromEnv: OTEL_PROPAGATORS chooses which headers carry a
// trace in (tracecontext and baggage without it); a name no propagator
// has is a start-up error.
func TestPropagatorsFromEnv(t *testing.T) {
	headers := map[string]http.Header{
		"tracecontext": {"Traceparent": {"00-" + traceID + "-" + spanID + "-01"}},
		"b3":           {"B3": {traceID + "-" + spanID + "-1"}},
		"b3multi":      {"X-B3-Traceid": {traceID}, "X-B3-Spanid": {spanID}, "X-B3-Sampled": {"1"}},
		"jaeger":       {"Uber-Trace-Id": {traceID + ":" + spanID + ":0:1"}},
	}
	for _, tc := range []struct {
		env     string
		follows []string // the headers it reads (B3 reads both of its encodings)
	}{
		{"", []string{"tracecontext"}},
		{"tracecontext,baggage", []string{"tracecontext"}},
		{"b3", []string{"b3", "b3multi"}},
		{" B3multi , tracecontext", []string{"b3", "b3multi", "tracecontext"}},
		{"jaeger", []string{"jaeger"}},
		{"none", nil},
	} {
		tr, err := NewTracing(t.Context(), func(k string) string {
			if k == "OTEL_PROPAGATORS" {
				return tc.env
			}
			return ""
		}, "v")
		if err != nil {
			t.Fatalf("OTEL_PROPAGATORS=%q: %v", tc.env, err)
		}
		for name, h := range headers {
			sc := trace.SpanContextFromContext(tr.Propagator.Extract(context.Background(), propagation.HeaderCarrier(h)))
			follows := sc.TraceID().String() == traceID && sc.SpanID().String() == spanID
			if want := contains(tc.follows, name); follows != want {
				t.Errorf("OTEL_PROPAGATORS=%q: reads %s headers %v, want %v", tc.env, name, follows, want)
			}
		}
	}
	tr, err := NewTracing(t.Context(), func(string) string { return "" }, "v")
	if err != nil {
		t.Fatal(err)
	}
	ctx := tr.Propagator.Extract(context.Background(), propagation.HeaderCarrier{"Baggage": {"tenant=a"}})
	if got := baggage.FromContext(ctx).Member("tenant").Value(); got != "a" {
		t.Errorf("the default propagators drop baggage: %q", got)
	}
	if _, err := NewTracing(t.Context(), func(k string) string {
		if k == "OTEL_PROPAGATORS" {
			return "tracecontext,carrier-pigeon"
		}
		return ""
	}, "v"); err == nil || !strings.Contains(err.Error(), "OTEL_PROPAGATORS") || !strings.Contains(err.Error(), "carrier-pigeon") {
		t.Errorf("an unknown propagator: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestModelStatesAndTargetInfo scrapes the metrics handler: every model
// version ObserveModels reports shows 1 for its state and 0 for the
// others, a ready version's inference counters are at zero before any
// inference, and target_info names the service as OTEL_SERVICE_NAME says.
func TestModelStatesAndTargetInfo(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
	t.Setenv("OTEL_SERVICE_NAME", "ranker")
	tel, err := New("v9", "reference")
	if err != nil {
		t.Fatal(err)
	}
	states := []ModelState{{"a", "1", "READY"}, {"a", "2", "UNAVAILABLE"}, {"b", "", "LOADING"}, {"c", "3", "UNLOADING"}}
	if err := tel.ObserveModels(func() []ModelState { return states }); err != nil {
		t.Fatal(err)
	}
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
	value := func(family string, labels map[string]string) (float64, bool) {
		for _, m := range families[family].GetMetric() {
			if len(m.Label) != len(labels) {
				continue
			}
			match := true
			for _, l := range m.Label {
				match = match && labels[l.GetName()] == l.GetValue()
			}
			if match {
				if m.Gauge != nil {
					return m.Gauge.GetValue(), true
				}
				return m.Counter.GetValue(), true
			}
		}
		return 0, false
	}
	if n := len(families["quantserve_model_state"].GetMetric()); n != len(states)*len(ModelStates) {
		t.Errorf("%d quantserve_model_state samples, want %d", n, len(states)*len(ModelStates))
	}
	for _, st := range states {
		for _, s := range ModelStates {
			want := 0.0
			if strings.EqualFold(s, st.State) {
				want = 1
			}
			if v, ok := value("quantserve_model_state", map[string]string{"model": st.Model, "version": st.Version, "state": s}); !ok || v != want {
				t.Errorf("%v: state %s = %v (present %v), want %v", st, s, v, ok, want)
			}
		}
	}
	for _, outcome := range []string{"ok", "error"} {
		if v, ok := value("quantserve_inferences_total", map[string]string{"model": "a", "version": "1", "outcome": outcome}); !ok || v != 0 {
			t.Errorf("inferences of a/1 %s: %v (present %v), want 0", outcome, v, ok)
		}
		if _, ok := value("quantserve_inferences_total", map[string]string{"model": "a", "version": "2", "outcome": outcome}); ok {
			t.Errorf("inferences of the unavailable a/2 %s are counted", outcome)
		}
	}
	info := families["target_info"].GetMetric()
	if len(info) != 1 {
		t.Fatalf("target_info: %v", families["target_info"])
	}
	labels := map[string]string{}
	for _, l := range info[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["service_name"] != "ranker" || labels["service_version"] != "v9" || labels["deployment_environment"] != "test" || labels["telemetry_sdk_language"] != "go" {
		t.Errorf("target_info labels %v", labels)
	}
}
