package repository

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// twoProducts is a model of two 128×64 products, each through a Relu: both
// run on the int8 kernels unless something keeps them float32. onnxbuild
// names them MatMul_a and MatMul_c.
func twoProducts() []byte {
	r := rand.New(rand.NewPCG(5, 6))
	w := func() *tensor.Tensor {
		v := make([]float32, 128*64)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.1)
		}
		return tensor.From([]int{128, 64}, v)
	}
	return onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 128)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y1", tensor.Float32, -1, 64), onnxbuild.V("y2", tensor.Float32, -1, 64)},
		Inits:   map[string]*tensor.Tensor{"w1": w(), "w2": w()},
		Nodes: []onnxbuild.Node{
			{Op: "MatMul", Inputs: []string{"x", "w1"}, Outputs: []string{"p1"}},
			{Op: "Relu", Inputs: []string{"p1"}, Outputs: []string{"y1"}},
			{Op: "MatMul", Inputs: []string{"x", "w2"}, Outputs: []string{"p2"}},
			{Op: "Relu", Inputs: []string{"p2"}, Outputs: []string{"y2"}},
		},
	}.Bytes()
}

// TestQuantizeParameters: a config.pbtxt's Triton-style parameters
// quantize (int8 | none) and quantize_exclude (node names) set how a model
// of a real repository directory compiles, and the load log counts the
// layers that run int8. A config.yaml's parameters do the same; values
// that make no sense fail the model's load, saying why.
func TestQuantizeParameters(t *testing.T) {
	param := func(k, v string) string {
		return `parameters { key: "` + k + `" value { string_value: "` + v + `" } } `
	}
	data := twoProducts()
	for _, c := range []struct {
		file, config string
		server       bool   // the server's --quantize int8
		kernels      string // MatMul_a's and MatMul_c's, "|"-joined; or the load error
		log          string
	}{
		{"config.pbtxt", ``, true, "int8 per_channel|int8 per_channel", "int8_layers=2/2"},
		{"config.pbtxt", param("quantize_exclude", "MatMul_a"), true, "float32 (quantize_exclude)|int8 per_channel", "int8_layers=1/2"},
		{"config.pbtxt", param("quantize_exclude", " MatMul_c , MatMul_a"), true, "float32 (quantize_exclude)|float32 (quantize_exclude)", "int8_layers=0/2"},
		{"config.pbtxt", param("quantize", "none"), true, "float32|float32", "int8_layers=0/2"},
		{"config.pbtxt", param("quantize", "int8") + param("quantize_exclude", "MatMul_c"), false, "int8 per_channel|float32 (quantize_exclude)", "int8_layers=1/2"},
		{"config.yaml", "parameters: {quantize_exclude: MatMul_a}\n", true, "float32 (quantize_exclude)|int8 per_channel", "int8_layers=1/2"},
		{"config.yaml", "quantize: none\nparameters: {quantize: none}\n", true, "float32|float32", "int8_layers=0/2"},
		{"config.pbtxt", param("quantize", "fp16"), true, `parameters.quantize "fp16": int8 or none`, ""},
		{"config.pbtxt", param("quantize_exclude", "MatMul_a,,MatMul_c"), true, "none empty", ""},
		{"config.pbtxt", param("quantize_exclude", "matmul_a"), true, `quantize_exclude names "matmul_a", which is not a node of the model`, ""},
		{"config.yaml", "quantize: int8\nparameters: {quantize: none}\n", false, `quantize "int8" and parameters.quantize "none" disagree`, ""},
	} {
		dir := writeFiles(t, map[string][]byte{"m/" + c.file: []byte(c.config), "m/1/model.onnx": data})
		var logs bytes.Buffer
		r, err := Open(dir, Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), Model: model.Options{Quantize: c.server, Scheme: quant.PerChannel}})
		if err != nil {
			t.Fatal(err)
		}
		e := r.Entries()[0]
		if c.log == "" {
			if e.Ready() || e.Err == nil || !strings.Contains(e.Err.Error(), c.kernels) {
				t.Errorf("%s %q: err %v, want one saying %q", c.file, c.config, e.Err, c.kernels)
			}
			continue
		}
		if !e.Ready() {
			t.Errorf("%s %q: %v", c.file, c.config, e.Err)
			continue
		}
		v := e.Versions[0]
		var got []string
		for _, node := range []string{"MatMul_a", "MatMul_c"} {
			i := slices.IndexFunc(v.Model.Layers, func(l model.Layer) bool { return l.Node == node })
			if i < 0 {
				t.Fatalf("%s: no layer in %+v", node, v.Model.Layers)
			}
			got = append(got, v.Model.Layers[i].Kernels)
		}
		if strings.Join(got, "|") != c.kernels || !strings.Contains(logs.String(), c.log) {
			t.Errorf("%s %q: kernels %q, want %q; log %q, want %s", c.file, c.config, got, c.kernels, logs.String(), c.log)
		}
		if strings.Contains(logs.String(), "accepted but not applied") {
			t.Errorf("%s %q: quantize parameters reported as not applied: %s", c.file, c.config, logs.String())
		}
	}
}
