package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func randTensor(r *rand.Rand, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return tensor.From(shape, randFloats(r, n, 0))
}

func to64(x *tensor.Tensor) *tensor.Tensor {
	if x == nil || x.DType != tensor.Float32 {
		return x
	}
	return tensor.From(x.Shape, convert[float64](x.Data.([]float32)))
}

// attentionCase is one Attention node and its inputs.
type attentionCase struct {
	name                 string
	at                   AttentionAttrs
	q, k, v, mask        *tensor.Tensor
	pastK, pastV, nonpad *tensor.Tensor
}

func (c *attentionCase) inputs(conv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{conv(c.q), conv(c.k), conv(c.v), conv(c.mask), conv(c.pastK), conv(c.pastV), c.nonpad}
}

func attentionOp(t testing.TB, at *AttentionAttrs, exec *gemm.Engine) opFunc {
	n := testNode(7, 4)
	n.opts.Exec = exec
	op, err := buildAttention(n, at, 7)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func attentionCases(r *rand.Rand) []attentionCase {
	f := func(v float32) *float32 { return &v }
	boolMask := func(shape ...int) *tensor.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		m := make([]bool, n)
		for i := range m {
			m[i] = r.IntN(4) != 0
		}
		m[0] = true
		return tensor.From(shape, m)
	}
	return []attentionCase{
		{name: "4d", q: randTensor(r, 2, 3, 5, 8), k: randTensor(r, 2, 3, 7, 8), v: randTensor(r, 2, 3, 7, 8)},
		{name: "4d odd sizes", q: randTensor(r, 1, 2, 19, 5), k: randTensor(r, 1, 2, 33, 5), v: randTensor(r, 1, 2, 33, 17)},
		{name: "3d gqa", at: AttentionAttrs{QNumHeads: 6, KVNumHeads: 2}, q: randTensor(r, 2, 4, 6*8), k: randTensor(r, 2, 9, 2*8), v: randTensor(r, 2, 9, 2*3)},
		{name: "mqa causal scaled", at: AttentionAttrs{IsCausal: true, Scale: f(0.3)}, q: randTensor(r, 1, 4, 6, 8), k: randTensor(r, 1, 1, 6, 8), v: randTensor(r, 1, 1, 6, 8)},
		{name: "float mask short", q: randTensor(r, 2, 2, 3, 4), k: randTensor(r, 2, 2, 5, 4), v: randTensor(r, 2, 2, 5, 4), mask: randTensor(r, 3, 4)},
		{name: "bool mask 4d", q: randTensor(r, 2, 2, 3, 4), k: randTensor(r, 2, 2, 5, 4), v: randTensor(r, 2, 2, 5, 4), mask: boolMask(2, 1, 3, 5)},
		{name: "past causal mask softcap", at: AttentionAttrs{IsCausal: true, Softcap: 1.5},
			q: randTensor(r, 2, 2, 3, 4), k: randTensor(r, 2, 2, 3, 4), v: randTensor(r, 2, 2, 3, 6),
			pastK: randTensor(r, 2, 2, 4, 4), pastV: randTensor(r, 2, 2, 4, 6), mask: randTensor(r, 2, 2, 3, 7)},
		{name: "3d past", at: AttentionAttrs{QNumHeads: 4, KVNumHeads: 2, QKMatMulOutputMode: 2},
			q: randTensor(r, 1, 2, 4*4), k: randTensor(r, 1, 2, 2*4), v: randTensor(r, 1, 2, 2*4),
			pastK: randTensor(r, 1, 2, 5, 4), pastV: randTensor(r, 1, 2, 5, 4)},
		{name: "nonpad causal", at: AttentionAttrs{IsCausal: true, QKMatMulOutputMode: 3},
			q: randTensor(r, 2, 2, 2, 4), k: randTensor(r, 2, 2, 6, 4), v: randTensor(r, 2, 2, 6, 4),
			nonpad: tensor.From([]int{2}, []int64{4, 6})},
		{name: "qk modes", at: AttentionAttrs{Softcap: 2, QKMatMulOutputMode: 1}, q: randTensor(r, 1, 1, 2, 4), k: randTensor(r, 1, 1, 3, 4), v: randTensor(r, 1, 1, 3, 4), mask: randTensor(r, 1, 3)},
		{name: "one query", q: randTensor(r, 1, 12, 1, 64), k: randTensor(r, 1, 12, 40, 64), v: randTensor(r, 1, 12, 40, 64)},
	}
}

// TestAttentionKernelsMatchReference runs each case on the float kernels
// of every table this CPU has (one and two threads) and compares with the
// float64 loops, and runs the float32 loops (the kernels' pure-Go twin)
// on the same inputs.
func TestAttentionKernelsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range attentionCases(r) {
		want, err := attentionOp(t, &c.at, gemm.Default())(c.inputs(to64))
		if err != nil {
			t.Fatalf("%s (float64): %v", c.name, err)
		}
		for _, tab := range dispatch.Available() {
			for _, threads := range []int{1, 2} {
				name := fmt.Sprintf("%s/%s/%d", c.name, tab, threads)
				exec := gemm.New(tab, threads)
				t.Cleanup(exec.Close)
				got, err := attentionOp(t, &c.at, exec)(c.inputs(func(x *tensor.Tensor) *tensor.Tensor { return x }))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				compareAttentionOutputs(t, name, got, want, 2e-5)
			}
		}
		// The float32 loops through the same driver.
		a := &attentionCall{at: &c.at, q: c.q, k: c.k, v: c.v, mask: c.mask, pastK: c.pastK, pastV: c.pastV, nonpad: c.nonpad, wantPresent: true, wantQK: true, soft: dispatch.Default().SoftmaxRow}
		if err := a.check(); err != nil {
			t.Fatal(err)
		}
		got, err := attentionIn(a, attnFloat32s, func(sh attnShape, k, v attnView[float32]) attnKernels[float32] {
			return &attnRef[float32]{k: k, v: v, sh: sh}
		})
		if err != nil {
			t.Fatal(err)
		}
		compareAttentionOutputs(t, c.name+"/float32 loops", got, want, 2e-5)
		// A few query rows at a time (down to one), on the kernels.
		for _, chunk := range []int{1, 2 * a.sh.t} {
			a.chunk = chunk
			got, err := attentionIn(a, attnFloat32s, func(sh attnShape, k, v attnView[float32]) attnKernels[float32] {
				return newAttnF32(gemm.Default(), k, v, sh)
			})
			if err != nil {
				t.Fatal(err)
			}
			compareAttentionOutputs(t, fmt.Sprintf("%s/%d scores at a time", c.name, chunk), got, want, 2e-5)
		}
	}
}

func compareAttentionOutputs(t *testing.T, name string, got, want []*tensor.Tensor, tol float64) {
	t.Helper()
	for i := range want {
		if want[i] == nil {
			continue
		}
		if got[i] == nil || !equalShape(got[i].Shape, want[i].Shape) {
			t.Fatalf("%s: output %d is %v, want shape %v", name, i, got[i], want[i].Shape)
		}
		g, w := got[i].Float64s(), want[i].Float64s()
		for j := range w {
			if math.IsInf(w[j], -1) && math.IsInf(g[j], -1) || math.IsNaN(w[j]) && math.IsNaN(g[j]) {
				continue
			}
			if math.Abs(g[j]-w[j]) > tol*(1+math.Abs(w[j])) {
				t.Fatalf("%s: output %d [%d] = %v, want %v", name, i, j, g[j], w[j])
			}
		}
	}
}

// TestAttentionByDefinition checks the float64 path against the formula
// written out for one small case: softmax(QKᵀ/√d + mask)·V with the
// causal and padding masks.
func TestAttentionByDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	q, k, v := randTensor(r, 1, 2, 3, 4), randTensor(r, 1, 1, 5, 4), randTensor(r, 1, 1, 5, 2)
	mask := randTensor(r, 3, 5)
	at := AttentionAttrs{IsCausal: true}
	out, err := attentionOp(t, &at, gemm.Default())([]*tensor.Tensor{to64(q), to64(k), to64(v), to64(mask), nil, nil, tensor.From([]int{1}, []int64{4})})
	if err != nil {
		t.Fatal(err)
	}
	qd, kd, vd, md := to64(q).Data.([]float64), to64(k).Data.([]float64), to64(v).Data.([]float64), to64(mask).Data.([]float64)
	y := out[0].Data.([]float64)
	for h := 0; h < 2; h++ {
		for i := 0; i < 3; i++ {
			var s [5]float64
			var sum float64
			for j := 0; j < 5; j++ {
				for f := 0; f < 4; f++ {
					s[j] += qd[(h*3+i)*4+f] * kd[j*4+f]
				}
				s[j] = s[j]/2 + md[i*5+j]
				// causal with a padded cache: offset = nonpad - q length = 1
				if j > i+1 || j >= 4 {
					s[j] = math.Inf(-1)
				}
				s[j] = math.Exp(s[j])
				sum += s[j]
			}
			for c := 0; c < 2; c++ {
				var want float64
				for j := 0; j < 5; j++ {
					want += s[j] / sum * vd[j*2+c]
				}
				if got := y[(h*3+i)*2+c]; math.Abs(got-want) > 1e-12 {
					t.Fatalf("y[%d,%d,%d] = %v, want %v", h, i, c, got, want)
				}
			}
		}
	}
}

func TestAttentionBadInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	q, k, v := randTensor(r, 1, 2, 3, 4), randTensor(r, 1, 2, 5, 4), randTensor(r, 1, 2, 5, 4)
	op := attentionOp(t, &AttentionAttrs{}, gemm.Default())
	gqa := attentionOp(t, &AttentionAttrs{QNumHeads: 3, KVNumHeads: 2}, gemm.Default())
	for name, c := range map[string]struct {
		op opFunc
		in []*tensor.Tensor
	}{
		"K head size":        {op, []*tensor.Tensor{q, randTensor(r, 1, 2, 5, 3), v}},
		"V length":           {op, []*tensor.Tensor{q, k, randTensor(r, 1, 2, 4, 4)}},
		"heads do not group": {op, []*tensor.Tensor{randTensor(r, 1, 3, 3, 4), k, v}},
		"rank 2":             {op, []*tensor.Tensor{randTensor(r, 3, 4), randTensor(r, 5, 4), randTensor(r, 5, 4)}},
		"rank 3 no heads":    {op, []*tensor.Tensor{randTensor(r, 1, 3, 8), randTensor(r, 1, 5, 8), randTensor(r, 1, 5, 8)}},
		"rank 3 indivisible": {gqa, []*tensor.Tensor{randTensor(r, 1, 3, 8), randTensor(r, 1, 5, 8), randTensor(r, 1, 5, 8)}},
		"integer Q":          {op, []*tensor.Tensor{tensor.From([]int{1, 1, 1, 1}, []int32{1}), k, v}},
		"mixed Q K":          {op, []*tensor.Tensor{q, to64(k), v}},
		"mask too long":      {op, []*tensor.Tensor{q, k, v, randTensor(r, 3, 6)}},
		"mask batch":         {op, []*tensor.Tensor{q, k, v, randTensor(r, 2, 1, 3, 5)}},
		"mask rank 5":        {op, []*tensor.Tensor{q, k, v, randTensor(r, 1, 1, 1, 3, 5)}},
		"integer mask":       {op, []*tensor.Tensor{q, k, v, tensor.From([]int{5}, make([]int64, 5))}},
		"past key alone":     {op, []*tensor.Tensor{q, k, v, nil, randTensor(r, 1, 2, 2, 4)}},
		"past shape":         {op, []*tensor.Tensor{q, k, v, nil, randTensor(r, 1, 2, 2, 4), randTensor(r, 1, 2, 3, 4)}},
		"nonpad too long":    {op, []*tensor.Tensor{q, k, v, nil, nil, nil, tensor.From([]int{1}, []int64{6})}},
		"nonpad shape":       {op, []*tensor.Tensor{q, k, v, nil, nil, nil, tensor.From([]int{2}, []int64{1, 1})}},
		"nonpad type":        {op, []*tensor.Tensor{q, k, v, nil, nil, nil, tensor.From([]int{1}, []int32{1})}},
	} {
		if _, err := c.op(c.in); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	for _, at := range []AttentionAttrs{{QKMatMulOutputMode: 4}, {Softcap: -1}, {QNumHeads: -2}} {
		if _, err := buildAttention(testNode(3, 1), &at, 7); err == nil {
			t.Errorf("%+v: accepted", at)
		}
	}
	p := int64(onnxpb.Int32)
	if _, err := buildAttention(testNode(3, 1), &AttentionAttrs{SoftmaxPrecision: &p}, 7); !errors.Is(err, ErrUnsupported) {
		t.Errorf("softmax_precision INT32: %v", err)
	}
}

func TestAttentionEmptySizes(t *testing.T) {
	op := attentionOp(t, &AttentionAttrs{}, gemm.Default())
	for _, c := range [][3][]int{
		{{1, 2, 0, 4}, {1, 2, 5, 4}, {1, 2, 5, 4}}, // no queries
		{{1, 2, 3, 4}, {1, 2, 0, 4}, {1, 2, 0, 4}}, // no keys
		{{1, 2, 3, 0}, {1, 2, 5, 0}, {1, 2, 5, 3}}, // empty heads
		{{0, 2, 3, 4}, {0, 2, 5, 4}, {0, 2, 5, 4}}, // no batch
	} {
		mk := func(s []int) *tensor.Tensor {
			n, _ := tensor.NumElements(s)
			return tensor.From(s, make([]float32, n))
		}
		out, err := op([]*tensor.Tensor{mk(c[0]), mk(c[1]), mk(c[2])})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		want := []int{c[0][0], c[0][1], c[0][2], c[2][3]}
		if !equalShape(out[0].Shape, want) {
			t.Fatalf("%v: shape %v, want %v", c, out[0].Shape, want)
		}
	}
}

func TestSoftmaxAndTanh32(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{1, 3, 4, 7, 64, 129} {
		x := randFloats(r, n, 0)
		for i := range x {
			x[i] *= 10
		}
		y64 := convert[float64](x)
		softmaxRow(y64, nil)
		softmaxRow(x, dispatch.Default().SoftmaxRow)
		for i := range x {
			if math.Abs(float64(x[i])-y64[i]) > 1e-6 {
				t.Fatalf("n=%d: softmax32[%d] = %v, want %v", n, i, x[i], y64[i])
			}
		}
	}
	masked := []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
	softmaxRow(masked, dispatch.Default().SoftmaxRow)
	if !math.IsNaN(float64(masked[0])) {
		t.Fatalf("a fully masked row: %v, want NaN as the reference gives", masked)
	}
	for i := 0; i < 100000; i++ {
		x := float32(r.Float64()*40 - 20)
		if d := math.Abs(float64(tanh32(x)) - math.Tanh(float64(x))); d > 2e-7 {
			t.Fatalf("tanh32(%v) is %g off", x, d)
		}
	}
}

// flexModel is a FlexAttention node over FP32 Q, K, V with a score_mod
// adding a constant bias (the same as Attention's float mask).
func flexModel(t *testing.T, bias *tensor.Tensor, probMod bool) *Model {
	t.Helper()
	vi := func(name string) *onnxpb.ValueInfo {
		return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}
	}
	scoreMod := &onnxpb.Graph{
		Inputs:  []*onnxpb.ValueInfo{vi("s")},
		Outputs: []*onnxpb.ValueInfo{vi("s2")},
		Nodes:   []*onnxpb.Node{{OpType: "Add", Name: "add", Inputs: []string{"s", "bias"}, Outputs: []string{"s2"}}},
	}
	attrs := []*onnxpb.Attribute{{Name: "score_mod", Type: onnxpb.AttrGraph, G: scoreMod}}
	if probMod {
		attrs = append(attrs, &onnxpb.Attribute{Name: "prob_mod", Type: onnxpb.AttrGraph, G: &onnxpb.Graph{
			Inputs: []*onnxpb.ValueInfo{vi("p")}, Outputs: []*onnxpb.ValueInfo{vi("p2")},
			Nodes: []*onnxpb.Node{{OpType: "Identity", Name: "id", Inputs: []string{"p"}, Outputs: []string{"p2"}}},
		}})
	}
	g := &onnxpb.Graph{
		Inputs:       []*onnxpb.ValueInfo{vi("q"), vi("k"), vi("v")},
		Outputs:      []*onnxpb.ValueInfo{vi("y")},
		Initializers: []*onnxpb.Tensor{TensorToONNX("bias", bias)},
		Nodes:        []*onnxpb.Node{{OpType: "FlexAttention", Domain: "ai.onnx.preview", Name: "flex", Inputs: []string{"q", "k", "v"}, Outputs: []string{"y"}, Attributes: attrs}},
	}
	m, err := Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 10, OpsetImport: []onnxpb.OpsetID{{Version: 26}, {Domain: "ai.onnx.preview", Version: 1}}, Graph: g}))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFlexAttentionScoreMod checks that a score_mod adding a bias gives
// what Attention gives with that bias as its float mask, and that a
// score_mod returning the wrong shape is an input error.
func TestFlexAttentionScoreMod(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	q, k, v := randTensor(r, 2, 4, 3, 8), randTensor(r, 2, 2, 5, 8), randTensor(r, 2, 2, 5, 6)
	bias := randTensor(r, 3, 5)
	for _, probMod := range []bool{false, true} {
		out, err := flexModel(t, bias, probMod).Run(context.Background(), map[string]*tensor.Tensor{"q": q, "k": k, "v": v}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := attentionOp(t, &AttentionAttrs{}, gemm.Default())([]*tensor.Tensor{to64(q), to64(k), to64(v), to64(bias)})
		if err != nil {
			t.Fatal(err)
		}
		compareAttentionOutputs(t, "flex", []*tensor.Tensor{out["y"]}, want[:1], 2e-5)
	}
	_, err := flexModel(t, randTensor(r, 2, 1), false).Run(context.Background(), map[string]*tensor.Tensor{"q": q, "k": k, "v": v}, nil)
	if !errors.Is(err, ErrInput) {
		t.Fatalf("a score_mod broadcasting to another shape: %v", err)
	}
}

// TestRotaryLayouts checks that the rank-3 (batch, seq, heads·dim) form
// rotates like the rank-4 (batch, heads, seq, dim) form, and the errors.
func TestRotaryLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	b, h, s, d := 2, 3, 4, 8
	x4 := randTensor(r, b, h, s, d)
	x3 := make([]float32, b*s*h*d)
	for bi := 0; bi < b; bi++ {
		for hi := 0; hi < h; hi++ {
			for si := 0; si < s; si++ {
				copy(x3[((bi*s+si)*h+hi)*d:], x4.Data.([]float32)[((bi*h+hi)*s+si)*d:((bi*h+hi)*s+si+1)*d])
			}
		}
	}
	cos, sin := randTensor(r, 10, 2), randTensor(r, 10, 2)
	pos := tensor.From([]int{b, s}, []int64{0, 1, 2, 3, 9, 8, 7, 6})
	for _, inter := range []bool{false, true} {
		op4, _ := buildRotaryEmbedding(testNode(4, 1), &RotaryEmbeddingAttrs{Interleaved: inter, RotaryEmbeddingDim: 4})
		op3, _ := buildRotaryEmbedding(testNode(4, 1), &RotaryEmbeddingAttrs{Interleaved: inter, RotaryEmbeddingDim: 4, NumHeads: int64(h)})
		y4, err := op4([]*tensor.Tensor{x4, cos, sin, pos})
		if err != nil {
			t.Fatal(err)
		}
		y3, err := op3([]*tensor.Tensor{tensor.From([]int{b, s, h * d}, x3), cos, sin, pos})
		if err != nil {
			t.Fatal(err)
		}
		a4, a3 := y4[0].Data.([]float32), y3[0].Data.([]float32)
		for bi := 0; bi < b; bi++ {
			for hi := 0; hi < h; hi++ {
				for si := 0; si < s; si++ {
					for f := 0; f < d; f++ {
						g, w := a3[((bi*s+si)*h+hi)*d+f], a4[((bi*h+hi)*s+si)*d+f]
						if g != w {
							t.Fatalf("interleaved=%v (%d,%d,%d,%d): rank 3 %v, rank 4 %v", inter, bi, hi, si, f, g, w)
						}
						if f >= 4 && w != x4.Data.([]float32)[((bi*h+hi)*s+si)*d+f] {
							t.Fatal("features past rotary_embedding_dim must pass through")
						}
					}
				}
			}
		}
	}
	op, _ := buildRotaryEmbedding(testNode(4, 1), &RotaryEmbeddingAttrs{})
	for name, in := range map[string][]*tensor.Tensor{
		"position beyond the cache": {x4, randTensor(r, 5, 4), randTensor(r, 5, 4), tensor.From([]int{b, s}, []int64{0, 1, 2, 3, 4, 5, 6, 7})},
		"cache width":               {x4, cos, sin, pos},
		"no positions, cache shape": {x4, randTensor(r, 10, 4), randTensor(r, 10, 4)},
		"rank 3 without num_heads":  {randTensor(r, b, s, 8), randTensor(r, 10, 4), randTensor(r, 10, 4), pos},
		"odd rotary width":          {randTensor(r, 1, 1, 1, 3), randTensor(r, 1, 1, 1), randTensor(r, 1, 1, 1)},
	} {
		if _, err := op(in); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

// TestLinearAttentionIsCausalLinearAttention checks the "linear" rule
// against its closed form o_t = scale·Σ_{s<=t} (q_t·k_s)·v_s, with grouped
// heads and a past state, and that decoding token by token with the state
// carried gives what one call over the sequence gives, for every rule.
func TestLinearAttentionIsCausalLinearAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	b, T, hq, hkv, dk, dv := 2, 5, 4, 2, 3, 4
	q, k, v := randTensor(r, b, T, hq*dk), randTensor(r, b, T, hkv*dk), randTensor(r, b, T, hkv*dv)
	op, err := buildLinearAttention(testNode(6, 2), &LinearAttentionAttrs{QNumHeads: int64(hq), KVNumHeads: int64(hkv), UpdateRule: "linear", Scale: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	out, err := op([]*tensor.Tensor{q, k, v})
	if err != nil {
		t.Fatal(err)
	}
	qd, kd, vd, y := q.Data.([]float32), k.Data.([]float32), v.Data.([]float32), out[0].Data.([]float32)
	for bi := 0; bi < b; bi++ {
		for ti := 0; ti < T; ti++ {
			for h := 0; h < hq; h++ {
				g := h / (hq / hkv)
				for c := 0; c < dv; c++ {
					var want float64
					for si := 0; si <= ti; si++ {
						var dot float64
						for f := 0; f < dk; f++ {
							dot += float64(qd[((bi*T+ti)*hq+h)*dk+f]) * float64(kd[((bi*T+si)*hkv+g)*dk+f])
						}
						want += 0.5 * dot * float64(vd[((bi*T+si)*hkv+g)*dv+c])
					}
					if got := y[((bi*T+ti)*hq+h)*dv+c]; math.Abs(float64(got)-want) > 1e-5*(1+math.Abs(want)) {
						t.Fatalf("o[%d,%d,%d,%d] = %v, want %v", bi, ti, h, c, got, want)
					}
				}
			}
		}
	}
	decay, beta := randTensor(r, b, T, hkv*dk), randTensor(r, b, T, hkv)
	for _, rule := range []string{"linear", "gated", "delta", "gated_delta"} {
		op, _ := buildLinearAttention(testNode(6, 2), &LinearAttentionAttrs{QNumHeads: int64(hq), KVNumHeads: int64(hkv), UpdateRule: rule})
		all, err := op([]*tensor.Tensor{q, k, v, nil, decay, beta})
		if err != nil {
			t.Fatal(err)
		}
		var state *tensor.Tensor
		for ti := 0; ti < T; ti++ {
			step := func(x *tensor.Tensor) *tensor.Tensor {
				w := x.Shape[2]
				d := make([]float32, b*w)
				for bi := 0; bi < b; bi++ {
					copy(d[bi*w:], x.Data.([]float32)[(bi*T+ti)*w:(bi*T+ti+1)*w])
				}
				return tensor.From([]int{b, 1, w}, d)
			}
			o, err := op([]*tensor.Tensor{step(q), step(k), step(v), state, step(decay), step(beta)})
			if err != nil {
				t.Fatal(err)
			}
			state = o[1]
			for bi := 0; bi < b; bi++ {
				for j := 0; j < hq*dv; j++ {
					g, w := o[0].Data.([]float32)[bi*hq*dv+j], all[0].Data.([]float32)[(bi*T+ti)*hq*dv+j]
					if math.Abs(float64(g-w)) > 1e-5*(1+math.Abs(float64(w))) {
						t.Fatalf("%s: token %d decoded alone %v, in the sequence %v", rule, ti, g, w)
					}
				}
			}
		}
	}
	if _, err := buildLinearAttention(testNode(3, 2), &LinearAttentionAttrs{QNumHeads: 3, KVNumHeads: 2, UpdateRule: "linear"}); err == nil {
		t.Fatal("3 query heads over 2 key heads accepted")
	}
	opGD, _ := buildLinearAttention(testNode(6, 2), &LinearAttentionAttrs{QNumHeads: int64(hq), KVNumHeads: int64(hkv), UpdateRule: "gated_delta"})
	if _, err := opGD([]*tensor.Tensor{q, k, v}); !errors.Is(err, ErrInput) {
		t.Fatalf("gated_delta without decay: %v", err)
	}
}

// TestCausalConvDecodes checks that feeding a sequence one token at a
// time, carrying present_state into past_state, gives what one call over
// the whole sequence gives.
func TestCausalConvDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	b, c, l, k := 2, 3, 6, 4
	x, w, bias, past := randTensor(r, b, c, l), randTensor(r, c, 1, k), randTensor(r, c), randTensor(r, b, c, k-1)
	op, err := buildCausalConv(testNode(4, 2), &CausalConvAttrs{Activation: "silu"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := op([]*tensor.Tensor{x, w, bias, past})
	if err != nil {
		t.Fatal(err)
	}
	state := past
	for ti := 0; ti < l; ti++ {
		xt := make([]float32, b*c)
		for ch := range xt {
			xt[ch] = x.Data.([]float32)[ch*l+ti]
		}
		o, err := op([]*tensor.Tensor{tensor.From([]int{b, c, 1}, xt), w, bias, state})
		if err != nil {
			t.Fatal(err)
		}
		state = o[1]
		for ch := 0; ch < b*c; ch++ {
			if g, want := o[0].Data.([]float32)[ch], all[0].Data.([]float32)[ch*l+ti]; math.Abs(float64(g-want)) > 1e-6 {
				t.Fatalf("token %d channel %d: %v alone, %v in the sequence", ti, ch, g, want)
			}
		}
	}
	for i, s := range state.Data.([]float32) {
		if s != all[1].Data.([]float32)[i] {
			t.Fatal("the final states differ")
		}
	}
	for name, in := range map[string][]*tensor.Tensor{
		"weight channels": {x, randTensor(r, c+1, 1, k)},
		"past width":      {x, w, nil, randTensor(r, b, c, k)},
		"empty kernel":    {x, tensor.From([]int{c, 1, 0}, []float32{})},
		"rank 2":          {randTensor(r, c, l), w},
	} {
		if _, err := op(in); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

// TestFamilyRandomInputs feeds the operators of this family inputs of
// random ranks, small (often empty) shapes and types: each must answer or
// return an input error, never panic.
func TestFamilyRandomInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(99, 1))
	rt := func(rank int) *tensor.Tensor {
		if r.IntN(8) == 0 {
			return nil
		}
		sh := make([]int, rank)
		n := 1
		for i := range sh {
			sh[i] = r.IntN(4)
			n *= sh[i]
		}
		switch r.IntN(6) {
		case 0:
			b := make([]bool, n)
			return tensor.From(sh, b)
		case 1:
			return tensor.From(sh, make([]int64, n))
		case 2:
			return tensor.From(sh, make([]float64, n))
		}
		return tensor.From(sh, randFloats(r, n, 0))
	}
	for it := 0; it < 20000; it++ {
		at := &AttentionAttrs{IsCausal: r.IntN(2) == 0, QNumHeads: int64(r.IntN(4)), KVNumHeads: int64(r.IntN(3)), QKMatMulOutputMode: int64(r.IntN(4)), Softcap: float32(r.IntN(2))}
		op := attentionOp(t, at, gemm.Default())
		in := make([]*tensor.Tensor, 7)
		for i := range in {
			in[i] = rt(r.IntN(5))
		}
		for i := 0; i < 3; i++ {
			if in[i] == nil {
				in[i] = rt(3 + r.IntN(2))
			}
			if in[i] == nil {
				in[i] = tensor.From([]int{1, 1, 1, 1}, []float32{1})
			}
		}
		func() {
			defer func() {
				if e := recover(); e != nil {
					t.Fatalf("panic %v on %v", e, in)
				}
			}()
			if _, err := op(in); err != nil && !errors.Is(err, ErrInput) {
				t.Fatalf("%s: %v", "op(in)", err)
			}
			if _, err := TraceAttention(at, in); err != nil && !errors.Is(err, ErrInput) {
				t.Fatalf("%s: %v", "TraceAttention(at, in)", err)
			}
			ro, _ := buildRotaryEmbedding(testNode(4, 1), &RotaryEmbeddingAttrs{Interleaved: r.IntN(2) == 0, NumHeads: int64(r.IntN(3)), RotaryEmbeddingDim: int64(r.IntN(4))})
			if _, err := ro(in[:4]); err != nil && !errors.Is(err, ErrInput) {
				t.Fatalf("%s: %v", "ro(in[:4])", err)
			}
			la, err := buildLinearAttention(testNode(6, 2), &LinearAttentionAttrs{QNumHeads: 2, KVNumHeads: 1, UpdateRule: "gated_delta"})
			if err == nil {
				if _, err := la(in[:6]); err != nil && !errors.Is(err, ErrInput) {
					t.Fatalf("%s: %v", "la(in[:6])", err)
				}
			}
			cc, _ := buildCausalConv(testNode(4, 2), &CausalConvAttrs{Activation: "none"})
			if _, err := cc(in[:4]); err != nil && !errors.Is(err, ErrInput) {
				t.Fatalf("%s: %v", "cc(in[:4])", err)
			}
			ln := layerNormOp(t, int64(r.IntN(5)-2))
			if _, err := ln(in[:3]); err != nil && !errors.Is(err, ErrInput) {
				t.Fatalf("%s: %v", "ln(in[:3])", err)
			}
			rm := rmsNormOp(t, int64(r.IntN(5)-2))
			if _, err := rm(in[:2]); err != nil && !errors.Is(err, ErrInput) {
				t.Fatalf("%s: %v", "rm(in[:2])", err)
			}
			rd := reductionOp(t, reductionOps[r.IntN(len(reductionOps))], r.IntN(2) == 0, r.IntN(2) == 0)
			if _, err := rd([]*tensor.Tensor{in[0], in[3]}); err != nil && !errors.Is(err, ErrInput) {
				t.Fatalf("reduction: %v", err)
			}
			nl := lossOp(t, r.IntN(2) == 0, nil, "mean", 3, 1)
			if _, err := nl(in[:3]); err != nil && !errors.Is(err, ErrInput) {
				t.Fatalf("%s: %v", "nl(in[:3])", err)
			}
		}()
	}
}

// TestRequiredInputsAbsent checks that a node naming no value for an input
// its operator requires is refused at load.
func TestRequiredInputsAbsent(t *testing.T) {
	n := testNode(3, 1)
	n.pb.Inputs[1] = ""
	if _, err := buildAttention(n, &AttentionAttrs{}, 7); err == nil {
		t.Fatal("Attention without K accepted")
	}
}

// BenchmarkAttention is one BERT-base attention layer's core: batch 1,
// 12 heads, 128 tokens, head size 64. "kernels" runs both products on the
// float kernels of the default table; "loops" is the float32 pure-Go twin
// through the same driver.
func BenchmarkAttention(b *testing.B) {
	r := rand.New(rand.NewPCG(27, 28))
	q, k, v := randTensor(r, 1, 12, 128, 64), randTensor(r, 1, 12, 128, 64), randTensor(r, 1, 12, 128, 64)
	at := &AttentionAttrs{}
	flops := float64(2 * 2 * 12 * 128 * 128 * 64)
	b.Run("kernels", func(b *testing.B) {
		exec := gemm.New(dispatch.Default(), 1)
		defer exec.Close()
		op := attentionOp(b, at, exec)
		in := []*tensor.Tensor{q, k, v}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := op(in); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("loops", func(b *testing.B) {
		a := &attentionCall{at: at, q: q, k: k, v: v, soft: dispatch.Default().SoftmaxRow}
		if err := a.check(); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := attentionIn(a, attnFloat32s, func(sh attnShape, k, v attnView[float32]) attnKernels[float32] {
				return &attnRef[float32]{k: k, v: v, sh: sh}
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
