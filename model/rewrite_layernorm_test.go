package model_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestLayerNormRewrite: layer normalization spelled out as exporters
// write it below opset 17 (axes as an attribute, or from opset 18 as an
// input; the square as Pow or Mul; with and without the shift) runs as
// one LayerNormalization after the product before it and computes what
// the graph as written does; near misses (another axis, a value read
// elsewhere, a scale that is not a vector) stay as written or, where what
// is left is one, run as an RMS normalization.
func TestLayerNormRewrite(t *testing.T) {
	const m, k, n = 6, 64, 48
	r := rand.New(rand.NewPCG(7, 8))
	scalar := func(v float32) *tensor.Tensor { return tensor.From([]int{}, []float32{v}) }
	inits := map[string]*tensor.Tensor{
		"w": randFloats(r, 1, k, n), "gamma": randFloats(r, 1, n), "beta": randFloats(r, 1, n), "gamma2": randFloats(r, 1, 1, n),
		"eps": scalar(1e-12), "two": scalar(2), "last": tensor.From([]int{1}, []int64{-1}), "first": tensor.From([]int{1}, []int64{1}),
	}
	nd := func(op, out string, in ...string) onnxbuild.Node {
		return onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}}
	}
	axes := func(v int64) []*onnxpb.Attribute {
		return []*onnxpb.Attribute{{Name: "axes", Type: onnxpb.AttrInts, Ints: []int64{v}}}
	}
	mean := func(out, in string, axis int64) onnxbuild.Node {
		return onnxbuild.Node{Op: "ReduceMean", Inputs: []string{in}, Outputs: []string{out}, Attrs: axes(axis)}
	}
	spelled := func(opset int64, axis int64, square onnxbuild.Node, affine ...onnxbuild.Node) []onnxbuild.Node {
		ns := []onnxbuild.Node{nd("MatMul", "x", "a", "w")}
		if opset >= 18 {
			ns = append(ns, nd("ReduceMean", "m", "x", "last"))
		} else {
			ns = append(ns, mean("m", "x", axis))
		}
		ns = append(ns, nd("Sub", "d", "x", "m"), square)
		if opset >= 18 {
			ns = append(ns, nd("ReduceMean", "v", "sq", "last"))
		} else {
			ns = append(ns, mean("v", "sq", axis))
		}
		ns = append(ns, nd("Add", "ve", "v", "eps"), nd("Sqrt", "s", "ve"), nd("Div", "nrm", "d", "s"))
		return append(ns, affine...)
	}
	pow := nd("Pow", "sq", "d", "two")
	affine := []onnxbuild.Node{nd("Mul", "sc", "nrm", "gamma"), nd("Add", "y", "sc", "beta")}
	written := []string{"MatMul", "ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"}
	for _, c := range []struct {
		name  string
		opset int64
		nodes []onnxbuild.Node
		steps []string
	}{
		{"opset 14", 14, spelled(14, -1, pow, affine...), []string{"MatMul", "LayerNormalization"}},
		{"opset 18, axes input", 18, spelled(18, -1, pow, affine...), []string{"MatMul", "LayerNormalization"}},
		{"Mul square, scale first, no shift", 13, spelled(13, -1, nd("Mul", "sq", "d", "d"), nd("Mul", "y", "gamma", "nrm")), []string{"MatMul", "LayerNormalization"}},
		{"another axis", 14, spelled(14, 0, pow, affine...), written},
		{"a scale of rank 2", 14, spelled(14, -1, pow, nd("Mul", "sc", "nrm", "gamma2"), nd("Add", "y", "sc", "beta")), written},
		// d/√(mean(d²) + eps)·gamma is the RMS normalization of d.
		{"the difference read elsewhere", 14, spelled(14, -1, pow, nd("Mul", "sc", "nrm", "gamma"), nd("Add", "sb", "sc", "beta"), nd("Add", "y", "sb", "d")),
			[]string{"MatMul", "ReduceMean", "Sub", "RMSNormalization", "Add", "Add"}},
	} {
		g := onnxbuild.Graph{
			Opset:   c.opset,
			Inputs:  []onnxbuild.IO{onnxbuild.V("a", tensor.Float32, m, k)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, m, n)},
			Nodes:   c.nodes,
			Inits:   inits,
		}
		checkRewritten(t, c.name, g.Bytes(), map[string]*tensor.Tensor{"a": randFloats(r, 1, m, k)}, c.steps)
	}
}

// TestRMSNormRewrite: RMS normalization spelled out as exporters write it
// below opset 23 (the square as Pow or Mul, the division as Div, as a
// product with Reciprocal or with Div(1, s), the scale on either side)
// runs as one RMSNormalization and computes what the graph as written
// does; near misses stay as written.
func TestRMSNormRewrite(t *testing.T) {
	const m, k, n = 6, 64, 48
	r := rand.New(rand.NewPCG(11, 12))
	scalar := func(v float32) *tensor.Tensor { return tensor.From([]int{}, []float32{v}) }
	inits := map[string]*tensor.Tensor{
		"w": randFloats(r, 1, k, n), "gamma": randFloats(r, 1, n), "gamma2": randFloats(r, 1, 1, n),
		"eps": scalar(1e-6), "two": scalar(2), "one": scalar(1), "three": scalar(3),
	}
	nd := func(op, out string, in ...string) onnxbuild.Node {
		return onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}}
	}
	axes := []*onnxpb.Attribute{{Name: "axes", Type: onnxpb.AttrInts, Ints: []int64{-1}}}
	spelled := func(square onnxbuild.Node, rest ...onnxbuild.Node) []onnxbuild.Node {
		return append([]onnxbuild.Node{nd("MatMul", "x", "a", "w"), square,
			{Op: "ReduceMean", Inputs: []string{"sq"}, Outputs: []string{"v"}, Attrs: axes},
			nd("Add", "ve", "eps", "v"), nd("Sqrt", "s", "ve")}, rest...)
	}
	pow := nd("Pow", "sq", "x", "two")
	for _, c := range []struct {
		name  string
		nodes []onnxbuild.Node
		steps []string
	}{
		{"Reciprocal", spelled(pow, nd("Reciprocal", "inv", "s"), nd("Mul", "nrm", "x", "inv"), nd("Mul", "y", "gamma", "nrm")), []string{"MatMul", "RMSNormalization"}},
		{"Div(1, s), Mul(x, x)", spelled(nd("Mul", "sq", "x", "x"), nd("Div", "inv", "one", "s"), nd("Mul", "nrm", "inv", "x"), nd("Mul", "y", "nrm", "gamma")), []string{"MatMul", "RMSNormalization"}},
		{"Div(x, s)", spelled(pow, nd("Div", "nrm", "x", "s"), nd("Mul", "y", "nrm", "gamma")), []string{"MatMul", "RMSNormalization"}},
		{"a cube", spelled(nd("Pow", "sq", "x", "three"), nd("Div", "nrm", "x", "s"), nd("Mul", "y", "nrm", "gamma")),
			[]string{"MatMul", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul"}},
		{"a scale of rank 2", spelled(pow, nd("Div", "nrm", "x", "s"), nd("Mul", "y", "nrm", "gamma2")),
			[]string{"MatMul", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul"}},
	} {
		g := onnxbuild.Graph{
			Opset:   17,
			Inputs:  []onnxbuild.IO{onnxbuild.V("a", tensor.Float32, m, k)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, m, n)},
			Nodes:   c.nodes,
			Inits:   inits,
		}
		checkRewritten(t, c.name, g.Bytes(), map[string]*tensor.Tensor{"a": randFloats(r, 1, m, k)}, c.steps)
	}
}

// BenchmarkSpelledLayerNorm runs layer normalization as PyTorch exports
// it below opset 17, and RMS normalization as below opset 23 (the
// Reciprocal form), over 128 tokens of 768 features (BERT-base's), as one
// LayerNormalization or RMSNormalization and as written.
func BenchmarkSpelledLayerNorm(b *testing.B) {
	const m, n = 128, 768
	r := rand.New(rand.NewPCG(9, 10))
	nd := func(op, out string, in ...string) onnxbuild.Node {
		return onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}}
	}
	axes := []*onnxpb.Attribute{{Name: "axes", Type: onnxpb.AttrInts, Ints: []int64{-1}}}
	inits := map[string]*tensor.Tensor{"gamma": randFloats(r, 1, n), "beta": randFloats(r, 1, n),
		"eps": tensor.From([]int{}, []float32{1e-12}), "two": tensor.From([]int{}, []float32{2})}
	for _, form := range []struct {
		name  string
		nodes []onnxbuild.Node
	}{
		{"", []onnxbuild.Node{{Op: "ReduceMean", Inputs: []string{"x"}, Outputs: []string{"m"}, Attrs: axes}, nd("Sub", "d", "x", "m"),
			nd("Pow", "sq", "d", "two"), {Op: "ReduceMean", Inputs: []string{"sq"}, Outputs: []string{"v"}, Attrs: axes},
			nd("Add", "ve", "v", "eps"), nd("Sqrt", "s", "ve"), nd("Div", "nrm", "d", "s"), nd("Mul", "sc", "nrm", "gamma"), nd("Add", "y", "sc", "beta")}},
		{"rms-", []onnxbuild.Node{nd("Pow", "sq", "x", "two"), {Op: "ReduceMean", Inputs: []string{"sq"}, Outputs: []string{"v"}, Attrs: axes},
			nd("Add", "ve", "eps", "v"), nd("Sqrt", "s", "ve"), nd("Reciprocal", "inv", "s"), nd("Mul", "nrm", "x", "inv"), nd("Mul", "y", "gamma", "nrm")}},
	} {
		g := onnxbuild.Graph{
			Opset:   14,
			Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, m, n)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, m, n)},
			Nodes:   form.nodes,
			Inits:   inits,
		}
		in := map[string]*tensor.Tensor{"x": randFloats(r, 1, m, n)}
		for _, unrewritten := range []bool{false, true} {
			mod, err := model.LoadWith(g.Bytes(), model.Options{Unrewritten: unrewritten})
			if err != nil {
				b.Fatal(err)
			}
			name := form.name + "rewritten"
			if unrewritten {
				name = form.name + "as-written"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := mod.Run(context.Background(), in, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
