package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// qdqCNN is a small convolutional network in the QDQ form static
// quantizers write: every activation behind a QuantizeLinear ->
// DequantizeLinear pair (UINT8, one shared by two readers), weights INT8
// per output channel behind a DequantizeLinear, biases INT32; the first
// Relu kept (the second's range is the pair's), an Add of two quantized
// branches, then a GlobalAveragePool whose output is the graph's.
func qdqCNN() onnxbuild.Graph {
	r := rand.New(rand.NewPCG(4, 2))
	w := func(m, c int) (*tensor.Tensor, *tensor.Tensor, *tensor.Tensor) {
		q := make([]int8, m*c*9)
		for i := range q {
			q[i] = int8(r.IntN(255) - 127)
		}
		s := make([]float32, m)
		for i := range s {
			s[i] = float32(0.002 + 0.01*r.Float64())
		}
		return tensor.From([]int{m, c, 3, 3}, q), tensor.From([]int{m}, s), tensor.From([]int{m}, make([]int8, m))
	}
	inits := map[string]*tensor.Tensor{}
	for _, l := range []struct {
		name string
		m, c int
	}{{"w1", 8, 3}, {"w2", 8, 8}, {"w3", 8, 8}} {
		inits[l.name+"_q"], inits[l.name+"_s"], inits[l.name+"_z"] = w(l.m, l.c)
		b := make([]int32, l.m)
		for i := range b {
			b[i] = int32(r.IntN(2001) - 1000)
		}
		inits[l.name+"_b"], inits[l.name+"_bz"] = tensor.From([]int{l.m}, b), tensor.From([]int{l.m}, make([]int32, l.m))
		inits[l.name+"_bs"] = tensor.From([]int{l.m}, make([]float32, l.m))
		for i, s := range inits[l.name+"_s"].Data.([]float32) {
			inits[l.name+"_bs"].Data.([]float32)[i] = s * 0.02
		}
	}
	for name, p := range map[string]struct {
		s float32
		z uint8
	}{"x": {0.008, 128}, "a1": {0.02, 0}, "a2": {0.03, 0}, "a3": {0.05, 100}, "a4": {0.04, 90}, "y": {0.01, 3}} {
		inits[name+"_s"], inits[name+"_z"] = tensor.Scalar(p.s), tensor.Scalar(p.z)
	}
	axis := onnxbuild.IntAttr("axis", 0)
	pads := onnxbuild.IntsAttr("pads", 1, 1, 1, 1)
	qdq := func(v string) []onnxbuild.Node {
		return []onnxbuild.Node{
			{Op: "QuantizeLinear", Inputs: []string{v, v + "_s", v + "_z"}, Outputs: []string{v + "_q"}},
			{Op: "DequantizeLinear", Inputs: []string{v + "_q", v + "_s", v + "_z"}, Outputs: []string{v + "_dq"}},
		}
	}
	conv := func(x, w, y string) []onnxbuild.Node {
		return []onnxbuild.Node{
			{Op: "DequantizeLinear", Inputs: []string{w + "_q", w + "_s", w + "_z"}, Outputs: []string{w}, Attrs: []*onnxpb.Attribute{axis}},
			{Op: "DequantizeLinear", Inputs: []string{w + "_b", w + "_bs", w + "_bz"}, Outputs: []string{w + "_bias"}, Attrs: []*onnxpb.Attribute{axis}},
			{Op: "Conv", Inputs: []string{x, w, w + "_bias"}, Outputs: []string{y}, Attrs: []*onnxpb.Attribute{pads}},
		}
	}
	var nodes []onnxbuild.Node
	add := func(n ...[]onnxbuild.Node) {
		for _, l := range n {
			nodes = append(nodes, l...)
		}
	}
	add(qdq("x"), conv("x_dq", "w1", "c1"), []onnxbuild.Node{{Op: "Relu", Inputs: []string{"c1"}, Outputs: []string{"a1"}}}, qdq("a1"),
		conv("a1_dq", "w2", "a2"), qdq("a2"), conv("a2_dq", "w3", "a3"), qdq("a3"),
		[]onnxbuild.Node{{Op: "Add", Inputs: []string{"a3_dq", "a2_dq"}, Outputs: []string{"a4"}}}, qdq("a4"),
		[]onnxbuild.Node{{Op: "GlobalAveragePool", Inputs: []string{"a4_dq"}, Outputs: []string{"y"}}})
	return onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 3, 10, 12)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, 8, 1, 1)},
		Nodes:   nodes,
		Inits:   inits,
	}
}

// TestQDQRewrite: every activation pair of a QDQ network runs as one
// QuantizeDequantize, the weights' DequantizeLinears fold so that the
// convolutions absorb the first Relu and the pairs after them, and the
// answers are the unrewritten graph's bit for bit, in float32 and with
// the products on the int8 kernels.
func TestQDQRewrite(t *testing.T) {
	data := qdqCNN().Bytes()
	r := rand.New(rand.NewPCG(8, 1))
	x := make([]float32, 2*3*10*12)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	in := map[string]*tensor.Tensor{"x": tensor.From([]int{2, 3, 10, 12}, x)}
	for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}} {
		fused, err := model.LoadWith(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		steps := map[string]int{}
		for _, s := range fused.Steps() {
			steps[s.Op]++
		}
		// Each convolution absorbs the pair after it (the first its Relu
		// too); the input's and the Add's pairs stay.
		if steps["QuantizeDequantize"] != 2 || steps["QuantizeLinear"] != 0 || steps["DequantizeLinear"] != 0 || steps["FusedConv"] != 3 || steps["Conv"] != 0 || steps["Relu"] != 0 {
			t.Fatalf("quantize=%v: steps %v", opts.Quantize, steps)
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
		nonzero := 0
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("quantize=%v: y[%d] = %v fused, %v unfused", opts.Quantize, i, got[i], want[i])
			}
			if want[i] != 0 {
				nonzero++
			}
		}
		if nonzero < len(want)/2 {
			t.Fatalf("quantize=%v: y = %v: the network computes too little to compare", opts.Quantize, want)
		}
	}
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
	r := rand.New(rand.NewPCG(9, 4))
	inits := map[string]*tensor.Tensor{
		"three_q": tensor.Scalar(int8(127)), "three_s": tensor.Scalar(float32(3.0 / 127)), "six": tensor.Scalar(float32(6)),
		"sixth": tensor.Scalar(float32(1.0 / 6)),
	}
	weight := func(name string, m, c int) {
		q := make([]int8, m*c*9)
		for i := range q {
			q[i] = int8(r.IntN(255) - 127)
		}
		s := make([]float32, m)
		for i := range s {
			s[i] = float32(0.003 + 0.01*r.Float64())
		}
		inits[name+"_q"], inits[name+"_s"], inits[name+"_z"] = tensor.From([]int{m, c, 3, 3}, q), tensor.From([]int{m}, s), tensor.From([]int{m}, make([]int8, m))
		b := make([]float32, m)
		for i := range b {
			b[i] = float32(r.NormFloat64() * 0.3)
		}
		inits[name+"_b"] = tensor.From([]int{m}, b)
	}
	weight("w1", 8, 3)
	weight("w2", 8, 1)
	var nodes []onnxbuild.Node
	qdq := func(v string, s float32, z uint8) string {
		inits[v+"_qs"], inits[v+"_qz"] = tensor.Scalar(s), tensor.Scalar(z)
		nodes = append(nodes,
			onnxbuild.Node{Op: "QuantizeLinear", Inputs: []string{v, v + "_qs", v + "_qz"}, Outputs: []string{v + "_q"}},
			onnxbuild.Node{Op: "DequantizeLinear", Inputs: []string{v + "_q", v + "_qs", v + "_qz"}, Outputs: []string{v + "_dq"}})
		return v + "_dq"
	}
	conv := func(x, w, y string, group int64) {
		nodes = append(nodes,
			onnxbuild.Node{Op: "DequantizeLinear", Inputs: []string{w + "_q", w + "_s", w + "_z"}, Outputs: []string{w}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("axis", 0)}},
			onnxbuild.Node{Op: "Conv", Inputs: []string{x, w, w + "_b"}, Outputs: []string{y},
				Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("pads", 1, 1, 1, 1), onnxbuild.IntAttr("group", group)}})
	}
	hardSwish := func(x, y string, div bool) string {
		a := qdq(x, 0.04, 120)
		b := qdq(y+"_add", 6.0/255, 0)
		nodes = append(nodes[:len(nodes)-2], append([]onnxbuild.Node{{Op: "Add", Inputs: []string{a, "three"}, Outputs: []string{y + "_add"}}}, nodes[len(nodes)-2:]...)...)
		m := qdq(y+"_mul", 0.09, 30)
		nodes = append(nodes[:len(nodes)-2], append([]onnxbuild.Node{{Op: "Mul", Inputs: []string{b, a}, Outputs: []string{y + "_mul"}}}, nodes[len(nodes)-2:]...)...)
		if div {
			nodes = append(nodes, onnxbuild.Node{Op: "Div", Inputs: []string{m, "six"}, Outputs: []string{y}})
		} else {
			nodes = append(nodes, onnxbuild.Node{Op: "Mul", Inputs: []string{"sixth", m}, Outputs: []string{y}})
		}
		return qdq(y, 0.02, 20)
	}
	// quantize_static writes the Add's constant as a quantized one.
	nodes = append(nodes, onnxbuild.Node{Op: "DequantizeLinear", Inputs: []string{"three_q", "three_s"}, Outputs: []string{"three"}})
	x := qdq("x", 0.01, 128)
	conv(x, "w1", "c1", 1)
	h1 := hardSwish("c1", "h1", true)
	conv(h1, "w2", "c2", 8)
	h2 := hardSwish("c2", "h2", false)
	nodes = append(nodes, onnxbuild.Node{Op: "Identity", Inputs: []string{h2}, Outputs: []string{"y"}})
	g := onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 3, 10, 12)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, 8, 10, 12)},
		Nodes:   nodes,
		Inits:   inits,
	}
	data := g.Bytes()
	xv := make([]float32, 2*3*10*12)
	for i := range xv {
		xv[i] = float32(r.NormFloat64())
	}
	in := map[string]*tensor.Tensor{"x": tensor.From([]int{2, 3, 10, 12}, xv)}
	for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}} {
		fused, err := model.LoadWith(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		steps := map[string]int{}
		for _, s := range fused.Steps() {
			steps[s.Op]++
		}
		if steps["FusedConv"] != 2 || steps["QuantizeDequantize"] != 1 || steps["Add"]+steps["Mul"]+steps["Div"]+steps["Conv"]+steps["DequantizeLinear"] != 0 {
			t.Fatalf("quantize=%v: steps %v", opts.Quantize, steps)
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
		if len(levels) < 10 {
			t.Fatalf("quantize=%v: %d distinct values: too few to compare", opts.Quantize, len(levels))
		}
	}
}
