package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/tensor"
)

// TestConvBoundRewrite: a convolution followed by Max or Min with a
// one-element constant (after its activation or straight after it) runs
// as one FusedConv whose output stage bounds the values, and answers bit
// for bit as the graph as written (NaN, -0 and +0 included); the rewrite
// leaves the Max or Min alone when its other input is not a one-element
// constant, is NaN, or another node or the caller also reads the value it
// bounds.
func TestConvBoundRewrite(t *testing.T) {
	const c, m, hw = 8, 16, 12
	r := rand.New(rand.NewPCG(7, 8))
	scalar := func(v float32) *tensor.Tensor { return tensor.From([]int{1}, []float32{v}) }
	inits := map[string]*tensor.Tensor{
		"w": randFloats(r, 0.3, m, c, 3, 3), "b": randFloats(r, 0.1, m), "w2": randFloats(r, 0.3, m, m, 3, 3),
		"lo": scalar(-0.4), "hi": scalar(0.5), "zero": scalar(0), "negzero": scalar(float32(math.Copysign(0, -1))),
		"nan": scalar(float32(math.NaN())), "perchannel": randFloats(r, 1, m, 1, 1), "lo3": tensor.From([]int{1, 1, 1}, []float32{-0.25}),
	}
	pads := onnxbuild.IntsAttr("pads", 1, 1, 1, 1)
	conv := func(x, w, out string) onnxbuild.Node {
		return onnxbuild.Node{Op: "Conv", Inputs: []string{x, w, "b"}, Outputs: []string{out}, Attrs: []*onnxpb.Attribute{pads}}
	}
	leaky := func(x, out string, alpha float32) onnxbuild.Node {
		return onnxbuild.Node{Op: "LeakyRelu", Inputs: []string{x}, Outputs: []string{out}, Attrs: []*onnxpb.Attribute{onnxbuild.FloatAttr("alpha", alpha)}}
	}
	op := func(typ, a, b, out string) onnxbuild.Node {
		return onnxbuild.Node{Op: typ, Inputs: []string{a, b}, Outputs: []string{out}}
	}
	for _, tc := range []struct {
		name    string
		nodes   []onnxbuild.Node
		extra   []string // graph outputs besides y
		steps   []string // the ops the rewritten graph runs
		bounded int      // fused convolutions that bound their output
	}{
		{"conv leaky max, conv min", []onnxbuild.Node{conv("x", "w", "c1"), leaky("c1", "a1", 0.2), op("Max", "a1", "lo", "m1"), conv("m1", "w2", "c2"), op("Min", "c2", "hi", "y")},
			nil, []string{"FusedConv", "FusedConv"}, 2},
		{"constant first", []onnxbuild.Node{conv("x", "w", "c1"), leaky("c1", "a1", 0.2), op("Max", "lo", "a1", "y")}, nil, []string{"FusedConv"}, 1},
		{"conv min", []onnxbuild.Node{conv("x", "w", "c1"), op("Min", "c1", "hi", "y")}, nil, []string{"FusedConv"}, 1},
		{"relu max rank 3", []onnxbuild.Node{conv("x", "w", "c1"), {Op: "Relu", Inputs: []string{"c1"}, Outputs: []string{"a1"}}, op("Max", "a1", "lo3", "y")}, nil, []string{"FusedConv"}, 1},
		{"-0 max +0", []onnxbuild.Node{conv("x", "w", "c1"), leaky("c1", "a1", 0), op("Max", "a1", "zero", "y")}, nil, []string{"FusedConv"}, 1},
		{"+0 min -0", []onnxbuild.Node{conv("x", "w", "c1"), {Op: "Relu", Inputs: []string{"c1"}, Outputs: []string{"a1"}}, op("Min", "a1", "negzero", "y")}, nil, []string{"FusedConv"}, 1},
		{"NaN bound", []onnxbuild.Node{conv("x", "w", "c1"), leaky("c1", "a1", 0.2), op("Max", "a1", "nan", "y")}, nil, []string{"FusedConv", "Max"}, 0},
		{"per-channel bound", []onnxbuild.Node{conv("x", "w", "c1"), leaky("c1", "a1", 0.2), op("Max", "a1", "perchannel", "y")}, nil, []string{"FusedConv", "Max"}, 0},
		{"input bound", []onnxbuild.Node{conv("x", "w", "c1"), leaky("c1", "a1", 0.2), op("Max", "a1", "s", "y")}, nil, []string{"FusedConv", "Max"}, 0},
		{"activation read twice", []onnxbuild.Node{conv("x", "w", "c1"), leaky("c1", "a1", 0.2), op("Max", "a1", "lo", "y")}, []string{"a1"}, []string{"FusedConv", "Max"}, 0},
		{"conv read twice", []onnxbuild.Node{conv("x", "w", "c1"), op("Min", "c1", "hi", "y")}, []string{"c1"}, []string{"Conv", "Min"}, 0},
	} {
		outs := []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 1, m, hw, hw)}
		for _, e := range tc.extra {
			outs = append(outs, onnxbuild.V(e, tensor.Float32, 1, m, hw, hw))
		}
		g := onnxbuild.Graph{
			Opset:   13,
			Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1, c, hw, hw), onnxbuild.V("s", tensor.Float32, 1)},
			Outputs: outs,
			Nodes:   tc.nodes,
			Inits:   inits,
		}
		x := randFloats(r, 1, 1, c, hw, hw)
		xv := x.Data.([]float32)
		xv[5], xv[100] = float32(math.NaN()), 0 // a NaN spreads to its neighbours' outputs
		in := map[string]*tensor.Tensor{"x": x, "s": scalar(0.1)}
		var got [2]map[string]*tensor.Tensor
		for i, unrewritten := range []bool{false, true} {
			mod, err := model.LoadWith(g.Bytes(), model.Options{Unrewritten: unrewritten})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !unrewritten {
				var ops []string
				for _, s := range mod.Steps() {
					ops = append(ops, s.Op)
				}
				if !slices.Equal(ops, tc.steps) {
					t.Errorf("%s: steps %v, want %v", tc.name, ops, tc.steps)
				}
				if n := fusedBounds(mod); n != tc.bounded {
					t.Errorf("%s: %d fused convolutions bound their output, want %d", tc.name, n, tc.bounded)
				}
			}
			if got[i], err = mod.Run(context.Background(), in, nil); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		var nans, negZeros int
		for name, want := range got[1] {
			gv, wv := got[0][name].Data.([]float32), want.Data.([]float32)
			for j := range wv {
				if math.Float32bits(gv[j]) != math.Float32bits(wv[j]) {
					t.Fatalf("%s: %s[%d] = %v (%#x), as written %v (%#x)", tc.name, name, j, gv[j], math.Float32bits(gv[j]), wv[j], math.Float32bits(wv[j]))
				}
				if wv[j] != wv[j] {
					nans++
				}
				if math.Float32bits(wv[j]) == 1<<31 {
					negZeros++
				}
			}
		}
		if nans == 0 {
			t.Errorf("%s: no NaN reached the output", tc.name)
		}
		if tc.name == "+0 min -0" && negZeros == 0 {
			t.Errorf("%s: no -0 in the output", tc.name)
		}
	}
}

// fusedBounds counts the fused convolutions of m that fold a Max or Min.
func fusedBounds(m *model.Model) int {
	n := 0
	for _, s := range m.Steps() {
		if a, ok := s.Params.(*conv.FusedConvAttrs); ok && s.Op == conv.FusedConvType && a.Bound != "" {
			n++
		}
	}
	return n
}
