package attention

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

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

func attentionCases(r *rand.Rand) []attentionCase {
	f := func(v float32) *float32 { return &v }
	boolMask := func(shape ...int) *tensor.Tensor {
		m := make([]bool, ops.ProdInts(shape))
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
		want, err := attentionRun(t, &c.at, gemm.Default())(c.inputs(to64))
		if err != nil {
			t.Fatalf("%s (float64): %v", c.name, err)
		}
		for _, tab := range dispatch.Available() {
			for _, threads := range []int{1, 2} {
				name := fmt.Sprintf("%s/%s/%d", c.name, tab, threads)
				exec := gemm.New(tab, threads)
				t.Cleanup(exec.Close)
				got, err := attentionRun(t, &c.at, exec)(c.inputs(func(x *tensor.Tensor) *tensor.Tensor { return x }))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				compareOutputs(t, name, got, want, 2e-5)
			}
		}
		// The float32 loops through the same driver.
		a := &attentionCall{at: &c.at, q: c.q, k: c.k, v: c.v, mask: c.mask, pastK: c.pastK, pastV: c.pastV, nonpad: c.nonpad, wantPresent: true, wantQK: true, soft: gemm.Default().Table().SoftmaxRow}
		if err := a.check(); err != nil {
			t.Fatal(err)
		}
		got, err := attentionIn(a, float32s, refKernels[float32])
		if err != nil {
			t.Fatal(err)
		}
		compareOutputs(t, c.name+"/float32 loops", got, want, 2e-5)
		// A few query rows at a time (down to one), on the kernels.
		for _, chunk := range []int{1, 2 * a.sh.t} {
			a.chunk = chunk
			got, err := attentionIn(a, float32s, f32Kernels)
			if err != nil {
				t.Fatal(err)
			}
			compareOutputs(t, fmt.Sprintf("%s/%d scores at a time", c.name, chunk), got, want, 2e-5)
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
	out, err := attentionRun(t, &at, gemm.Default())([]*tensor.Tensor{to64(q), to64(k), to64(v), to64(mask), nil, nil, tensor.From([]int{1}, []int64{4})})
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
	op := attentionRun(t, &AttentionAttrs{}, gemm.Default())
	gqa := attentionRun(t, &AttentionAttrs{QNumHeads: 3, KVNumHeads: 2}, gemm.Default())
	for name, c := range map[string]struct {
		op runFunc
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
		if _, err := c.op(c.in); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	for _, at := range []AttentionAttrs{{QKMatMulOutputMode: 4}, {Softcap: -1}, {QNumHeads: -2}} {
		if _, _, err := opstest.Compile(attentionNode(&at), 3); err == nil {
			t.Errorf("%+v: accepted", at)
		}
	}
	p := int64(onnxpb.Int32)
	if _, _, err := opstest.Compile(attentionNode(&AttentionAttrs{SoftmaxPrecision: &p}), 3); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("softmax_precision INT32: %v", err)
	}
	n := attentionNode(&AttentionAttrs{})
	n.Opset = 23
	if _, _, err := opstest.Compile(n, 7); err == nil {
		t.Error("Attention 23 with nonpad_kv_seqlen (7 inputs) accepted")
	}
}

// TestRequiredInputsAbsent checks that a node naming no value for an input
// its operator requires is refused at load.
func TestRequiredInputsAbsent(t *testing.T) {
	n := &ops.Node{Type: "Attention", Opset: 24, Inputs: []string{"q", "", "v"}, Outputs: []string{"y"}}
	if _, err := buildAttention(n, &AttentionAttrs{}, 7); err == nil {
		t.Fatal("Attention without K accepted")
	}
}

func TestAttentionEmptySizes(t *testing.T) {
	op := attentionRun(t, &AttentionAttrs{}, gemm.Default())
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
		if !ops.EqualShape(out[0].Shape, want) {
			t.Fatalf("%v: shape %v, want %v", c, out[0].Shape, want)
		}
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
		op := attentionRun(b, at, exec)
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
			if _, err := attentionIn(a, float32s, refKernels[float32]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// TestAttentionHeadsAcrossCores: the heads of an attention large enough
// to split run across cores and give the bits one core gives: with one
// output (the fast softmax rows), with every output (present keys and
// values, the scores), causal, and with two query heads per key/value
// head.
func TestAttentionHeadsAcrossCores(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const b, hq, sq, d = 2, 4, 96, 32
	q := tensor.From([]int{b, hq, sq, d}, randFloats(r, b*hq*sq*d, 0))
	for _, c := range []struct {
		name    string
		hkv     int
		causal  bool
		outputs int
	}{
		{"one output", hq, false, 1},
		{"every output", hq, false, 4},
		{"causal", hq, true, 1},
		{"grouped query heads", hq / 2, false, 1},
	} {
		k := tensor.From([]int{b, c.hkv, sq, d}, randFloats(r, b*c.hkv*sq*d, 0))
		v := tensor.From([]int{b, c.hkv, sq, d}, randFloats(r, b*c.hkv*sq*d, 0.5))
		n := attentionNode(&AttentionAttrs{IsCausal: c.causal})
		n.Outputs = c.outputs
		op := compile(t, n, 3)
		present := opstest.Func(func(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			out, err := op.Run(c, in)
			return slices.DeleteFunc(out, func(x *tensor.Tensor) bool { return x == nil }), err
		})
		if got := opstest.SplitRun(t, c.name, present, q, k, v); len(got) != c.outputs {
			t.Errorf("%s: %d outputs, want %d", c.name, len(got), c.outputs)
		}
	}
}
