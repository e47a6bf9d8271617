package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

// logAndRelu is a model of three 128×64 products: MatMul_a's result goes
// to a Log (it stays float32: "feeds Log"), MatMul_c's and MatMul_e's
// through a Relu (int8 unless the config excludes them).
func logAndRelu() []byte {
	r := rand.New(rand.NewPCG(8, 9))
	w := func() *tensor.Tensor {
		v := make([]float32, 128*64)
		for i := range v {
			v[i] = 0.01 + r.Float32()
		}
		return tensor.From([]int{128, 64}, v)
	}
	return onnxbuild.Graph{
		Inputs: []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 128)},
		Outputs: []onnxbuild.IO{onnxbuild.V("log", tensor.Float32, -1, 64), onnxbuild.V("r1", tensor.Float32, -1, 64),
			onnxbuild.V("r2", tensor.Float32, -1, 64)},
		Inits: map[string]*tensor.Tensor{"w1": w(), "w2": w(), "w3": w()},
		Nodes: []onnxbuild.Node{
			{Op: "MatMul", Inputs: []string{"x", "w1"}, Outputs: []string{"p1"}},
			{Op: "Log", Inputs: []string{"p1"}, Outputs: []string{"log"}},
			{Op: "MatMul", Inputs: []string{"x", "w2"}, Outputs: []string{"p2"}},
			{Op: "Relu", Inputs: []string{"p2"}, Outputs: []string{"r1"}},
			{Op: "MatMul", Inputs: []string{"x", "w3"}, Outputs: []string{"p3"}},
			{Op: "Relu", Inputs: []string{"p3"}, Outputs: []string{"r2"}},
		},
	}.Bytes()
}

// reportLayer is a layer as GET .../config reports it; Int8 is whether
// quantserve.int8_nodes names it.
type reportLayer struct {
	Node, Kernels string
	Int8          bool
}

// reportWant is what a model's report says: its layers (nil: not
// checked one by one), how many run int8, and /config's quantserve section
// ("": not checked whole).
type reportWant struct {
	layers  []reportLayer
	int8    int
	section string
}

// TestQuantizationReport serves a real repository directory over HTTP: a
// model the policy and its config.pbtxt keep partly float32, and the same
// model with quantize none. Each layer's decision and reason are in
// GET .../config, and the load log, the metadata's int8_layers, /config's
// quantserve section and /metrics' quantserve_model_layers count the same
// int8 layers.
func TestQuantizationReport(t *testing.T) {
	param := func(k, v string) string {
		return `parameters { key: "` + k + `" value { string_value: "` + v + `" } } `
	}
	checkReport(t, map[string][]byte{"policy": logAndRelu(), "plain": logAndRelu()},
		map[string]string{"policy": param("quantize_exclude", "MatMul_c"), "plain": param("quantize", "none")},
		map[string]reportWant{
			"policy": {[]reportLayer{{"MatMul_a", "float32 (feeds Log)", false}, {"MatMul_c", "float32 (quantize_exclude)", false}, {"MatMul_e", "int8 per_channel", true}}, 1,
				`{"quantize":"int8","scheme":"per_channel","quantize_exclude":["MatMul_c"],"layers":3,"int8_layers":1,"int8_nodes":["MatMul_e"]}`},
			"plain": {[]reportLayer{{"MatMul_a", "float32", false}, {"MatMul_c", "float32", false}, {"MatMul_e", "float32", false}}, 0,
				`{"quantize":"none","quantize_exclude":[],"layers":3,"int8_layers":0,"int8_nodes":[]}`},
		})
}

// TestQuantizationReportPaddleOCR: the PaddleOCR classifier of ../shared
// runs 4 of its 54 layers in int8 (the others are its input layer,
// depthwise and small convolutions, float32 all), and every report says
// 4, not the 53 a count of "not exactly float32" gave; with quantize none
// they say 0.
func TestQuantizationReportPaddleOCR(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(shareddata.Dir(t, "models"), "paddleocr_cls_mobile_v2", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, map[string][]byte{"paddle": data, "paddle_f32": data},
		map[string]string{"paddle_f32": `parameters { key: "quantize" value { string_value: "none" } }`},
		map[string]reportWant{
			"paddle":     {nil, 4, ""},
			"paddle_f32": {nil, 0, `{"quantize":"none","quantize_exclude":[],"layers":54,"int8_layers":0,"int8_nodes":[]}`},
		})
}

// checkReport serves models (version 1 each, with their config.pbtxt) on
// the server's defaults (int8, per channel) and checks every report of
// their layers against want.
func checkReport(t *testing.T, models map[string][]byte, configs map[string]string, want map[string]reportWant) {
	t.Helper()
	versions := map[string]map[int][]byte{}
	for name, data := range models {
		versions[name] = map[int][]byte{1: data}
	}
	dir := writeRepo(t, versions, nil)
	for name, cfg := range configs {
		if err := os.WriteFile(filepath.Join(dir, name, "config.pbtxt"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	opts := serverOptions()
	opts.Log = slog.New(slog.NewTextHandler(&logs, nil))
	repo, err := repository.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	url := testServer(t, repo, 0)
	metrics := do(t, "GET", url+"/metrics", "")
	parser := expfmt.NewTextParser(pmodel.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(metrics.body))
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	gauge := func(model, kernels string) float64 {
		for _, m := range families["quantserve_model_layers"].GetMetric() {
			l := map[string]string{}
			for _, p := range m.Label {
				l[p.GetName()] = p.GetValue()
			}
			if l["model"] == model && l["version"] == "1" && l["kernels"] == kernels {
				return m.GetGauge().GetValue()
			}
		}
		t.Errorf("no quantserve_model_layers{model=%q,kernels=%q} in /metrics", model, kernels)
		return -1
	}
	for name, w := range want {
		r := do(t, "GET", url+"/v2/models/"+name+"/config", "")
		var cfg struct {
			Quantization []reportLayer
			Quantserve   json.RawMessage
		}
		var section struct {
			Int8Nodes []string `json:"int8_nodes"`
		}
		if err := json.Unmarshal(r.body, &cfg); err != nil || r.status != 200 || json.Unmarshal(cfg.Quantserve, &section) != nil {
			t.Fatalf("%s config: %d %s", name, r.status, r.body)
		}
		if w.section != "" && string(cfg.Quantserve) != w.section {
			t.Errorf("%s config: quantserve %s, want %s", name, cfg.Quantserve, w.section)
		}
		n := 0
		for i := range cfg.Quantization {
			l := &cfg.Quantization[i]
			l.Int8 = slices.Contains(section.Int8Nodes, l.Node)
			if l.Int8 != strings.HasPrefix(l.Kernels, "int8 ") {
				t.Errorf("%s config: layer %+v", name, l)
			}
			if l.Int8 {
				n++
			}
		}
		if n != w.int8 || len(section.Int8Nodes) != n || w.layers != nil && fmt.Sprint(cfg.Quantization) != fmt.Sprint(w.layers) {
			t.Errorf("%s config: layers %+v (%d int8), want %+v (%d int8)", name, cfg.Quantization, n, w.layers, w.int8)
		}
		layers := len(cfg.Quantization)
		md := do(t, "GET", url+"/v2/models/"+name, "")
		var meta struct{ Parameters map[string]any }
		if err := json.Unmarshal(md.body, &meta); err != nil || md.status != 200 {
			t.Fatalf("%s metadata: %d %s", name, md.status, md.body)
		}
		if meta.Parameters["int8_layers"] != float64(w.int8) || meta.Parameters["layers"] != float64(layers) {
			t.Errorf("%s metadata: parameters %v, want int8_layers %d of %d", name, meta.Parameters, w.int8, layers)
		}
		loaded := ""
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `msg="model loaded" model=`+name+" ") {
				loaded = line
			}
		}
		if !strings.Contains(loaded, fmt.Sprintf(" int8_layers=%d/%d ", w.int8, layers)) {
			t.Errorf("%s: load log %q, want int8_layers=%d/%d", name, loaded, w.int8, layers)
		}
		if i8, f32 := gauge(name, "int8"), gauge(name, "float32"); i8 != float64(w.int8) || f32 != float64(layers-w.int8) {
			t.Errorf("%s /metrics: %v int8 and %v float32 layers, want %d and %d", name, i8, f32, w.int8, layers-w.int8)
		}
	}
}

// TestQuantizeOverrideOnLoad: a load request's config (Triton's repository
// extension) sets quantize and quantize_exclude for that load, and values
// that make no sense are a 400 naming what is wrong, the model still
// served as before.
func TestQuantizeOverrideOnLoad(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"m": {1: logAndRelu()}}, nil)
	url := adminServer(t, openRepo(t, dir), adminToken)
	load := func(params string) response {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"parameters": map[string]any{"config": `{"name": "m", "parameters": {` + params + `}}`}})
		return doWith(t, "POST", url+"/v2/repository/models/m/load", string(body), map[string]string{"Authorization": "Bearer " + adminToken})
	}
	int8Nodes := func() string {
		t.Helper()
		r := do(t, "GET", url+"/v2/models/m/config", "")
		var c struct {
			Quantserve struct {
				Int8Nodes []string `json:"int8_nodes"`
			}
		}
		if err := json.Unmarshal(r.body, &c); err != nil || r.status != 200 {
			t.Fatalf("config: %d %s", r.status, r.body)
		}
		return strings.Join(c.Quantserve.Int8Nodes, ",")
	}
	if got := int8Nodes(); got != "MatMul_c,MatMul_e" {
		t.Fatalf("from the server's defaults: int8 nodes %q", got)
	}
	if r := load(`"quantize_exclude": {"string_value": "MatMul_e"}`); r.status != 200 {
		t.Fatalf("load excluding MatMul_e: %d %s", r.status, r.body)
	}
	if got := int8Nodes(); got != "MatMul_c" {
		t.Errorf("excluding MatMul_e: int8 nodes %q, want MatMul_c", got)
	}
	if r := load(`"quantize": {"string_value": "none"}`); r.status != 200 {
		t.Fatalf("load with quantize none: %d %s", r.status, r.body)
	}
	if got := int8Nodes(); got != "" {
		t.Errorf("quantize none: int8 nodes %q, want none", got)
	}
	wantError(t, load(`"quantize": {"string_value": "int4"}`), 400, `parameters.quantize "int4": int8 or none`)
	wantError(t, load(`"quantize_exclude": {"string_value": "MatMul_x"}`), 400, `quantize_exclude names "MatMul_x"`)
	if got := int8Nodes(); got != "" {
		t.Errorf("after refused loads: int8 nodes %q, want the last good load's (none)", got)
	}
}
