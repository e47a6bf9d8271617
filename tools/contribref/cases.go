package main

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

const msDomain = "com.microsoft"

// refCase is one reference case: the model quantserve runs (and the
// testdata holds), its inputs, and the model ONNX Runtime runs in its
// place when they differ (the same inputs and outputs, by name and order).
type refCase struct {
	name  string
	graph onnxbuild.Graph
	feed  []*tensor.Tensor // parallel to graph.Inputs
	ort   *onnxbuild.Graph
}

// runtimeGraph returns the model ONNX Runtime runs for c: its own or its
// stand-in, FLOAT16 inputs and outputs behind Casts from and to FLOAT.
func (c refCase) runtimeGraph() onnxbuild.Graph {
	g := c.graph
	if c.ort != nil {
		g = *c.ort
	}
	return viaFloat32(g)
}

// viaFloat32 returns g with each FLOAT16 input and output declared FLOAT
// and Cast to and from FLOAT16 around the nodes.
func viaFloat32(g onnxbuild.Graph) onnxbuild.Graph {
	ren := map[string]string{}
	var pre, post []onnxbuild.Node
	ins, outs := slices.Clone(g.Inputs), slices.Clone(g.Outputs)
	for i, io := range ins {
		if io.DType == tensor.Float16 {
			ren[io.Name] = io.Name + ".f16"
			pre = append(pre, onnxbuild.Node{Op: "Cast", Inputs: []string{io.Name}, Outputs: []string{io.Name + ".f16"},
				Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("to", int64(onnxpb.DataType(10)))}})
			ins[i].DType = tensor.Float32
		}
	}
	for i, io := range outs {
		if io.DType == tensor.Float16 {
			ren[io.Name] = io.Name + ".f16"
			post = append(post, onnxbuild.Node{Op: "Cast", Inputs: []string{io.Name + ".f16"}, Outputs: []string{io.Name},
				Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("to", 1)}})
			outs[i].DType = tensor.Float32
		}
	}
	if len(ren) == 0 {
		return g
	}
	rename := func(names []string) []string {
		r := slices.Clone(names)
		for i, n := range r {
			if m, ok := ren[n]; ok {
				r[i] = m
			}
		}
		return r
	}
	nodes := pre
	for _, n := range g.Nodes {
		n.Inputs, n.Outputs = rename(n.Inputs), rename(n.Outputs)
		nodes = append(nodes, n)
	}
	g.Inputs, g.Outputs, g.Nodes = ins, outs, append(nodes, post...)
	return g
}

// builder assembles one case: graph inputs with their seeded values,
// outputs, com.microsoft nodes.
type builder struct {
	c  refCase
	r  *rand.Rand
	dt tensor.DataType // the case's float type: FLOAT or FLOAT16
}

func newCase(name string, dt tensor.DataType, seed uint64) *builder {
	g := onnxbuild.Graph{Opset: 17, Domains: map[string]int64{msDomain: 1}, Inits: map[string]*tensor.Tensor{}}
	return &builder{c: refCase{name: name, graph: g}, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), dt: dt}
}

// floatTensor returns v as a tensor of the case's float type (rounded to
// float16 for FLOAT16 cases).
func (b *builder) floatTensor(shape []int, v []float32) *tensor.Tensor {
	if b.dt == tensor.Float16 {
		return tensor.From(shape, tensor.Float32ToHalf[tensor.F16](v))
	}
	return tensor.From(shape, v)
}

// normal returns seeded normal values times scale plus offset, the first
// ones replaced by specials.
func (b *builder) normal(n int, scale, offset float64, specials ...float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(b.r.NormFloat64()*scale + offset)
	}
	copy(v, specials)
	return v
}

// in adds a float input of seeded normal values (see normal).
func (b *builder) in(name string, shape []int, scale, offset float64, specials ...float32) string {
	return b.input(name, b.floatTensor(shape, b.normal(numel(shape), scale, offset, specials...)))
}

// input adds an input holding t.
func (b *builder) input(name string, t *tensor.Tensor) string {
	b.c.graph.Inputs = append(b.c.graph.Inputs, onnxbuild.V(name, t.DType, t.Shape...))
	b.c.feed = append(b.c.feed, t)
	return name
}

// init adds an initializer of seeded normal values (see normal).
func (b *builder) init(name string, shape []int, scale, offset float64) string {
	b.c.graph.Inits[name] = b.floatTensor(shape, b.normal(numel(shape), scale, offset))
	return name
}

// out declares an output; shape nil leaves it unstated.
func (b *builder) out(name string, dt tensor.DataType, shape ...int) string {
	b.c.graph.Outputs = append(b.c.graph.Outputs, onnxbuild.IO{Name: name, DType: dt, Shape: shape})
	return name
}

// node appends a com.microsoft node.
func (b *builder) node(op string, in, out []string, attrs ...*onnxpb.Attribute) {
	b.c.graph.Nodes = append(b.c.graph.Nodes, onnxbuild.Node{Op: op, Domain: msDomain, Inputs: in, Outputs: out, Attrs: attrs})
}

func (b *builder) done() refCase { return b.c }

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func dtName(dt tensor.DataType) string {
	if dt == tensor.Float16 {
		return "f16"
	}
	return "f32"
}

// tails are values every activation case includes: zero, the far tails
// and the region where GELU's approximations differ most.
var tails = []float32{0, -0.5, 0.5, -3, 3, -6, 6, -12, 12, 1e-3, -1e-3}

// buildCases returns every case, named after the operator and what the
// case exercises.
func buildCases() []refCase {
	var cs []refCase
	for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float16} {
		cs = append(cs, activationCases(dt)...)
		cs = append(cs, biasAddCases(dt)...)
		cs = append(cs, skipLayerNormCases(dt)...)
		cs = append(cs, rotaryCases(dt)...)
		cs = append(cs, embedLayerNormCases(dt)...)
		cs = append(cs, multiHeadAttentionCases(dt)...)
		cs = append(cs, fusedMatMulCases(dt)...)
		cs = append(cs, attentionCases(dt)...)
	}
	cs = append(cs, blockCase(), bertBlockCase(), bertAttentionBlockCase())
	return cs
}

func activationCases(dt tensor.DataType) []refCase {
	s := dtName(dt)
	var cs []refCase

	b := newCase("gelu_"+s, dt, 1)
	b.node("Gelu", []string{b.in("X", []int{2, 3, 37}, 2.5, 0, tails...)}, []string{b.out("Y", dt, 2, 3, 37)})
	cs = append(cs, b.done())

	b = newCase("fast_gelu_"+s, dt, 2)
	b.node("FastGelu", []string{b.in("X", []int{2, 5, 33}, 2.5, 0, tails...)}, []string{b.out("Y", dt, 2, 5, 33)})
	cs = append(cs, b.done())

	b = newCase("fast_gelu_bias_"+s, dt, 3)
	b.node("FastGelu", []string{b.in("X", []int{3, 7, 19}, 2.5, 0, tails...), b.in("bias", []int{19}, 0.5, 0)},
		[]string{b.out("Y", dt, 3, 7, 19)})
	cs = append(cs, b.done())

	b = newCase("bias_gelu_"+s, dt, 4)
	b.node("BiasGelu", []string{b.in("A", []int{2, 9, 23}, 2.5, 0, tails...), b.in("B", []int{23}, 0.5, 0)},
		[]string{b.out("C", dt, 2, 9, 23)})
	cs = append(cs, b.done())

	b = newCase("bias_gelu_rank1_"+s, dt, 5)
	b.node("BiasGelu", []string{b.in("A", []int{31}, 2.5, 0, tails...), b.in("B", []int{31}, 0.5, 0)},
		[]string{b.out("C", dt, 31)})
	cs = append(cs, b.done())

	b = newCase("quick_gelu_"+s, dt, 6)
	b.node("QuickGelu", []string{b.in("X", []int{4, 41}, 2.5, 0, tails...)}, []string{b.out("Y", dt, 4, 41)})
	cs = append(cs, b.done())

	b = newCase("quick_gelu_alpha_"+s, dt, 7)
	b.node("QuickGelu", []string{b.in("X", []int{3, 3, 17}, 2.5, 0, tails...)}, []string{b.out("Y", dt, 3, 3, 17)},
		onnxbuild.FloatAttr("alpha", -0.75))
	cs = append(cs, b.done())

	b = newCase("quick_gelu_silu_"+s, dt, 8)
	b.node("QuickGelu", []string{b.in("X", []int{5, 13}, 2.5, 0, tails...)}, []string{b.out("Y", dt, 5, 13)},
		onnxbuild.FloatAttr("alpha", 1))
	cs = append(cs, b.done())
	return cs
}

// biasAddCases: BiasAdd's reference is ONNX Runtime's Add(Add(X, bias),
// skip) (ONNX Runtime implements BiasAdd only on CUDA).
func biasAddCases(dt tensor.DataType) []refCase {
	s := dtName(dt)
	var cs []refCase
	for i, shape := range [][]int{{2, 5, 24}, {1, 7, 13}} {
		name := "bias_add_" + s
		if i > 0 {
			name = "bias_add_odd_" + s
		}
		b := newCase(name, dt, uint64(10+i))
		c := shape[2]
		b.node("BiasAdd", []string{b.in("X", shape, 1, 0), b.in("bias", []int{c}, 0.5, 0), b.in("skip", shape, 1, 0)},
			[]string{b.out("Y", dt, shape...)})
		rc := b.done()
		ort := rc.graph
		ort.Nodes = []onnxbuild.Node{
			{Op: "Add", Inputs: []string{"X", "bias"}, Outputs: []string{"X_bias"}},
			{Op: "Add", Inputs: []string{"X_bias", "skip"}, Outputs: []string{"Y"}},
		}
		rc.ort = &ort
		cs = append(cs, rc)
	}
	return cs
}

func skipLayerNormCases(dt tensor.DataType) []refCase {
	s := dtName(dt)
	var cs []refCase
	const sln, ssln = "SkipLayerNormalization", "SkipSimplifiedLayerNormalization"
	const f32 = tensor.Float32

	// Every input and every output.
	b := newCase("skip_layer_norm_"+s, dt, 20)
	b.node(sln, []string{b.in("input", []int{2, 5, 37}, 1, 0.5), b.in("skip", []int{2, 5, 37}, 0.5, 0),
		b.in("gamma", []int{37}, 0.1, 1), b.in("beta", []int{37}, 0.1, 0), b.in("bias", []int{37}, 0.1, 0)},
		[]string{b.out("output", dt, 2, 5, 37), b.out("mean", f32, 2, 5, 1), b.out("inv_std_var", f32, 2, 5, 1),
			b.out("input_skip_bias_sum", dt, 2, 5, 37)},
		onnxbuild.FloatAttr("epsilon", 1e-5))
	cs = append(cs, b.done())

	// No beta, a bias; skip without the batch dimension; epsilon's default.
	b = newCase("skip_layer_norm_bias_no_beta_"+s, dt, 21)
	b.node(sln, []string{b.in("input", []int{3, 6, 29}, 2, -1), b.in("skip", []int{6, 29}, 1, 0),
		b.in("gamma", []int{29}, 0.2, 1), "", b.in("bias", []int{29}, 0.3, 0)},
		[]string{b.out("output", dt, 3, 6, 29)})
	cs = append(cs, b.done())

	// Skip with a batch dimension of 1; gamma and beta only.
	b = newCase("skip_layer_norm_skip_batch1_"+s, dt, 22)
	b.node(sln, []string{b.in("input", []int{2, 3, 16}, 1, 0), b.in("skip", []int{1, 3, 16}, 1, 0),
		b.in("gamma", []int{16}, 0.2, 1), b.in("beta", []int{16}, 0.2, 0)},
		[]string{b.out("output", dt, 2, 3, 16), "", "", b.out("input_skip_bias_sum", dt, 2, 3, 16)},
		onnxbuild.FloatAttr("epsilon", 1e-3))
	cs = append(cs, b.done())

	// Rank 2 (token_count, hidden), gamma only; inv_std_var.
	b = newCase("skip_layer_norm_2d_"+s, dt, 23)
	b.node(sln, []string{b.in("input", []int{7, 45}, 3, 2), b.in("skip", []int{7, 45}, 1, 0), b.in("gamma", []int{45}, 0.2, 1)},
		[]string{b.out("output", dt, 7, 45), "", b.out("inv_std_var", f32, 7, 1)})
	cs = append(cs, b.done())

	// The simplified (RMS) form: inv_std_var and the sum.
	b = newCase("skip_simplified_layer_norm_"+s, dt, 24)
	b.node(ssln, []string{b.in("input", []int{2, 4, 33}, 1, 0.3), b.in("skip", []int{2, 4, 33}, 1, 0), b.in("gamma", []int{33}, 0.1, 1)},
		[]string{b.out("output", dt, 2, 4, 33), "", b.out("inv_std_var", f32, 2, 4, 1), b.out("input_skip_bias_sum", dt, 2, 4, 33)},
		onnxbuild.FloatAttr("epsilon", 1e-6))
	cs = append(cs, b.done())

	// With its bias (input 3); every output, the mean being 0.
	b = newCase("skip_simplified_layer_norm_bias_"+s, dt, 27)
	b.node(ssln, []string{b.in("input", []int{3, 2, 19}, 1, 0), b.in("skip", []int{3, 2, 19}, 1, 0), b.in("gamma", []int{19}, 0.3, 1),
		b.in("bias", []int{19}, 1, 0.5)},
		[]string{b.out("output", dt, 3, 2, 19), b.out("mean", f32, 3, 2, 1), b.out("inv_std_var", f32, 3, 2, 1),
			b.out("input_skip_bias_sum", dt, 3, 2, 19)})
	cs = append(cs, b.done())

	b = newCase("skip_simplified_layer_norm_2d_"+s, dt, 25)
	b.node(ssln, []string{b.in("input", []int{5, 27}, 2, 0), b.in("skip", []int{5, 27}, 1, 0), b.in("gamma", []int{27}, 0.3, 1)},
		[]string{b.out("output", dt, 5, 27)})
	cs = append(cs, b.done())

	b = newCase("skip_simplified_layer_norm_skip_2d_"+s, dt, 26)
	b.node(ssln, []string{b.in("input", []int{3, 5, 21}, 1, 0), b.in("skip", []int{5, 21}, 1, 0), b.in("gamma", []int{21}, 0.3, 1)},
		[]string{b.out("output", dt, 3, 5, 21), "", "", b.out("input_skip_bias_sum", dt, 3, 5, 21)})
	cs = append(cs, b.done())
	return cs
}

// rotaryCaches returns the cos and sin caches [positions, half] of rotary
// embeddings with base 10000 over a rotary dimension of 2·half.
func rotaryCaches(positions, half int) (cos, sin []float32) {
	for p := 0; p < positions; p++ {
		for i := 0; i < half; i++ {
			theta := float64(p) * math.Pow(10000, -float64(2*i)/float64(2*half))
			cos = append(cos, float32(math.Cos(theta)))
			sin = append(sin, float32(math.Sin(theta)))
		}
	}
	return cos, sin
}

// caches adds the cos_cache and sin_cache inputs.
func (b *builder) caches(positions, half int) (string, string) {
	cos, sin := rotaryCaches(positions, half)
	shape := []int{positions, half}
	return b.input("cos_cache", b.floatTensor(shape, cos)), b.input("sin_cache", b.floatTensor(shape, sin))
}

func rotaryCases(dt tensor.DataType) []refCase {
	s := dtName(dt)
	var cs []refCase
	const op = "RotaryEmbedding"
	interleaved := onnxbuild.IntAttr("interleaved", 1)

	// [batch, seq, hidden], heads from the caches' head size, positions
	// per token.
	for _, il := range []bool{false, true} {
		name, attrs := "rotary_"+s, []*onnxpb.Attribute(nil)
		if il {
			name, attrs = "rotary_interleaved_"+s, []*onnxpb.Attribute{interleaved}
		}
		b := newCase(name, dt, 30)
		x := b.in("input", []int{2, 5, 4 * 16}, 1, 0)
		pos := b.input("position_ids", tensor.From([]int{2, 5}, []int64{0, 1, 2, 3, 4, 7, 3, 9, 11, 2}))
		cos, sin := b.caches(12, 8)
		b.node(op, []string{x, pos, cos, sin}, []string{b.out("output", dt, 2, 5, 64)}, attrs...)
		cs = append(cs, b.done())
	}

	// [batch, heads, seq, head_size], one starting position.
	b := newCase("rotary_4d_offset_interleaved_"+s, dt, 31)
	x := b.in("input", []int{2, 3, 5, 10}, 1, 0)
	pos := b.input("position_ids", tensor.From([]int{1}, []int64{2}))
	cos, sin := b.caches(9, 5)
	b.node(op, []string{x, pos, cos, sin}, []string{b.out("output", dt, 2, 3, 5, 10)}, interleaved)
	cs = append(cs, b.done())

	b = newCase("rotary_4d_offset_"+s, dt, 32)
	x = b.in("input", []int{1, 2, 6, 14}, 1, 0)
	pos = b.input("position_ids", tensor.From([]int{1}, []int64{0}))
	cos, sin = b.caches(6, 7)
	b.node(op, []string{x, pos, cos, sin}, []string{b.out("output", dt, 1, 2, 6, 14)})
	cs = append(cs, b.done())

	// A ragged batch packed in one row, longer than the caches (each
	// position within them); scale, which changes nothing.
	b = newCase("rotary_packed_"+s, dt, 34)
	x = b.in("input", []int{1, 7, 2 * 6}, 1, 0)
	pos = b.input("position_ids", tensor.From([]int{1, 7}, []int64{0, 1, 2, 3, 0, 1, 2}))
	cos, sin = b.caches(4, 3)
	b.node(op, []string{x, pos, cos, sin}, []string{b.out("output", dt, 1, 7, 12)},
		onnxbuild.IntAttr("is_packed_batching", 1), onnxbuild.FloatAttr("scale", 0.5))
	cs = append(cs, b.done())

	// A rotary dimension under the head size: the rest passes through.
	for _, il := range []bool{false, true} {
		name, attrs := "rotary_partial_"+s, []*onnxpb.Attribute{onnxbuild.IntAttr("num_heads", 3), onnxbuild.IntAttr("rotary_embedding_dim", 8)}
		if il {
			name, attrs = "rotary_partial_interleaved_"+s, append(attrs, interleaved)
		}
		b := newCase(name, dt, 33)
		x := b.in("input", []int{2, 4, 3 * 12}, 1, 0)
		pos := b.input("position_ids", tensor.From([]int{2, 4}, []int64{5, 4, 3, 2, 0, 1, 2, 3}))
		cos, sin := b.caches(6, 4)
		b.node(op, []string{x, pos, cos, sin}, []string{b.out("output", dt, 2, 4, 36)}, attrs...)
		cs = append(cs, b.done())
	}
	return cs
}

// blockCase chains the operators as an ONNX Runtime-optimized transformer
// layer does, weights as initializers: SkipLayerNormalization (with its
// sum), RotaryEmbedding, FastGelu with a bias, QuickGelu,
// SkipSimplifiedLayerNormalization over the first sum, then Gelu and
// BiasGelu of its output.
func blockCase() refCase {
	b := newCase("block_f32", tensor.Float32, 40)
	const batch, seq, hidden, heads = 2, 6, 24, 3
	f := tensor.Float32
	x := b.in("x", []int{batch, seq, hidden}, 1, 0.2)
	skip := b.in("skip", []int{batch, seq, hidden}, 1, 0)
	b.node("SkipLayerNormalization", []string{x, skip, b.init("ln1.gamma", []int{hidden}, 0.1, 1),
		b.init("ln1.beta", []int{hidden}, 0.1, 0), b.init("ln1.bias", []int{hidden}, 0.1, 0)},
		[]string{"ln1", "", "", "sum1"}, onnxbuild.FloatAttr("epsilon", 1e-5))
	cos, sin := rotaryCaches(16, hidden/heads/2)
	b.c.graph.Inits["cos_cache"] = tensor.From([]int{16, hidden / heads / 2}, cos)
	b.c.graph.Inits["sin_cache"] = tensor.From([]int{16, hidden / heads / 2}, sin)
	b.c.graph.Inits["position_ids"] = tensor.From([]int{1}, []int64{3})
	b.node("RotaryEmbedding", []string{"ln1", "position_ids", "cos_cache", "sin_cache"}, []string{"rot"},
		onnxbuild.IntAttr("interleaved", 1))
	b.node("FastGelu", []string{"rot", b.init("ff.bias", []int{hidden}, 0.3, 0)}, []string{"act"})
	b.node("QuickGelu", []string{"act"}, []string{"qg"})
	b.node("SkipSimplifiedLayerNormalization", []string{"qg", "sum1", b.init("ln2.gamma", []int{hidden}, 0.1, 1)},
		[]string{"ln2"}, onnxbuild.FloatAttr("epsilon", 1e-6))
	b.node("Gelu", []string{"ln2"}, []string{b.out("gelu", f, batch, seq, hidden)})
	b.node("BiasGelu", []string{"ln2", b.init("out.bias", []int{hidden}, 0.3, 0)}, []string{b.out("bias_gelu", f, batch, seq, hidden)})
	b.out("sum1", f, batch, seq, hidden)
	return b.done()
}
