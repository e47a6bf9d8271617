package contrib

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// mhaDef is MultiHeadAttention by its definition, in float64, over
// accessors of the heads: query (b, h, i, j), key and value (b, h, t, j)
// for t over the past and then the run's keys, and add (b, h, i, t), the
// attention bias plus the mask of a score (-Inf: not attended). The
// output is [batch, seq, heads·hv].
type mhaDef struct {
	batch, seq, total, heads, hd, hv int
	scale                            float64
	q, k, v                          func(b, h, i, j int) float64
	add                              func(b, h, i, t int) float64
}

func (d mhaDef) output() []float64 {
	out := make([]float64, d.batch*d.seq*d.heads*d.hv)
	for b := 0; b < d.batch; b++ {
		for h := 0; h < d.heads; h++ {
			for i := 0; i < d.seq; i++ {
				s := make([]float64, d.total)
				m := math.Inf(-1)
				for t := range s {
					for j := 0; j < d.hd; j++ {
						s[t] += d.q(b, h, i, j) * d.k(b, h, t, j)
					}
					s[t] *= d.scale
					if d.add != nil {
						s[t] += d.add(b, h, i, t)
					}
					m = math.Max(m, s[t])
				}
				var z float64
				for t := range s {
					s[t] = math.Exp(s[t] - m)
					z += s[t]
				}
				for j := 0; j < d.hv; j++ {
					var y float64
					for t := range s {
						y += s[t] / z * d.v(b, h, t, j)
					}
					out[((b*d.seq+i)*d.heads+h)*d.hv+j] = y
				}
			}
		}
	}
	return out
}

// at reads x (FLOAT or FLOAT16) at flat index i.
func at(x *tensor.Tensor, i int) float64 {
	switch d := x.Data.(type) {
	case []float32:
		return float64(d[i])
	case []tensor.F16:
		return float64(tensor.HalfToFloat32(d[i : i+1])[0])
	}
	panic("not a float tensor")
}

// biased returns the accessor of heads of x, [batch, seq, heads·size],
// plus bias[off + h·size + j] (in float32, as the operator adds it) when
// bias is not nil.
func biased(x, bias *tensor.Tensor, seq, heads, size, off int) func(b, h, i, j int) float64 {
	return func(b, h, i, j int) float64 {
		v := at(x, ((b*seq+i)*heads+h)*size+j)
		if bias != nil {
			v = float64(float32(v) + float32(at(bias, off+h*size+j)))
		}
		return v
	}
}

// bnsh returns the accessor of x, [batch, heads, seq, size].
func bnsh(x *tensor.Tensor, heads, seq, size int) func(b, h, i, j int) float64 {
	return func(b, h, i, j int) float64 { return at(x, ((b*heads+h)*seq+i)*size+j) }
}

// withPast returns the accessor of the past's p positions then cur's.
func withPast(past, cur func(b, h, i, j int) float64, p int) func(b, h, i, j int) float64 {
	return func(b, h, i, j int) float64 {
		if i < p {
			return past(b, h, i, j)
		}
		return cur(b, h, i-p, j)
	}
}

func mhaNode(heads int, outputs int, attrs ...*onnxpb.Attribute) opstest.Node {
	return node("MultiHeadAttention", outputs, append([]*onnxpb.Attribute{intAttr("num_heads", int64(heads))}, attrs...)...)
}

func int32s(shape []int, v ...int32) *tensor.Tensor { return tensor.From(shape, v) }

// checkNear fails the test unless got's shape is shape and its values
// are within 1e-5 + 1e-4·|want| of want.
func checkNear(t *testing.T, what string, got *tensor.Tensor, shape []int, want []float64) {
	t.Helper()
	if !slices.Equal(got.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	if err := near(got, want, 1e-4, 1e-5); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// flat returns the values of an accessor over [batch, heads, seq, size].
func flat(f func(b, h, i, j int) float64, batch, heads, seq, size int) []float64 {
	var v []float64
	for b := 0; b < batch; b++ {
		for h := 0; h < heads; h++ {
			for i := 0; i < seq; i++ {
				for j := 0; j < size; j++ {
					v = append(v, f(b, h, i, j))
				}
			}
		}
	}
	return v
}

// TestMultiHeadAttentionSeparate: query, key and value of their own,
// the value's heads wider than the key's, the bias, a sequence of keys
// longer than the queries', attention_bias over the heads and every
// output.
func TestMultiHeadAttentionSeparate(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const b, s, l, n, hd, hv = 2, 3, 5, 2, 4, 6
	q, k, v := randn(r, 1, b, s, n*hd), randn(r, 1, b, l, n*hd), randn(r, 1, b, l, n*hv)
	bias, ab := randn(r, 0.5, 2*n*hd+n*hv), randn(r, 1, 1, n, s, l)
	outs, err := opstest.Run(t, mhaNode(n, 3), q, k, v, bias, nil, ab)
	if err != nil {
		t.Fatal(err)
	}
	kf, vf := biased(k, bias, l, n, hd, n*hd), biased(v, bias, l, n, hv, 2*n*hd)
	d := mhaDef{batch: b, seq: s, total: l, heads: n, hd: hd, hv: hv, scale: 1 / math.Sqrt(hd),
		q: biased(q, bias, s, n, hd, 0), k: kf, v: vf,
		add: func(_, h, i, t int) float64 { return at(ab, (h*s+i)*l+t) }}
	checkNear(t, "output", outs[0], []int{b, s, n * hv}, d.output())
	checkNear(t, "present_key", outs[1], []int{b, n, l, hd}, flat(kf, b, n, l, hd))
	checkNear(t, "present_value", outs[2], []int{b, n, l, hv}, flat(vf, b, n, l, hv))
}

// TestMultiHeadAttentionPast: decoding with past_key and past_value, the
// causal mask over the past and the run's keys, key lengths and scale.
func TestMultiHeadAttentionPast(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	const b, s, p, n, hd = 2, 3, 4, 3, 5
	const total = p + s
	q, k, v := randn(r, 1, b, s, n*hd), randn(r, 1, b, s, n*hd), randn(r, 1, b, s, n*hd)
	pk, pv := randn(r, 1, b, n, p, hd), randn(r, 1, b, n, p, hd)
	lengths := []int32{6, 7}
	outs, err := opstest.Run(t, mhaNode(n, 3, intAttr("unidirectional", 1), floatAttr("scale", 0.3)),
		q, k, v, nil, int32s([]int{b}, lengths...), nil, pk, pv)
	if err != nil {
		t.Fatal(err)
	}
	kf := withPast(bnsh(pk, n, p, hd), biased(k, nil, s, n, hd, 0), p)
	vf := withPast(bnsh(pv, n, p, hd), biased(v, nil, s, n, hd, 0), p)
	d := mhaDef{batch: b, seq: s, total: total, heads: n, hd: hd, hv: hd, scale: float64(float32(0.3)),
		q: biased(q, nil, s, n, hd, 0), k: kf, v: vf,
		add: func(bi, _, i, t int) float64 {
			if t > p+i || t >= int(lengths[bi]) {
				return math.Inf(-1)
			}
			return 0
		}}
	checkNear(t, "output", outs[0], []int{b, s, n * hd}, d.output())
	checkNear(t, "present_key", outs[1], []int{b, n, total, hd}, flat(kf, b, n, total, hd))
	checkNear(t, "present_value", outs[2], []int{b, n, total, hd}, flat(vf, b, n, total, hd))
}

// TestMultiHeadAttentionMasks runs every form of key_padding_mask and
// every broadcast of attention_bias.
func TestMultiHeadAttentionMasks(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	const b, s, l, n, hd = 2, 3, 6, 2, 4
	q, k, v := randn(r, 1, b, s, n*hd), randn(r, 1, b, l, n*hd), randn(r, 1, b, l, n*hd)
	keys := []int32{4, 2}
	raw := make([]int32, b*l) // 0 or 1, a few above 1, every row attending some key
	for i := range raw {
		raw[i] = int32(r.IntN(3))
		if i%l == 0 {
			raw[i] = 1
		}
	}
	raw3 := make([]int32, b*s*l)
	for i := range raw3 {
		raw3[i] = int32(r.IntN(2))
		if i%l == i/l%s {
			raw3[i] = 2
		}
	}
	masks := []struct {
		name string
		mask *tensor.Tensor
		keep func(b, i, t int) bool
	}{
		{"none", nil, func(int, int, int) bool { return true }},
		{"lengths", int32s([]int{b}, keys...), func(bi, _, t int) bool { return t < int(keys[bi]) }},
		{"lengths and starts", int32s([]int{3*b + 2}, append(slices.Clone(keys), 0, 0, 0, 0, 0, 0)...),
			func(bi, _, t int) bool { return t < int(keys[bi]) }},
		{"[batch, total]", int32s([]int{b, l}, raw...), func(bi, _, t int) bool { return raw[bi*l+t] > 0 }},
		{"[batch, seq, total]", int32s([]int{b, s, l}, raw3...), func(bi, i, t int) bool { return raw3[(bi*s+i)*l+t] > 0 }},
	}
	biases := [][]int{nil, {1, 1, s, l}, {b, 1, s, l}, {1, n, s, l}, {b, n, s, l}}
	for _, m := range masks {
		for _, bs := range biases {
			var ab *tensor.Tensor
			if bs != nil {
				ab = randn(r, 1, bs...)
			}
			outs, err := opstest.Run(t, mhaNode(n, 1), q, k, v, nil, m.mask, ab)
			if err != nil {
				t.Fatalf("%s, attention_bias %v: %v", m.name, bs, err)
			}
			d := mhaDef{batch: b, seq: s, total: l, heads: n, hd: hd, hv: hd, scale: 0.5,
				q: biased(q, nil, s, n, hd, 0), k: biased(k, nil, l, n, hd, 0), v: biased(v, nil, l, n, hd, 0),
				add: func(bi, h, i, t int) float64 {
					if !m.keep(bi, i, t) {
						return math.Inf(-1)
					}
					if ab == nil {
						return 0
					}
					return at(ab, ((bi%bs[0]*bs[1]+h%bs[1])*s+i)*l+t)
				}}
			if err := near(outs[0], d.output(), 1e-4, 1e-5); err != nil {
				t.Errorf("%s, attention_bias %v: %v", m.name, bs, err)
			}
		}
	}
}

// TestMultiHeadAttentionFullyMasked: a batch item whose keys are all
// padding attends them all, their scores lowered alike by
// mask_filter_value (to within its float32 rounding); with a
// mask_filter_value of -Inf its outputs are NaN, as in ONNX Runtime.
func TestMultiHeadAttentionFullyMasked(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	const b, s, l, n, hd = 2, 2, 3, 1, 4
	q, k, v := randn(r, 1, b, s, n*hd), randn(r, 1, b, l, n*hd), randn(r, 1, b, l, n*hd)
	mask := int32s([]int{b}, 0, 3)
	outs, err := opstest.Run(t, mhaNode(n, 1), q, k, v, nil, mask)
	if err != nil {
		t.Fatal(err)
	}
	d := mhaDef{batch: b, seq: s, total: l, heads: n, hd: hd, hv: hd, scale: 0.5,
		q: biased(q, nil, s, n, hd, 0), k: biased(k, nil, l, n, hd, 0), v: biased(v, nil, l, n, hd, 0)}
	if err := near(outs[0], d.output(), 0, 5e-3); err != nil {
		t.Error(err)
	}
	outs, err = opstest.Run(t, mhaNode(n, 1, floatAttr("mask_filter_value", float32(math.Inf(-1)))), q, k, v, nil, mask)
	if err != nil {
		t.Fatal(err)
	}
	for i, y := range outs[0].Float64s() {
		if nan := i < s*n*hd; nan != math.IsNaN(y) {
			t.Fatalf("[%d] = %v (batch item %d)", i, y, i/(s*n*hd))
		}
	}
}

// TestMultiHeadAttentionCross: key and value [batch, heads, kv_sequence,
// head_size] are the cache of cross attention, taken as they are: the
// bias reaches the query only, and present_key and present_value are
// the cache.
func TestMultiHeadAttentionCross(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 40))
	const b, s, l, n, hd, hv = 2, 3, 4, 2, 4, 3
	q, k, v := randn(r, 1, b, s, n*hd), randn(r, 1, b, n, l, hd), randn(r, 1, b, n, l, hv)
	bias := randn(r, 1, 2*n*hd+n*hv)
	outs, err := opstest.Run(t, mhaNode(n, 3), q, k, v, bias)
	if err != nil {
		t.Fatal(err)
	}
	d := mhaDef{batch: b, seq: s, total: l, heads: n, hd: hd, hv: hv, scale: 0.5,
		q: biased(q, bias, s, n, hd, 0), k: bnsh(k, n, l, hd), v: bnsh(v, n, l, hv)}
	checkNear(t, "output", outs[0], []int{b, s, n * hv}, d.output())
	if !slices.Equal(outs[1].Data.([]float32), k.Data.([]float32)) || !slices.Equal(outs[2].Data.([]float32), v.Data.([]float32)) {
		t.Error("present_key and present_value are not key and value")
	}
}

// TestMultiHeadAttentionPacked: packed QKV and packed KV give the same
// bits as the same heads passed separately.
func TestMultiHeadAttentionPacked(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const b, s, l, n, hd = 2, 3, 5, 2, 4
	// parts splits x, [b, seq, n, parts, hd], into parts tensors [b, seq, n·hd].
	parts := func(x *tensor.Tensor, seq, parts int) []*tensor.Tensor {
		xs := x.Data.([]float32)
		out := make([]*tensor.Tensor, parts)
		for p := range out {
			v := make([]float32, 0, b*seq*n*hd)
			for tok := 0; tok < b*seq; tok++ {
				for h := 0; h < n; h++ {
					o := ((tok*n+h)*parts + p) * hd
					v = append(v, xs[o:o+hd]...)
				}
			}
			out[p] = tensor.From([]int{b, seq, n * hd}, v)
		}
		return out
	}
	same := func(what string, got, want []*tensor.Tensor) {
		t.Helper()
		for i := range want {
			if !slices.Equal(got[i].Shape, want[i].Shape) || !slices.Equal(got[i].Data.([]float32), want[i].Data.([]float32)) {
				t.Errorf("%s: output %d differs from the separate heads'", what, i)
			}
		}
	}
	qkv, bias, ab := randn(r, 1, b, s, n, 3, hd), randn(r, 1, 3*n*hd), randn(r, 1, b, 1, s, s)
	mask := int32s([]int{b, s}, 1, 1, 0, 1, 0, 1)
	got, err := opstest.Run(t, mhaNode(n, 3), qkv, nil, nil, bias, mask, ab)
	if err != nil {
		t.Fatal(err)
	}
	sep := parts(qkv, s, 3)
	want, err := opstest.Run(t, mhaNode(n, 3), sep[0], sep[1], sep[2], bias, mask, ab)
	if err != nil {
		t.Fatal(err)
	}
	same("packed QKV", got, want)

	q, kv := randn(r, 1, b, s, n*hd), randn(r, 1, b, l, n, 2, hd)
	got, err = opstest.Run(t, mhaNode(n, 3, intAttr("unidirectional", 0)), q, kv)
	if err != nil {
		t.Fatal(err)
	}
	sep = parts(kv, l, 2)
	want, err = opstest.Run(t, mhaNode(n, 3), q, sep[0], sep[1])
	if err != nil {
		t.Fatal(err)
	}
	same("packed KV", got, want)
}

// TestMultiHeadAttentionFloat16 computes FLOAT16 inputs in float32 and
// rounds the outputs once.
func TestMultiHeadAttentionFloat16(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	const b, s, l, n, hd = 1, 4, 4, 2, 8
	q, k, v := half(randn(r, 1, b, s, n*hd)), half(randn(r, 1, b, l, n*hd)), half(randn(r, 1, b, l, n*hd))
	bias := half(randn(r, 0.3, 3*n*hd))
	outs, err := opstest.Run(t, mhaNode(n, 2, intAttr("unidirectional", 1)), q, k, v, bias)
	if err != nil {
		t.Fatal(err)
	}
	d := mhaDef{batch: b, seq: s, total: l, heads: n, hd: hd, hv: hd, scale: float64(float32(1 / math.Sqrt(hd))),
		q: biased(q, bias, s, n, hd, 0), k: biased(k, bias, l, n, hd, n*hd), v: biased(v, bias, l, n, hd, 2*n*hd),
		add: func(_, _, i, t int) float64 {
			if t > i {
				return math.Inf(-1)
			}
			return 0
		}}
	if outs[0].DType != tensor.Float16 || outs[1].DType != tensor.Float16 {
		t.Fatalf("outputs %v and %v, want FLOAT16", outs[0].DType, outs[1].DType)
	}
	if err := near(outs[0], d.output(), halfRTol, 1e-3); err != nil {
		t.Error(err)
	}
	if err := near(outs[1], flat(d.k, b, n, l, hd), halfRTol, 0); err != nil {
		t.Error(err)
	}
}

// TestMultiHeadAttentionNoKeys: with no keys the output is 0; with no
// queries it is empty.
func TestMultiHeadAttentionNoKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	outs, err := opstest.Run(t, mhaNode(2, 3), randn(r, 1, 2, 3, 8), randn(r, 1, 2, 0, 8), randn(r, 1, 2, 0, 6))
	if err != nil {
		t.Fatal(err)
	}
	checkNear(t, "output", outs[0], []int{2, 3, 6}, make([]float64, 36))
	if !slices.Equal(outs[1].Shape, []int{2, 2, 0, 4}) || !slices.Equal(outs[2].Shape, []int{2, 2, 0, 3}) {
		t.Errorf("present shapes %v and %v", outs[1].Shape, outs[2].Shape)
	}
	outs, err = opstest.Run(t, mhaNode(2, 1), randn(r, 1, 2, 0, 8), randn(r, 1, 2, 4, 8), randn(r, 1, 2, 4, 8))
	if err != nil || !slices.Equal(outs[0].Shape, []int{2, 0, 8}) {
		t.Fatalf("no queries: %v", err)
	}
}

// TestMultiHeadAttentionRefusals: the inputs and output quantserve does
// not take, a unidirectional attention of unequal sequences and
// attributes out of range are refused, naming them.
func TestMultiHeadAttentionRefusals(t *testing.T) {
	for _, c := range []struct {
		n      opstest.Node
		inputs int
	}{
		{mhaNode(2, 4), 3},  // qk
		{mhaNode(2, 1), 9},  // past_sequence_length
		{mhaNode(2, 1), 10}, // cache_indirection
		{mhaNode(2, 1, intAttr("unidirectional", 2)), 3},
	} {
		if _, _, err := opstest.Compile(c.n, c.inputs); !errors.Is(err, ops.ErrUnsupported) {
			t.Errorf("%d inputs, %d outputs, %v: %v, want unsupported", c.inputs, c.n.Outputs, c.n.Attrs, err)
		}
	}
	for _, h := range []int64{0, -1} {
		if _, _, err := opstest.Compile(mhaNode(int(h), 1), 3); err == nil {
			t.Errorf("num_heads %d compiled", h)
		}
	}
	r := rand.New(rand.NewPCG(47, 48))
	_, err := opstest.Run(t, mhaNode(2, 1, intAttr("unidirectional", 1)), randn(r, 1, 1, 2, 8), randn(r, 1, 1, 3, 8), randn(r, 1, 1, 3, 8))
	if !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("unidirectional over 3 keys for 2 queries: %v, want unsupported", err)
	}
}

// TestMultiHeadAttentionInputErrors: inputs of wrong shapes or types are
// input errors.
func TestMultiHeadAttentionInputErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	const b, s, n, hd = 2, 3, 2, 4
	q, k, v := randn(r, 1, b, s, n*hd), randn(r, 1, b, s, n*hd), randn(r, 1, b, s, n*hd)
	pk := randn(r, 1, b, n, 2, hd)
	for name, in := range map[string][]*tensor.Tensor{
		"query 2-D":                 {randn(r, 1, b, n*hd), k, v},
		"hidden not of num_heads":   {randn(r, 1, b, s, 7), randn(r, 1, b, s, 7), randn(r, 1, b, s, 7)},
		"query alone":               {q},
		"value without key":         {q, nil, v},
		"key without value":         {q, k},
		"key batch":                 {q, randn(r, 1, 1, s, n*hd), v},
		"key hidden":                {q, randn(r, 1, b, s, 4), v},
		"value sequence":            {q, k, randn(r, 1, b, 2, n*hd)},
		"key 3-D, value 4-D":        {q, k, randn(r, 1, b, n, s, hd)},
		"key 4-D head size":         {q, randn(r, 1, b, n, s, 3), randn(r, 1, b, n, s, 3)},
		"packed QKV heads":          {randn(r, 1, b, s, 3, 3, hd)},
		"packed QKV and key":        {randn(r, 1, b, s, n, 3, hd), k, v},
		"packed KV head size":       {q, randn(r, 1, b, s, n, 2, 3)},
		"bias length":               {q, k, v, randn(r, 1, 3*n*hd-1)},
		"bias of packed KV":         {q, randn(r, 1, b, s, n, 2, hd), nil, randn(r, 1, 3*n*hd)},
		"past_key alone":            {q, k, v, nil, nil, nil, pk},
		"past of cross attention":   {q, randn(r, 1, b, n, s, hd), randn(r, 1, b, n, s, hd), nil, nil, nil, pk, pk},
		"past of packed QKV":        {randn(r, 1, b, s, n, 3, hd), nil, nil, nil, nil, nil, pk, pk},
		"past_key head size":        {q, k, v, nil, nil, nil, randn(r, 1, b, n, 2, 3), pk},
		"past_value length":         {q, k, v, nil, nil, nil, pk, randn(r, 1, b, n, 3, hd)},
		"mask [batch, kv] and past": {q, k, v, nil, int32s([]int{b, s}, 1, 1, 1, 1, 1, 1), nil, pk, pk},
		"mask length":               {q, k, v, nil, int32s([]int{3}, 1, 1, 1)},
		"mask INT64":                {q, k, v, nil, tensor.From([]int{b}, []int64{1, 1})},
		"attention_bias 3-D":        {q, k, v, nil, nil, randn(r, 1, 1, s, s)},
		"attention_bias heads":      {q, k, v, nil, nil, randn(r, 1, 1, 3, s, s)},
		"attention_bias keys":       {q, k, v, nil, nil, randn(r, 1, 1, 1, s, s+1)},
		"FLOAT16 key":               {q, half(k), v},
		"DOUBLE":                    {tensor.From([]int{1, 1, 2}, []float64{1, 2}), tensor.From([]int{1, 1, 2}, []float64{1, 2}), tensor.From([]int{1, 1, 2}, []float64{1, 2})},
	} {
		if _, err := opstest.Run(t, mhaNode(n, 1), in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

// TestMultiHeadAttentionStopsAtDeadline: a run under a cancelled request
// returns the request's error.
func TestMultiHeadAttentionStopsAtDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := rand.New(rand.NewPCG(59, 60))
	op, _, err := opstest.Compile(mhaNode(4, 1), 3)
	if err != nil {
		t.Fatal(err)
	}
	x := randn(r, 1, 2, 64, 256)
	if _, err := op.Run(ops.NewContext(ctx, gemm.Default(), false), []*tensor.Tensor{x, x, x}); !errors.Is(err, context.Canceled) {
		t.Errorf("under a cancelled request: %v", err)
	}
}
