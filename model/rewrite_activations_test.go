package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestGeluRewrite: GELU spelled out as exporters write it (the exact and
// the tanh form, and Hugging Face's gelu_fast, in several orders and associations, constants as
// initializers or Constant nodes, below and at opset 20) runs as one Gelu,
// which the product before it takes in, and computes what the graph as
// written does; patterns that differ (a constant off, an intermediate
// value read elsewhere) stay as written.
func TestGeluRewrite(t *testing.T) {
	const m, k, n = 4, 96, 100
	r := rand.New(rand.NewPCG(3, 4))
	scalar := func(v float32) *tensor.Tensor { return tensor.From([]int{}, []float32{v}) }
	inits := map[string]*tensor.Tensor{
		"w": randFloats(r, 1, k, n), "bias": randFloats(r, 1, n),
		"half": scalar(0.5), "one": scalar(1), "sqrt2": scalar(float32(math.Sqrt2)), "invsqrt2": scalar(float32(1 / math.Sqrt2)),
		"k": scalar(float32(math.Sqrt(2 / math.Pi))), "c": scalar(0.044715), "three": scalar(3), "almost_half": scalar(0.51),
	}
	nd := func(op, out string, in ...string) onnxbuild.Node {
		return onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}}
	}
	constant := func(out string, v float32) onnxbuild.Node {
		return onnxbuild.Node{Op: "Constant", Outputs: []string{out},
			Attrs: []*onnxpb.Attribute{{Name: "value", Type: onnxpb.AttrTensor, T: model.TensorToONNX(out, scalar(v))}}}
	}
	product := []onnxbuild.Node{nd("MatMul", "p", "x", "w"), nd("Add", "h", "p", "bias")}
	exact := func(arg onnxbuild.Node, last ...onnxbuild.Node) []onnxbuild.Node {
		return append(append(slices.Clone(product), arg, nd("Erf", "e", "g"), nd("Add", "s", "e", "one")), last...)
	}
	tanh := func(cube []onnxbuild.Node, last ...onnxbuild.Node) []onnxbuild.Node {
		ns := append(slices.Clone(product), cube...)
		ns = append(ns, nd("Mul", "t3", "c", "cube"), nd("Add", "u", "h", "t3"), nd("Mul", "g", "u", "k"),
			nd("Tanh", "th", "g"), nd("Add", "s", "one", "th"))
		return append(ns, last...)
	}
	// Hugging Face's gelu_fast: Tanh(√(2/π)·x·(1 + 0.044715·x·x)).
	fast := func(arg []onnxbuild.Node, last ...onnxbuild.Node) []onnxbuild.Node {
		ns := append(slices.Clone(product), arg...)
		ns = append(ns, nd("Tanh", "th", "g"), nd("Add", "s", "one", "th"))
		return append(ns, last...)
	}
	div := nd("Div", "g", "h", "sqrt2")
	halfFirst := []onnxbuild.Node{nd("Mul", "hx", "h", "half"), nd("Mul", "y", "hx", "s")}
	for _, c := range []struct {
		name  string
		opset int64
		nodes []onnxbuild.Node
		steps []string
	}{
		{"exact, x·0.5 first", 14, exact(div, halfFirst...), []string{"Linear"}},
		{"exact, (x·s)·0.5", 14, exact(div, nd("Mul", "xs", "s", "h"), nd("Mul", "y", "xs", "half")), []string{"Linear"}},
		{"exact, x·(0.5·s)", 20, exact(nd("Mul", "g", "invsqrt2", "h"), nd("Mul", "hs", "half", "s"), nd("Mul", "y", "h", "hs")), []string{"Linear"}},
		{"exact, Constant nodes", 17, append([]onnxbuild.Node{constant("cs", float32(math.Sqrt2)), constant("ch", 0.5)},
			exact(nd("Div", "g", "h", "cs"), nd("Mul", "hx", "h", "ch"), nd("Mul", "y", "hx", "s"))...), []string{"Linear"}},
		{"tanh, Pow", 14, tanh([]onnxbuild.Node{nd("Pow", "cube", "h", "three")}, halfFirst...), []string{"Linear"}},
		{"tanh, x·(x·x)", 13, tanh([]onnxbuild.Node{nd("Mul", "sq", "h", "h"), nd("Mul", "cube", "h", "sq")},
			nd("Mul", "xs", "h", "s"), nd("Mul", "y", "half", "xs")), []string{"Linear"}},
		{"tanh, (x·x)·x", 14, tanh([]onnxbuild.Node{nd("Mul", "sq", "h", "h"), nd("Mul", "cube", "sq", "h")}, halfFirst...), []string{"Linear"}},
		{"gelu_fast as traced", 14, fast([]onnxbuild.Node{nd("Mul", "hk", "h", "k"), nd("Mul", "ch", "c", "h"), nd("Mul", "chh", "ch", "h"),
			nd("Add", "d", "one", "chh"), nd("Mul", "g", "hk", "d")}, halfFirst...), []string{"Linear"}},
		{"gelu_fast, k·(x·(x·(x·c) + 1))", 14, fast([]onnxbuild.Node{nd("Mul", "hc", "h", "c"), nd("Mul", "hhc", "h", "hc"),
			nd("Add", "d", "hhc", "one"), nd("Mul", "hd", "h", "d"), nd("Mul", "g", "k", "hd")}, halfFirst...), []string{"Linear"}},
		{"gelu_fast of x·bias", 14, fast([]onnxbuild.Node{nd("Mul", "hk", "h", "k"), nd("Mul", "ch", "c", "h"), nd("Mul", "chh", "ch", "bias"),
			nd("Add", "d", "one", "chh"), nd("Mul", "g", "hk", "d")}, halfFirst...),
			[]string{"Linear", "Mul", "Mul", "Mul", "Add", "Mul", "Tanh", "Add", "Mul", "Mul"}},
		{"gelu_fast without the 1", 14, fast([]onnxbuild.Node{nd("Mul", "hk", "h", "k"), nd("Mul", "ch", "c", "h"), nd("Mul", "chh", "ch", "h"),
			nd("Add", "d", "half", "chh"), nd("Mul", "g", "hk", "d")}, halfFirst...),
			[]string{"Linear", "Mul", "Mul", "Mul", "Add", "Mul", "Tanh", "Add", "Mul", "Mul"}},
		{"a constant off", 14, exact(div, nd("Mul", "hx", "h", "almost_half"), nd("Mul", "y", "hx", "s")),
			[]string{"Linear", "Div", "Erf", "Add", "Mul", "Mul"}},
		{"the sum read twice", 14, exact(div, nd("Mul", "hx", "h", "half"), nd("Mul", "y0", "hx", "s"), nd("Add", "y", "y0", "s")),
			[]string{"Linear", "Div", "Erf", "Add", "Mul", "Mul", "Add"}},
	} {
		g := onnxbuild.Graph{
			Opset:   c.opset,
			Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, m, k)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, m, n)},
			Nodes:   c.nodes,
			Inits:   inits,
		}
		x := randFloats(r, 1, m, k)
		xv := x.Data.([]float32)
		xv[0], xv[1] = 40, -40 // rows whose products reach both tails
		in := map[string]*tensor.Tensor{"x": x}
		checkRewritten(t, c.name, g.Bytes(), in, c.steps)
	}
}

// BenchmarkSpelledGelu runs a transformer's feed-forward first half as
// PyTorch exports it below opset 20 (MatMul, bias Add, GELU in five or
// eight elementary operators, or SiLU as Sigmoid and Mul) on 128 tokens
// of 256 features into 1,024 (SiLU also on one token), int8 weights,
// rewritten (one Linear, or Linear and Gelu) and as written.
func BenchmarkSpelledGelu(b *testing.B) {
	const m, k, n = 128, 256, 1024
	r := rand.New(rand.NewPCG(5, 6))
	scalar := func(v float32) *tensor.Tensor { return tensor.From([]int{}, []float32{v}) }
	nd := func(op, out string, in ...string) onnxbuild.Node {
		return onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}}
	}
	product := []onnxbuild.Node{nd("MatMul", "p", "x", "w"), nd("Add", "h", "p", "bias")}
	half := []onnxbuild.Node{nd("Mul", "hx", "h", "half"), nd("Mul", "y", "hx", "s")}
	for _, c := range []struct {
		name  string
		nodes []onnxbuild.Node
	}{
		{"erf", append(append(slices.Clone(product), nd("Div", "g", "h", "sqrt2"), nd("Erf", "e", "g"), nd("Add", "s", "e", "one")), half...)},
		{"tanh", append(append(slices.Clone(product), nd("Pow", "cube", "h", "three"), nd("Mul", "t3", "c", "cube"), nd("Add", "u", "h", "t3"),
			nd("Mul", "g", "u", "k"), nd("Tanh", "th", "g"), nd("Add", "s", "one", "th")), half...)},
		{"silu", append(slices.Clone(product), nd("Sigmoid", "sg", "h"), nd("Mul", "y", "h", "sg"))},
		{"silu-1-token", append(slices.Clone(product), nd("Sigmoid", "sg", "h"), nd("Mul", "y", "h", "sg"))},
	} {
		m := m
		if strings.HasSuffix(c.name, "-1-token") {
			m = 1
		}
		g := onnxbuild.Graph{
			Opset:   14,
			Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, m, k)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, m, n)},
			Nodes:   c.nodes,
			Inits: map[string]*tensor.Tensor{"w": randFloats(r, 0.1, k, n), "bias": randFloats(r, 1, n), "half": scalar(0.5), "one": scalar(1),
				"sqrt2": scalar(float32(math.Sqrt2)), "k": scalar(float32(math.Sqrt(2 / math.Pi))), "c": scalar(0.044715), "three": scalar(3)},
		}
		in := map[string]*tensor.Tensor{"x": randFloats(r, 1, m, k)}
		for _, unrewritten := range []bool{false, true} {
			mod, err := model.LoadWith(g.Bytes(), model.Options{Quantize: true, Scheme: quant.PerChannel, Unrewritten: unrewritten})
			if err != nil {
				b.Fatal(err)
			}
			name := c.name + "/rewritten"
			if unrewritten {
				name = c.name + "/as-written"
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
