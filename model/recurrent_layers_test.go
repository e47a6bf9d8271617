package model_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

func randFloats(r *rand.Rand, scale float64, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return tensor.From(shape, v)
}

// TestRecurrentLayers: a model's recurrent layers (ops/rnn) report their
// input projections in the model's Layers, on the int8 kernels when the
// model is quantized and W is large enough, and run with the weights the
// compiler no longer feeds them.
func TestRecurrentLayers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const seq, batch, hidden = 3, 2, 64
	for _, c := range []struct {
		op           string
		gates, input int
		opts         model.Options
		kernels      string
	}{
		{"RNN", 1, 64, model.Options{Quantize: true, Scheme: quant.PerChannel}, "int8 per_channel"},
		{"GRU", 3, 64, model.Options{Quantize: true, Scheme: quant.PerChannel}, "int8 per_channel"},
		{"LSTM", 4, 64, model.Options{Quantize: true, Scheme: quant.PerChannel}, "int8 per_channel"},
		{"LSTM", 4, 64, model.Options{}, "float32"},
		{"GRU", 3, 4, model.Options{Quantize: true, Scheme: quant.PerChannel}, "float32"}, // too small to pay
	} {
		g := onnxbuild.Graph{
			Opset:   22,
			Inputs:  []onnxbuild.IO{onnxbuild.V("X", tensor.Float32, -1, -1, c.input)},
			Outputs: []onnxbuild.IO{onnxbuild.V("Y", tensor.Float32), onnxbuild.V("Y_h", tensor.Float32)},
			Nodes: []onnxbuild.Node{{Op: c.op, Inputs: []string{"X", "W", "R", "B"}, Outputs: []string{"Y", "Y_h"},
				Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("hidden_size", hidden),
					onnxbuild.StringAttr("direction", "bidirectional")}}},
			Inits: map[string]*tensor.Tensor{
				"W": randFloats(r, 0.1, 2, c.gates*hidden, c.input), "R": randFloats(r, 0.1, 2, c.gates*hidden, hidden),
				"B": randFloats(r, 0.1, 2, 2*c.gates*hidden)},
		}
		m, err := model.LoadWith(g.Bytes(), c.opts)
		if err != nil {
			t.Fatal(err)
		}
		want := model.Layer{Node: c.op + "_a", Op: c.op, K: c.input, N: c.gates * hidden, Kernels: c.kernels + " (input projections; recurrent products float32)"}
		if len(m.Layers) != 1 || m.Layers[0] != want {
			t.Errorf("%s %+v: layers %+v, want %+v", c.op, c.opts, m.Layers, want)
		}
		out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"X": randFloats(r, 1, seq, batch, c.input)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if y := out["Y"]; !slices.Equal(y.Shape, []int{seq, 2, batch, hidden}) {
			t.Errorf("%s: Y %v", c.op, y.Shape)
		}
	}
}
