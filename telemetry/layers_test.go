package telemetry

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// TestModelLayers scrapes quantserve_model_layers: each version's layers
// split by the kernels they run on, int8 and float32, as ObserveLayers
// reports them.
func TestModelLayers(t *testing.T) {
	tel, err := New("v9", "reference")
	if err != nil {
		t.Fatal(err)
	}
	layers := []ModelLayers{{"a", "1", 54, 4}, {"b", "2", 3, 0}}
	if err := tel.ObserveLayers(func() []ModelLayers { return layers }); err != nil {
		t.Fatal(err)
	}
	if err := tel.ObserveLayers(func() []ModelLayers { return nil }); err != nil { // not registered twice
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
	got := map[[3]string]float64{}
	for _, m := range families["quantserve_model_layers"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		got[[3]string{l["model"], l["version"], l["kernels"]}] = m.GetGauge().GetValue()
	}
	want := map[[3]string]float64{{"a", "1", "int8"}: 4, {"a", "1", "float32"}: 50, {"b", "2", "int8"}: 0, {"b", "2", "float32"}: 3}
	if len(got) != len(want) {
		t.Errorf("quantserve_model_layers: %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("quantserve_model_layers%v = %v (present %v), want %v", k, g, ok, v)
		}
	}
}
