package contrib

import (
	"context"
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
	"github.com/quantserve/quantserve/ops/matmul"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// attIn is one Attention run: its inputs (nil: absent) and attributes.
type attIn struct {
	x, w, bias, mask, past, ab *tensor.Tensor
	heads                      int
	qkv                        []int64 // nil: a third of w's columns each
	causal                     bool
	scale                      float32 // 0: 1/√head_size
	filter                     float32 // mask_filter_value
}

func (a attIn) attrs() []*onnxpb.Attribute {
	at := []*onnxpb.Attribute{intAttr("num_heads", int64(a.heads)), floatAttr("mask_filter_value", a.filter)}
	if a.qkv != nil {
		at = append(at, opstest.AttrInts("qkv_hidden_sizes", a.qkv...))
	}
	if a.causal {
		at = append(at, intAttr("unidirectional", 1))
	}
	if a.scale != 0 {
		at = append(at, floatAttr("scale", a.scale))
	}
	return at
}

// inputs returns the run's inputs in order, up to the last present.
func (a attIn) inputs() []*tensor.Tensor {
	in := []*tensor.Tensor{a.x, a.w, a.bias, a.mask, a.past, a.ab}
	for in[len(in)-1] == nil {
		in = in[:len(in)-1]
	}
	return in
}

// sizes returns the hidden sizes of Q (and K) and V.
func (a attIn) sizes() (hq, hv int) {
	if a.qkv != nil {
		return int(a.qkv[0]), int(a.qkv[2])
	}
	return a.w.Shape[1] / 3, a.w.Shape[1] / 3
}

// project returns x·W + bias in float64, [batch·sequence, columns].
func (a attIn) project() []float64 {
	x, w := a.x.Float64s(), a.w.Float64s()
	k, cols := a.w.Shape[0], a.w.Shape[1]
	m := len(x) / max(k, 1)
	if k == 0 {
		m = a.x.Shape[0] * a.x.Shape[1]
	}
	p := make([]float64, m*cols)
	for i := 0; i < m; i++ {
		for c := 0; c < cols; c++ {
			for j := 0; j < k; j++ {
				p[i*cols+c] += x[i*k+j] * w[j*cols+c]
			}
			if a.bias != nil {
				p[i*cols+c] += at(a.bias, c)
			}
		}
	}
	return p
}

// maskAdd is mask_index's term of a score by its definition: batch item
// b's query i and key t of total.
func (a attIn) maskAdd(b, i, t, batch, seq, total int) float64 {
	if a.mask == nil {
		return 0
	}
	m, d, f := a.mask.Data.([]int32), a.mask.Shape, float64(a.filter)
	switch {
	case len(d) == 1 && d[0] == 2*batch: // ends, then starts
		if t >= int(m[b]) || t < int(m[batch+b]) {
			return f
		}
	case len(d) == 1: // ends, then what is not read
		if t >= int(m[b]) {
			return f
		}
	case len(d) == 2 && d[1] == total && d[0] == batch:
		if m[b*total+t] <= 0 {
			return f
		}
	case len(d) == 3:
		if m[(b*seq+i)*total+t] <= 0 {
			return f
		}
	}
	return 0
}

// def computes the run by the definition in float64 from projections p
// ([batch·sequence, columns], the bias added): its output [batch,
// sequence, v_hidden] and present [2, batch, heads, total, head_size].
func (a attIn) def(p []float64) (out, present []float64) {
	batch, seq := a.x.Shape[0], a.x.Shape[1]
	n := a.heads
	hq, hv := a.sizes()
	hd, vd := hq/n, hv/n
	cols := 2*hq + hv
	past := 0
	if a.past != nil {
		past = a.past.Shape[3]
	}
	total := past + seq
	d := mhaDef{batch: batch, seq: seq, total: total, heads: n, hd: hd, hv: vd, scale: float64(a.scale)}
	if a.scale == 0 {
		d.scale = 1 / math.Sqrt(float64(hd))
	}
	d.q = func(b, h, i, j int) float64 { return p[(b*seq+i)*cols+h*hd+j] }
	kv := func(which, off, size int) func(b, h, t, j int) float64 {
		return func(b, h, t, j int) float64 {
			if t < past {
				return at(a.past, (((which*batch+b)*n+h)*past+t)*size+j)
			}
			return p[(b*seq+t-past)*cols+off+h*size+j]
		}
	}
	d.k, d.v = kv(0, hq, hd), kv(1, 2*hq, vd)
	d.add = func(b, h, i, t int) float64 {
		if a.causal && t > past+i {
			return math.Inf(-1)
		}
		v := a.maskAdd(b, i, t, batch, seq, total)
		if a.ab != nil {
			s := a.ab.Shape
			v += at(a.ab, (((b%s[0])*s[1]+h%s[1])*seq+i)*total+t)
		}
		return v
	}
	out = d.output()
	if hd == vd {
		for _, f := range []func(b, h, t, j int) float64{d.k, d.v} {
			for b := 0; b < batch; b++ {
				for h := 0; h < n; h++ {
					for t := 0; t < total; t++ {
						for j := 0; j < hd; j++ {
							present = append(present, f(b, h, t, j))
						}
					}
				}
			}
		}
	}
	return out, present
}

// attCases are the forms of Attention the tests run, FLOAT.
func attCases(r *rand.Rand) map[string]attIn {
	lengths := func(v ...int32) *tensor.Tensor { return int32s([]int{len(v)}, v...) }
	return map[string]attIn{
		"bert": {x: randn(r, 1, 2, 5, 24), w: randn(r, 0.2, 24, 72), bias: randn(r, 0.3, 72), mask: lengths(5, 3), heads: 3, filter: -10000},
		"gpt2 after a past": {x: randn(r, 1, 2, 4, 10), w: randn(r, 0.3, 10, 48), past: randn(r, 1, 2, 2, 2, 2, 8),
			mask: int32s([]int{2, 6}, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0), heads: 2, causal: true, filter: -10000},
		"qkv sizes, 3-D mask, attention_bias over heads": {x: randn(r, 1, 2, 4, 10), w: randn(r, 0.3, 10, 42), bias: randn(r, 0.3, 42),
			mask: int32s([]int{2, 4, 4}, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0),
			ab:   randn(r, 1, 1, 3, 4, 4), heads: 3, qkv: []int64{12, 12, 18}, scale: 0.3, filter: -500},
		"ends and starts, attention_bias per batch item": {x: randn(r, 1, 2, 6, 8), w: randn(r, 0.35, 8, 24), bias: randn(r, 0.3, 24),
			mask: lengths(5, 6, 1, 2), ab: randn(r, 1, 2, 1, 6, 6), heads: 2, filter: -10000},
		"causal, key lengths": {x: randn(r, 1, 2, 5, 8), w: randn(r, 0.35, 8, 24), bias: randn(r, 0.3, 24),
			mask: lengths(4, 5), heads: 4, causal: true, filter: -10000},
		"lengths of [3·batch + 2]": {x: randn(r, 1, 2, 4, 6), w: randn(r, 0.4, 6, 18), bias: randn(r, 0.3, 18),
			mask: lengths(3, 4, 1, 0, 0, 3, 7, 4), heads: 2, filter: -10000},
		"a mask [1, 1]": {x: randn(r, 1, 2, 3, 9), w: randn(r, 0.3, 9, 27), bias: randn(r, 0.3, 27), mask: int32s([]int{1, 1}, 0),
			heads: 3, filter: -10000},
		"decoding one token": {x: randn(r, 1, 3, 1, 12), w: randn(r, 0.3, 12, 36), bias: randn(r, 0.3, 36), mask: lengths(7, 5, 6),
			past: randn(r, 1, 2, 3, 4, 6, 3), heads: 4, causal: true, filter: -10000},
		"no queries after a past": {x: randn(r, 1, 2, 0, 8), w: randn(r, 0.3, 8, 24), past: randn(r, 1, 2, 2, 2, 3, 4),
			heads: 2, filter: -10000},
		"ends and starts out of range": {x: randn(r, 1, 2, 3, 6), w: randn(r, 0.3, 6, 18), bias: randn(r, 0.3, 18), mask: lengths(9, 2, 1, -3),
			heads: 2, filter: -10000},
	}
}

// halfIn returns a with its float inputs FLOAT16.
func halfIn(a attIn) attIn {
	for _, p := range []**tensor.Tensor{&a.x, &a.w, &a.bias, &a.past, &a.ab} {
		if *p != nil {
			*p = half(*p)
		}
	}
	return a
}

// TestAttentionMatchesDefinition runs each form of Attention — BERT's,
// GPT-2's with a past and present, qkv_hidden_sizes, every mask_index
// form, attention_bias broadcast over batch items or heads, causal
// masks, scale and mask_filter_value, no bias, no queries — on every
// kernel table, FLOAT and FLOAT16, weights known at load and read at run
// time, and compares output and present with the definition computed in
// float64.
func TestAttentionMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for name, a := range attCases(r) {
		for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float16} {
			rtol, atol := 1e-4, 1e-5
			if dt == tensor.Float16 {
				a, rtol = halfIn(a), halfRTol
			}
			want, present := a.def(a.project())
			hq, hv := a.sizes()
			total := a.x.Shape[1]
			if a.past != nil {
				total += a.past.Shape[3]
			}
			outs := 1 // present only when K and V have one hidden size
			if present != nil {
				outs = 2
			}
			for _, constant := range []bool{false, true} {
				n := node("Attention", outs, a.attrs()...)
				if constant {
					n.Consts = []*tensor.Tensor{nil, a.w}
				}
				for _, tb := range dispatch.Available() {
					e := gemm.New(tb, 2)
					op, _, err := compileWith(n, len(a.inputs()), loadOpts{engine: e})
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					out, err := op.Run(ops.NewContext(context.Background(), e, false), a.inputs())
					e.Close()
					if err != nil {
						t.Fatalf("%s %v: %v", name, dt, err)
					}
					what := fmt.Sprintf("%s %v (weights known at load %v) on %v", name, dt, constant, tb)
					shape := []int{a.x.Shape[0], a.x.Shape[1], hv}
					if out[0].DType != dt || !slices.Equal(out[0].Shape, shape) {
						t.Fatalf("%s: output %v%v, want %v%v", what, out[0].DType, out[0].Shape, dt, shape)
					}
					if err := near(out[0], want, rtol, atol); err != nil {
						t.Fatalf("%s: output %v", what, err)
					}
					if outs == 1 {
						continue
					}
					shape = []int{2, a.x.Shape[0], a.heads, total, hq / a.heads}
					if !slices.Equal(out[1].Shape, shape) {
						t.Fatalf("%s: present %v, want %v", what, out[1].Shape, shape)
					}
					if err := near(out[1], present, rtol, atol); err != nil {
						t.Fatalf("%s: present %v", what, err)
					}
				}
			}
		}
	}
}

// TestAttentionWeightsAtLoadAsAtRunTime: FLOAT weights known at load run
// on the float kernels exactly as the same weights read at run time.
func TestAttentionWeightsAtLoadAsAtRunTime(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	a := attIn{x: randn(r, 1, 2, 7, 40), w: randn(r, 0.15, 40, 120), bias: randn(r, 0.3, 120), heads: 5, filter: -10000}
	var outs [2][]float32
	for i, constant := range []bool{false, true} {
		n := node("Attention", 1, a.attrs()...)
		if constant {
			n.Consts = []*tensor.Tensor{nil, a.w}
		}
		out, err := opstest.Run(t, n, a.inputs()...)
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = out[0].Data.([]float32)
	}
	if !slices.Equal(outs[0], outs[1]) {
		t.Fatal("weights known at load and read at run time give different outputs")
	}
}

// int8Projections returns x·W + bias as the int8 kernels of engine e
// compute it for a model loaded with quantization of scheme (float32,
// the bias added in float32), [batch·sequence, columns], in float64.
func int8Projections(t *testing.T, a attIn, e *gemm.Engine, scheme quant.Scheme) []float64 {
	t.Helper()
	n := &ops.Node{Name: "w", Type: "Attention", Inputs: []string{"x", "w"}, Engine: e, Quantize: true, Scheme: scheme}
	lin, err := matmul.NewLinear(n, 1, a.w, nil)
	if err != nil || !lin.Quantized() {
		t.Fatalf("weights %v not on the int8 kernels: %v", a.w.Shape, err)
	}
	y, err := lin.Apply(ops.NewContext(context.Background(), e, false), a.x)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, y.Len())
	cols := a.w.Shape[1]
	for i, v := range y.Data.([]float32) {
		if a.bias != nil {
			v += a.bias.Data.([]float32)[i%cols]
		}
		p[i] = float64(v)
	}
	return p
}

// int8OutputBound returns, for each value of the output of run a (no
// past), how far projections p8 (the int8 kernels') may move it from the
// output of exact projections p. For batch item b, head h and query i,
// the scores move by d_i = max over keys t of |scale·(q8·k8_t − q·k_t)|,
// so each softmax weight p'_t by a factor within e^{±2d_i} of p_t, and
// the output's value c, a mean of values v_tc under those weights, by at
// most
//
//	max_t |v8_tc − v_tc| + (e^{2d_i} − 1)·(max_t v_tc − min_t v_tc)/2.
func int8OutputBound(a attIn, p, p8 []float64) []float64 {
	batch, seq := a.x.Shape[0], a.x.Shape[1]
	n := a.heads
	hq, hv := a.sizes()
	hd, vd, cols := hq/n, hv/n, 2*hq+hv
	scale := float64(a.scale)
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(hd))
	}
	at := func(x []float64, b, s, off, j int) float64 { return x[(b*seq+s)*cols+off+j] }
	bound := make([]float64, batch*seq*hv)
	for b := 0; b < batch; b++ {
		for h := 0; h < n; h++ {
			for i := 0; i < seq; i++ {
				var d float64
				for tk := 0; tk < seq; tk++ {
					var s, s8 float64
					for j := 0; j < hd; j++ {
						s += at(p, b, i, h*hd, j) * at(p, b, tk, hq+h*hd, j)
						s8 += at(p8, b, i, h*hd, j) * at(p8, b, tk, hq+h*hd, j)
					}
					d = math.Max(d, scale*math.Abs(s8-s))
				}
				for c := 0; c < vd; c++ {
					var dv, lo, hi float64 = 0, math.Inf(1), math.Inf(-1)
					for tk := 0; tk < seq; tk++ {
						v := at(p, b, tk, 2*hq+h*vd, c)
						dv = math.Max(dv, math.Abs(at(p8, b, tk, 2*hq+h*vd, c)-v))
						lo, hi = math.Min(lo, v), math.Max(hi, v)
					}
					bound[(b*seq+i)*hv+h*vd+c] = dv + math.Expm1(2*d)*(hi-lo)/2
				}
			}
		}
	}
	return bound
}

// TestAttentionWeightKernels: FLOAT weights known at load are held by
// the operator (input 1 held, the projection reported among the layers)
// on the kernels the model's options choose: float32, or int8 when
// quantizing weights of at least ops.MinQuantizedWeights values; FLOAT16
// weights are read at each run. On the int8 kernels the output is within
// the bound the int8 projections' error allows of the definition.
func TestAttentionWeightKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	wide := attIn{x: randn(r, 1, 2, 9, 64), w: randn(r, 0.125, 64, 192), bias: randn(r, 0.3, 192),
		mask: int32s([]int{2}, 9, 6), heads: 4, filter: -10000}
	small := attIn{x: randn(r, 1, 2, 5, 24), w: randn(r, 0.2, 24, 72), bias: randn(r, 0.3, 72), heads: 3, filter: -10000}
	for _, c := range []struct {
		a        attIn
		quantize bool
		scheme   quant.Scheme
		layers   []string
		int8     bool
	}{
		{wide, false, 0, []string{"Attention 64×192 float32"}, false},
		{wide, true, quant.PerChannel, []string{"Attention 64×192 int8 per_channel"}, true},
		{wide, true, quant.PerTensor, []string{"Attention 64×192 int8 per_tensor"}, true},
		{small, true, quant.PerChannel, []string{"Attention 24×72 float32"}, false},
		{halfIn(wide), true, quant.PerChannel, nil, false},
	} {
		p := c.a.project()
		want, _ := c.a.def(p)
		for _, tb := range dispatch.Available() {
			e := gemm.New(tb, 2)
			t.Cleanup(e.Close)
			n := node("Attention", 1, c.a.attrs()...)
			n.Consts = []*tensor.Tensor{nil, c.a.w}
			op, host, err := compileWith(n, len(c.a.inputs()), loadOpts{engine: e, quantize: c.quantize, scheme: c.scheme})
			if err != nil {
				t.Fatal(err)
			}
			in, held := c.a.inputs(), []int{1}
			if c.layers == nil {
				held = nil
			} else {
				in[1] = nil // the compiler feeds nothing the operator holds
			}
			if !slices.Equal(host.layers, c.layers) || !slices.Equal(host.held, held) {
				t.Fatalf("%v: layers %q, held %v; want %q and %v", c.layers, host.layers, host.held, c.layers, held)
			}
			out, err := op.Run(ops.NewContext(context.Background(), e, false), in)
			if err != nil {
				t.Fatal(err)
			}
			if !c.int8 {
				rtol := 1e-4
				if c.a.x.DType == tensor.Float16 {
					rtol = halfRTol
				}
				if err := near(out[0], want, rtol, 1e-5); err != nil {
					t.Fatalf("%v on %v: %v", c.layers, tb, err)
				}
				continue
			}
			bound := int8OutputBound(c.a, p, int8Projections(t, c.a, e, c.scheme))
			for i, g := range out[0].Float64s() {
				if d := math.Abs(g - want[i]); !(d <= bound[i]+1e-5+1e-4*math.Abs(want[i])) {
					t.Fatalf("%v on %v: output[%d] = %v, want %v within %.3g", c.layers, tb, i, g, want[i], bound[i])
				}
			}
		}
	}
}

// TestAttentionRefuses: the forms quantserve does not take are refused,
// naming them; attributes out of range are load errors.
func TestAttentionRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	heads := intAttr("num_heads", 2)
	for _, c := range []struct {
		what   string
		attrs  []*onnxpb.Attribute
		outs   int
		consts []*tensor.Tensor
		unsup  bool
	}{
		{"do_rotary", []*onnxpb.Attribute{heads, intAttr("do_rotary", 1)}, 1, nil, true},
		{"past_present_share_buffer", []*onnxpb.Attribute{heads, intAttr("past_present_share_buffer", 1)}, 1, nil, true},
		{"unidirectional", []*onnxpb.Attribute{heads, intAttr("unidirectional", 2)}, 1, nil, true},
		{"present", []*onnxpb.Attribute{heads, opstest.AttrInts("qkv_hidden_sizes", 4, 4, 6)}, 2, nil, true},
		{"num_heads", nil, 1, nil, false},
		{"qkv_hidden_sizes", []*onnxpb.Attribute{heads, opstest.AttrInts("qkv_hidden_sizes", 4, 4)}, 1, nil, false},
		{"qkv_hidden_sizes", []*onnxpb.Attribute{heads, opstest.AttrInts("qkv_hidden_sizes", 4, 6, 6)}, 1, nil, false},
		{"qkv_hidden_sizes", []*onnxpb.Attribute{heads, opstest.AttrInts("qkv_hidden_sizes", 4, 4, 5)}, 1, nil, false},
		{"weights", []*onnxpb.Attribute{heads}, 1, []*tensor.Tensor{nil, randn(r, 1, 4, 16)}, false},
		{"weights", []*onnxpb.Attribute{heads}, 1, []*tensor.Tensor{nil, randn(r, 1, 4, 3, 12)}, false},
	} {
		n := node("Attention", c.outs, c.attrs...)
		n.Consts = c.consts
		_, _, err := opstest.Compile(n, 3)
		if err == nil || c.unsup != errors.Is(err, ops.ErrUnsupported) {
			t.Errorf("%s: %v, want an error (unsupported: %v)", c.what, err, c.unsup)
		}
	}
}

// TestAttentionInputErrors: inputs the operator cannot take are the
// request's errors (a 4-D mask_index is unsupported).
func TestAttentionInputErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	ok := attIn{x: randn(r, 1, 2, 3, 8), w: randn(r, 0.3, 8, 24), bias: randn(r, 0.3, 24), heads: 2, filter: -10000}
	with := func(f func(a *attIn)) attIn { a := ok; f(&a); return a }
	for what, a := range map[string]attIn{
		"an input of rank 2": with(func(a *attIn) { a.x = randn(r, 1, 6, 8) }),
		"weights' rows":      with(func(a *attIn) { a.w = randn(r, 1, 7, 24) }),
		"weights' columns":   with(func(a *attIn) { a.w = randn(r, 1, 8, 25) }),
		"weights of rank 3":  with(func(a *attIn) { a.w = randn(r, 1, 8, 3, 8) }),
		"bias":               with(func(a *attIn) { a.bias = randn(r, 1, 23) }),
		"past":               with(func(a *attIn) { a.past = randn(r, 1, 2, 2, 2, 3, 5) }),
		"past and a bias":    with(func(a *attIn) { a.past, a.ab = randn(r, 1, 2, 2, 2, 3, 4), randn(r, 1, 2, 2, 3, 6) }),
		"attention_bias":     with(func(a *attIn) { a.ab = randn(r, 1, 2, 3, 3, 3) }),
		"a mask of INT64":    with(func(a *attIn) { a.mask = tensor.From([]int{2}, []int64{1, 2}) }),
		"a mask [3]":         with(func(a *attIn) { a.mask = int32s([]int{3}, 1, 2, 3) }),
		"a mask [2, 2]":      with(func(a *attIn) { a.mask = int32s([]int{2, 2}, 1, 1, 1, 1) }),
		"a mask [2, 2, 3]":   with(func(a *attIn) { a.mask = int32s([]int{2, 2, 3}, make([]int32, 12)...) }),
		"types":              with(func(a *attIn) { a.bias = half(a.bias) }),
		"DOUBLE":             {x: tensor.From([]int{1, 1, 3}, []float64{1, 2, 3}), w: tensor.From([]int{3, 6}, make([]float64, 18)), heads: 2},
		"past with v_hidden > hidden": with(func(a *attIn) {
			a.qkv, a.w, a.bias, a.past = []int64{4, 4, 8}, randn(r, 1, 8, 16), nil, randn(r, 1, 2, 2, 2, 3, 2)
		}),
	} {
		_, err := opstest.Run(t, node("Attention", 1, a.attrs()...), a.inputs()...)
		if !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", what, err)
		}
	}
	// FLOAT16 input with FLOAT weights known at load.
	n := node("Attention", 1, ok.attrs()...)
	n.Consts = []*tensor.Tensor{nil, ok.w}
	op, _, err := opstest.Compile(n, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Run(background(), []*tensor.Tensor{half(ok.x), nil}); !errors.Is(err, ops.ErrInput) {
		t.Errorf("FLOAT16 input, FLOAT weights at load: %v, want an input error", err)
	}
	// Megatron's 4-D mask.
	a := with(func(a *attIn) { a.mask = int32s([]int{2, 1, 4, 4}, make([]int32, 32)...) })
	if _, err := opstest.Run(t, node("Attention", 1, a.attrs()...), a.inputs()...); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("a 4-D mask_index: %v, want unsupported", err)
	}
}

// TestAttentionStopsAtDeadline: a run under a cancelled request returns
// the request's error.
func TestAttentionStopsAtDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := rand.New(rand.NewPCG(51, 52))
	a := attIn{x: randn(r, 1, 2, 16, 32), w: randn(r, 0.2, 32, 96), heads: 4}
	op, _, err := opstest.Compile(node("Attention", 1, a.attrs()...), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Run(ops.NewContext(ctx, gemm.Default(), false), a.inputs()); !errors.Is(err, context.Canceled) {
		t.Errorf("Attention under a cancelled request: %v", err)
	}
}
