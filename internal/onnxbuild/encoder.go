package onnxbuild

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// EncoderConfig sizes a BERT-style transformer encoder. With Vocab 0 the
// encoder takes embeddings instead of token ids: input "x" FP32 [batch,
// seq, hidden] (for gradients with respect to the input).
type EncoderConfig struct {
	Vocab, Seq, Hidden, Heads, Layers int
	Seed                              uint64
	// Spelled writes the encoder as exporters do below opset 17 (opset
	// 14): each LayerNormalization as ReduceMean, Sub, Pow, ReduceMean,
	// Add, Sqrt, Div, Mul, Add and each Gelu as Div, Erf, Add, Mul, Mul,
	// the same functions.
	Spelled bool
}

// DefaultEncoder is the encoder the tests and benchmarks use: hidden 256,
// 4 heads, 4 layers, sequences of 128 tokens from a 1,000-token vocabulary.
var DefaultEncoder = EncoderConfig{Vocab: 1000, Seq: 128, Hidden: 256, Heads: 4, Layers: 4, Seed: 1}

// Encoder builds a pre-LayerNorm transformer encoder from plain ONNX
// operators (opset 20): token embedding Gather plus learned positions,
// then per layer LayerNormalization, multi-head self-attention from
// MatMul, Transpose, Reshape and Softmax, a residual Add, LayerNormalization
// and a GELU feed-forward block of 4·hidden, another residual Add; a final
// LayerNormalization. Input "input_ids" INT64 [batch, seq]; output
// "hidden" FP32 [batch, seq, hidden]. Weights are seeded normal values
// scaled as trained encoders' are (0.02 for projections).
func Encoder(c EncoderConfig) Graph {
	r := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	h, hd := c.Hidden, c.Hidden/c.Heads
	input := V("input_ids", tensor.Int64, -1, c.Seq)
	if c.Vocab == 0 {
		input = V("x", tensor.Float32, -1, c.Seq, h)
	}
	g := Graph{
		Opset:   map[bool]int64{false: 20, true: 14}[c.Spelled],
		Inputs:  []IO{input},
		Outputs: []IO{V("hidden", tensor.Float32, -1, c.Seq, h)},
		Inits:   map[string]*tensor.Tensor{},
	}
	param := func(name string, scale float64, shape ...int) string {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		g.Inits[name] = tensor.From(shape, v)
		return name
	}
	constant := func(name string, shape []int, v float32) string {
		n := 1
		for _, d := range shape {
			n *= d
		}
		d := make([]float32, n)
		for i := range d {
			d[i] = v
		}
		g.Inits[name] = tensor.From(shape, d)
		return name
	}
	ints := func(name string, v ...int64) string {
		g.Inits[name] = tensor.From([]int{len(v)}, v)
		return name
	}
	node := func(op string, in []string, out string, attrs ...*onnxpb.Attribute) string {
		g.Nodes = append(g.Nodes, Node{Op: op, Inputs: in, Outputs: []string{out}, Attrs: attrs})
		return out
	}
	lastAxis := &onnxpb.Attribute{Name: "axes", Type: onnxpb.AttrInts, Ints: []int64{-1}}
	layerNorm := func(x, name string) string {
		if c.Spelled {
			m := node("ReduceMean", []string{x}, name+".mean", lastAxis)
			d := node("Sub", []string{x, m}, name+".centered")
			v := node("Pow", []string{d, constant(name+".two", nil, 2)}, name+".squared")
			v = node("ReduceMean", []string{v}, name+".variance", lastAxis)
			v = node("Add", []string{v, constant(name+".eps", nil, 1e-5)}, name+".variance_eps")
			v = node("Sqrt", []string{v}, name+".std")
			y := node("Div", []string{d, v}, name+".normalized")
			y = node("Mul", []string{y, constant(name+".gamma", []int{h}, 1)}, name+".scaled")
			return node("Add", []string{y, constant(name+".beta", []int{h}, 0)}, name)
		}
		return node("LayerNormalization", []string{x, constant(name+".gamma", []int{h}, 1), constant(name+".beta", []int{h}, 0)}, name,
			IntAttr("axis", -1), &onnxpb.Attribute{Name: "epsilon", Type: onnxpb.AttrFloat, F: 1e-5})
	}
	linear := func(x, name string, in, out int) string {
		y := node("MatMul", []string{x, param(name+".weight", 0.02*math.Sqrt(256/float64(in)), in, out)}, name+".mm")
		return node("Add", []string{y, constant(name+".bias", []int{out}, 0.01)}, name)
	}
	perm := func(p ...int64) *onnxpb.Attribute {
		return &onnxpb.Attribute{Name: "perm", Type: onnxpb.AttrInts, Ints: p}
	}
	heads := ints("heads_shape", 0, 0, int64(c.Heads), int64(hd))
	merged := ints("merged_shape", 0, 0, int64(h))
	scale := constant("attention_scale", nil, float32(1/math.Sqrt(float64(hd))))

	x := "x"
	if c.Vocab > 0 {
		x = node("Gather", []string{param("embeddings", 1, c.Vocab, h), "input_ids"}, "tokens")
	}
	x = node("Add", []string{x, param("positions", 0.1, c.Seq, h)}, "embedded")
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("layer%d", l)
		a := layerNorm(x, p+".ln1")
		split := func(name string) string {
			y := linear(a, p+"."+name, h, h)
			y = node("Reshape", []string{y, heads}, p+"."+name+".heads")
			return node("Transpose", []string{y}, p+"."+name+".t", perm(0, 2, 1, 3)) // [b, heads, s, hd]
		}
		q, k, v := split("q"), split("k"), split("v")
		kt := node("Transpose", []string{k}, p+".kt", perm(0, 1, 3, 2))
		s := node("MatMul", []string{q, kt}, p+".scores")
		s = node("Mul", []string{s, scale}, p+".scaled")
		s = node("Softmax", []string{s}, p+".probs", IntAttr("axis", -1))
		o := node("MatMul", []string{s, v}, p+".context")
		o = node("Transpose", []string{o}, p+".context.t", perm(0, 2, 1, 3))
		o = node("Reshape", []string{o, merged}, p+".context.merged")
		o = linear(o, p+".out", h, h)
		x = node("Add", []string{x, o}, p+".residual1")
		f := layerNorm(x, p+".ln2")
		f = linear(f, p+".ff1", h, 4*h)
		if c.Spelled {
			e := node("Div", []string{f, constant(p+".sqrt2", nil, float32(math.Sqrt2))}, p+".gelu.arg")
			e = node("Erf", []string{e}, p+".gelu.erf")
			e = node("Add", []string{e, constant(p+".one", nil, 1)}, p+".gelu.sum")
			f = node("Mul", []string{f, e}, p+".gelu.product")
			f = node("Mul", []string{f, constant(p+".half", nil, 0.5)}, p+".gelu")
		} else {
			f = node("Gelu", []string{f}, p+".gelu")
		}
		f = linear(f, p+".ff2", 4*h, h)
		x = node("Add", []string{x, f}, p+".residual2")
	}
	x = layerNorm(x, "final_ln")
	g.Nodes[len(g.Nodes)-1].Outputs = []string{"hidden"}
	return g
}

// EncoderInput returns seeded token ids [batch, seq] for an encoder.
func EncoderInput(c EncoderConfig, batch int, seed uint64) *tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 7))
	ids := make([]int64, batch*c.Seq)
	for i := range ids {
		ids[i] = r.Int64N(int64(c.Vocab))
	}
	return tensor.From([]int{batch, c.Seq}, ids)
}
