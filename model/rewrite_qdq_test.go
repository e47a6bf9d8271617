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
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// qdqNet builds networks in the QDQ form static quantizers write: every
// activation behind a QuantizeLinear -> DequantizeLinear pair, weights
// INT8 per output channel behind a DequantizeLinear.
type qdqNet struct {
	r     *rand.Rand
	inits map[string]*tensor.Tensor
	nodes []onnxbuild.Node
}

func newQDQNet(seed uint64) *qdqNet {
	return &qdqNet{r: rand.New(rand.NewPCG(seed, 2)), inits: map[string]*tensor.Tensor{}}
}

// weight adds a weight name of m×c/group×3×3 INT8 values with a scale per
// output channel, and its bias: INT32 behind a DequantizeLinear when
// quantized (as quantize_static writes it), FP32 otherwise. It returns
// the values the convolution reads.
func (q *qdqNet) weight(name string, m, c int, quantizedBias bool) (w, b string) {
	v := make([]int8, m*c*9)
	for i := range v {
		v[i] = int8(q.r.IntN(255) - 127)
	}
	s := make([]float32, m)
	for i := range s {
		s[i] = float32(0.002 + 0.01*q.r.Float64())
	}
	q.inits[name+"_q"], q.inits[name+"_s"], q.inits[name+"_z"] = tensor.From([]int{m, c, 3, 3}, v), tensor.From([]int{m}, s), tensor.From([]int{m}, make([]int8, m))
	axis := []*onnxpb.Attribute{onnxbuild.IntAttr("axis", 0)}
	q.nodes = append(q.nodes, onnxbuild.Node{Op: "DequantizeLinear", Inputs: []string{name + "_q", name + "_s", name + "_z"}, Outputs: []string{name}, Attrs: axis})
	if !quantizedBias {
		bias := make([]float32, m)
		for i := range bias {
			bias[i] = float32(q.r.NormFloat64() * 0.3)
		}
		q.inits[name+"_b"] = tensor.From([]int{m}, bias)
		return name, name + "_b"
	}
	bias, bs := make([]int32, m), make([]float32, m)
	for i := range bias {
		bias[i], bs[i] = int32(q.r.IntN(2001)-1000), s[i]*0.02
	}
	q.inits[name+"_bq"], q.inits[name+"_bs"], q.inits[name+"_bz"] = tensor.From([]int{m}, bias), tensor.From([]int{m}, bs), tensor.From([]int{m}, make([]int32, m))
	q.nodes = append(q.nodes, onnxbuild.Node{Op: "DequantizeLinear", Inputs: []string{name + "_bq", name + "_bs", name + "_bz"}, Outputs: []string{name + "_b"}, Attrs: axis})
	return name, name + "_b"
}

// conv adds y = Conv(x) with a new 3×3 weight w (padded, of group
// groups, its bias quantized or not).
func (q *qdqNet) conv(x, w, y string, m, c, group int, quantizedBias bool) string {
	wv, bv := q.weight(w, m, c/group, quantizedBias)
	q.nodes = append(q.nodes, onnxbuild.Node{Op: "Conv", Inputs: []string{x, wv, bv}, Outputs: []string{y},
		Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("pads", 1, 1, 1, 1), onnxbuild.IntAttr("group", int64(group))}})
	return y
}

// qdq adds v's pair through UINT8 with scale s and zero point z and
// returns its output.
func (q *qdqNet) qdq(v string, s float32, z uint8) string {
	q.inits[v+"_qs"], q.inits[v+"_qz"] = tensor.Scalar(s), tensor.Scalar(z)
	q.nodes = append(q.nodes,
		onnxbuild.Node{Op: "QuantizeLinear", Inputs: []string{v, v + "_qs", v + "_qz"}, Outputs: []string{v + "_q"}},
		onnxbuild.Node{Op: "DequantizeLinear", Inputs: []string{v + "_q", v + "_qs", v + "_qz"}, Outputs: []string{v + "_dq"}})
	return v + "_dq"
}

// node adds a node of one output and returns it.
func (q *qdqNet) node(op string, out string, in ...string) string {
	q.nodes = append(q.nodes, onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}})
	return out
}

// graph returns the network with input x of 3 channels and output y of
// 8, both images of any batch.
func (q *qdqNet) graph(outShape ...int) []byte {
	return onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 3, 10, 12)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, append([]int{-1}, outShape...)...)},
		Nodes:   q.nodes,
		Inits:   q.inits,
	}.Bytes()
}

// qdqInput is a batch of two 3×10×12 images.
func qdqInput(seed uint64) map[string]*tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, 2*3*10*12)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return map[string]*tensor.Tensor{"x": tensor.From([]int{2, 3, 10, 12}, x)}
}

// checkQDQBits loads data with the rewrites and without, in float32 and
// with the products on the int8 kernels, checks the rewritten graph's
// steps (the count of each op steps names), and that both answer y alike
// bit for bit, with at least minLevels distinct values.
func checkQDQBits(t *testing.T, data []byte, in map[string]*tensor.Tensor, steps map[string]int, minLevels int) {
	t.Helper()
	for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}} {
		fused, err := model.LoadWith(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]int{}
		for _, s := range fused.Steps() {
			have[s.Op]++
		}
		for op, n := range steps {
			if have[op] != n {
				t.Fatalf("quantize=%v: steps %v, want %d %s", opts.Quantize, have, n, op)
			}
		}
		opts.Unrewritten = true
		plain, err := model.LoadWith(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		a, err := fused.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := plain.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, want := a["y"].Data.([]float32), b["y"].Data.([]float32)
		levels := map[float32]bool{}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("quantize=%v: y[%d] = %v fused, %v unfused", opts.Quantize, i, got[i], want[i])
			}
			levels[want[i]] = true
		}
		if len(levels) < minLevels {
			t.Fatalf("quantize=%v: %d distinct values: too few to compare", opts.Quantize, len(levels))
		}
	}
}

// TestQDQRewrite: a small network (UINT8 pairs, one shared by two
// readers; INT32 biases; the first Relu kept, the second's range the
// pair's; an Add of two quantized branches, then a GlobalAveragePool
// whose output is the graph's): every activation pair runs as one
// QuantizeDequantize, the weights' DequantizeLinears fold so that the
// convolutions absorb the first Relu, the pairs after them and the Add
// with its pair, and the answers are the unrewritten graph's bit for bit,
// in float32 and with the products on the int8 kernels.
func TestQDQRewrite(t *testing.T) {
	q := newQDQNet(4)
	x := q.qdq("x", 0.008, 128)
	a1 := q.qdq(q.node("Relu", "a1", q.conv(x, "w1", "c1", 8, 3, 1, true)), 0.02, 0)
	a2 := q.qdq(q.conv(a1, "w2", "a2", 8, 8, 1, true), 0.03, 0)
	a3 := q.qdq(q.conv(a2, "w3", "a3", 8, 8, 1, true), 0.05, 100)
	a4 := q.qdq(q.node("Add", "a4", a3, a2), 0.04, 90)
	q.node("GlobalAveragePool", "y", a4)
	// The input's pair stays.
	checkQDQBits(t, q.graph(8, 1, 1), qdqInput(8), map[string]int{"QuantizeDequantize": 1, "QuantizeLinear": 0, "DequantizeLinear": 0,
		"FusedConv": 3, "Conv": 0, "Relu": 0, "Add": 0}, 8)
}

// TestQDQRewriteLeaves: a pair whose quantized value something else reads
// too, or whose scale is not a constant, stays as written.
func TestQDQRewriteLeaves(t *testing.T) {
	g := onnxbuild.Graph{
		Opset:  13,
		Inputs: []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 4), onnxbuild.V("s", tensor.Float32)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 4), onnxbuild.V("q", tensor.Uint8, 4),
			onnxbuild.V("y2", tensor.Float32, 4)},
		Nodes: []onnxbuild.Node{
			{Op: "QuantizeLinear", Inputs: []string{"x", "k", "z"}, Outputs: []string{"q"}},
			{Op: "DequantizeLinear", Inputs: []string{"q", "k", "z"}, Outputs: []string{"y"}},
			{Op: "QuantizeLinear", Inputs: []string{"x", "s", "z"}, Outputs: []string{"q2"}},
			{Op: "DequantizeLinear", Inputs: []string{"q2", "k", "z"}, Outputs: []string{"y2"}},
		},
		Inits: map[string]*tensor.Tensor{"k": tensor.Scalar(float32(0.1)), "z": tensor.Scalar(uint8(10))},
	}
	m, err := model.LoadWith(g.Bytes(), model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]int{}
	for _, s := range m.Steps() {
		steps[s.Op]++
	}
	if steps["QuantizeLinear"] != 2 || steps["DequantizeLinear"] != 2 || steps["QuantizeDequantize"] != 0 {
		t.Fatalf("steps %v", steps)
	}
	out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{4}, []float32{-2, 0.04, 0.05, 30}),
		"s": tensor.Scalar(float32(0.1))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// -2/0.1+10 = -10 -> 0; 0.4 -> 0 (ties to even) +10; 0.5 -> 0 + 10; 300+10 -> 255
	want := []float32{-1, 0, 0, 24.5}
	for i, v := range out["y"].Data.([]float32) {
		if math.Abs(float64(v-want[i])) > 1e-6 {
			t.Errorf("y[%d] = %v, want %v", i, v, want[i])
		}
	}
}

// TestQDQRewriteKeepsConvFusion: a pair after a convolution with a float
// weight leaves the convolution free to absorb its Relu, then the pair
// (fused before the pair's node was made), and the answer
// is the unrewritten graph's within one quantization step (the fused
// convolution's sums may round differently).
func TestQDQRewriteKeepsConvFusion(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	w := make([]float32, 4*2*3*3)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.3)
	}
	g := onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1, 2, 6, 6)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 1, 4, 4, 4)},
		Nodes: []onnxbuild.Node{
			{Op: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"c"}},
			{Op: "Relu", Inputs: []string{"c"}, Outputs: []string{"a"}},
			{Op: "QuantizeLinear", Inputs: []string{"a", "s", "z"}, Outputs: []string{"q"}},
			{Op: "DequantizeLinear", Inputs: []string{"q", "s", "z"}, Outputs: []string{"y"}},
		},
		Inits: map[string]*tensor.Tensor{"w": tensor.From([]int{4, 2, 3, 3}, w), "s": tensor.Scalar(float32(0.01)), "z": tensor.Scalar(uint8(0))},
	}
	m, err := model.LoadWith(g.Bytes(), model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, s := range m.Steps() {
		ops = append(ops, s.Op)
	}
	if len(ops) != 1 || ops[0] != "FusedConv" {
		t.Fatalf("steps %v, want one FusedConv", ops)
	}
	plain, err := model.LoadWith(g.Bytes(), model.Options{Unrewritten: true})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 2*6*6)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	in := map[string]*tensor.Tensor{"x": tensor.From([]int{1, 2, 6, 6}, x)}
	a, err := m.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := plain.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range b["y"].Data.([]float32) {
		if d := math.Abs(float64(a["y"].Data.([]float32)[i] - v)); d > 0.0100001 {
			t.Fatalf("y[%d] = %v fused, %v unfused", i, a["y"].Data.([]float32)[i], v)
		}
	}
}

// TestQDQRewriteHardSwish: HardSwish spelled out with a pair after the
// convolution and after each step (Add of 3, an INT8 constant behind a
// DequantizeLinear; Mul; Div by 6 or Mul by 1/6; the Clip removed), as
// quantize_static writes MobileNetV3's, runs
// inside the convolution, a plain and a depthwise one, and the answers
// are the unrewritten graph's bit for bit, in float32 and int8.
func TestQDQRewriteHardSwish(t *testing.T) {
	q := newQDQNet(9)
	q.inits["three_q"], q.inits["three_s"] = tensor.Scalar(int8(127)), tensor.Scalar(float32(3.0/127))
	q.inits["six"], q.inits["sixth"] = tensor.Scalar(float32(6)), tensor.Scalar(float32(1.0/6))
	hardSwish := func(x, y string, div bool) string {
		a := q.qdq(x, 0.04, 120)
		b := q.qdq(q.node("Add", y+"_add", a, "three"), 6.0/255, 0)
		m := q.qdq(q.node("Mul", y+"_mul", b, a), 0.09, 30)
		if div {
			q.node("Div", y, m, "six")
		} else {
			q.node("Mul", y, "sixth", m)
		}
		return q.qdq(y, 0.02, 20)
	}
	// quantize_static writes the Add's constant as a quantized one.
	q.node("DequantizeLinear", "three", "three_q", "three_s")
	x := q.qdq("x", 0.01, 128)
	h1 := hardSwish(q.conv(x, "w1", "c1", 8, 3, 1, false), "h1", true)
	h2 := hardSwish(q.conv(h1, "w2", "c2", 8, 8, 8, false), "h2", false)
	q.node("Identity", "y", h2)
	checkQDQBits(t, q.graph(8, 10, 12), qdqInput(1), map[string]int{"FusedConv": 2, "QuantizeDequantize": 1, "Add": 0, "Mul": 0, "Div": 0,
		"Conv": 0, "DequantizeLinear": 0}, 10)
}

// TestQDQRewriteResidual: residual blocks as quantize_static writes
// ResNet's (conv -> pair -> Sum with another convolution's pair -> Relu
// -> pair; an Add with a pair two readers share; an Add without Relu or
// a pair after it; a depthwise convolution; a residual broadcast from a
// pooled value) run inside the convolutions, and the answers are the
// unrewritten graph's bit for bit, in float32 and int8.
func TestQDQRewriteResidual(t *testing.T) {
	q := newQDQNet(11)
	x := q.qdq("x", 0.01, 128)
	a1 := q.qdq(q.node("Relu", "a1", q.conv(x, "w1", "c1", 8, 3, 1, true)), 0.02, 0)
	// Block 1: two branches, summed.
	b1 := q.qdq(q.conv(q.qdq(q.conv(a1, "w2", "c2", 8, 8, 1, true), 0.02, 0), "w3", "c3", 8, 8, 1, true), 0.03, 130)
	s1 := q.qdq(q.conv(a1, "w4", "c4", 8, 8, 1, true), 0.025, 120)
	r1 := q.qdq(q.node("Relu", "r1", q.node("Sum", "s1", b1, s1)), 0.03, 0)
	// Block 2: the block's input is its shortcut too.
	b2 := q.qdq(q.conv(r1, "w5", "c5", 8, 8, 1, true), 0.04, 128)
	r2 := q.qdq(q.node("Relu", "r2", q.node("Add", "s2", r1, b2)), 0.035, 0)
	// Block 3: depthwise, no Relu; then an Add with no pair after it.
	b3 := q.qdq(q.conv(r2, "w6", "c6", 8, 8, 8, false), 0.03, 128)
	r3 := q.qdq(q.node("Add", "s3", b3, r2), 0.05, 128)
	b4 := q.qdq(q.conv(r3, "w7", "c7", 8, 8, 1, true), 0.04, 128)
	s4 := q.node("Add", "s4", b4, r3)
	// Block 4: the residual a pooled [N, 8, 1, 1] value, broadcast.
	g := q.node("GlobalAveragePool", "g", s4)
	b5 := q.qdq(q.conv(s4, "w8", "c8", 8, 8, 1, true), 0.04, 128)
	r5 := q.qdq(q.node("Relu", "r5", q.node("Add", "s5", b5, g)), 0.03, 0)
	q.node("Identity", "y", r5)
	checkQDQBits(t, q.graph(8, 10, 12), qdqInput(3), map[string]int{"FusedConv": 8, "QuantizeDequantize": 1, "Add": 0, "Sum": 0, "Relu": 0,
		"Conv": 0}, 20)
}

// TestQDQRewriteSqueezeExcite: a squeeze-and-excitation block as
// quantize_static writes MobileNetV3's (the image's pair, the pool's, the
// scale's after HardSigmoid, and a pair between the Mul and the
// convolution reading the scaled image): the Mul and that last pair run
// inside the convolution (its input stage), the depthwise output stays
// channels-last for the pool and the scaled convolution, and the answers
// are the unrewritten graph's bit for bit, in float32 and int8.
func TestQDQRewriteSqueezeExcite(t *testing.T) {
	q := newQDQNet(13)
	x := q.qdq("x", 0.01, 128)
	c1 := q.qdq(q.conv(x, "w1", "c1", 8, 3, 1, false), 0.03, 128)
	dw := q.qdq(q.conv(c1, "w2", "c2", 8, 8, 8, false), 0.03, 128)
	p := q.qdq(q.node("GlobalAveragePool", "p", dw), 0.02, 128)
	a := q.qdq(q.node("Relu", "a", q.conv(p, "w3", "c3", 8, 8, 1, false)), 0.02, 0)
	hs := q.qdq(q.node("HardSigmoid", "hs", q.qdq(q.conv(a, "w4", "c4", 8, 8, 1, false), 0.03, 128)), 1.0/255, 0)
	sx := q.qdq(q.node("Mul", "sx", dw, hs), 0.02, 100)
	y := q.qdq(q.conv(sx, "w5", "c5", 8, 8, 1, false), 0.05, 128)
	q.node("Identity", "y", y)
	data := q.graph(8, 10, 12)
	checkQDQBits(t, data, qdqInput(5), map[string]int{"FusedConv": 5, "QuantizeDequantize": 3, "Mul": 0, "HardSigmoid": 1,
		"GlobalAveragePool": 1, "Conv": 0}, 20)
	m, err := model.LoadWith(data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var convs []*conv.FusedConvAttrs
	for _, s := range m.Steps() {
		if s.Op == conv.FusedConvType {
			convs = append(convs, s.Params.(*conv.FusedConvAttrs))
		}
	}
	dwc, scaled := convs[1], convs[4]
	if !slices.Equal(scaled.Fused[:2], []string{"Mul", "QuantizeDequantize"}) || len(scaled.InQDQScales) != 2 {
		t.Errorf("the scaled convolution fused %q with input pair %v, want the Mul and the pair first", scaled.Fused, scaled.InQDQScales)
	}
	if !dwc.NHWCOut || !scaled.NHWCIn {
		t.Errorf("the image written channels-last %v, read so %v; want both", dwc.NHWCOut, scaled.NHWCIn)
	}
}
