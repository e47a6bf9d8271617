package contrib

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// ropeCaches returns cos and sin caches [positions, half] of angles
// p·10000^(-i/half).
func ropeCaches(positions, half int) (*tensor.Tensor, *tensor.Tensor) {
	cos, sin := make([]float32, positions*half), make([]float32, positions*half)
	for p := 0; p < positions; p++ {
		for i := 0; i < half; i++ {
			a := float64(p) * math.Pow(10000, -float64(i)/float64(half))
			cos[p*half+i], sin[p*half+i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	return tensor.From([]int{positions, half}, cos), tensor.From([]int{positions, half}, sin)
}

// ropeDef rotates x, [batch, seq, heads·head], by the definition: at
// token (b, s) of position pos(b, s), each head's pairs (i, i + rot/2),
// or (2i, 2i+1) interleaved, for i < rot/2, by the angle of cache entry
// i; the head's values from rot on are kept.
func ropeDef(x []float32, batch, seq, heads, head, rot int, interleaved bool, pos func(b, s int) int, cos, sin []float32) []float64 {
	y := make([]float64, len(x))
	half := rot / 2
	for b := 0; b < batch; b++ {
		for s := 0; s < seq; s++ {
			p := pos(b, s)
			for h := 0; h < heads; h++ {
				o := ((b*seq+s)*heads + h) * head
				for i := 0; i < head; i++ {
					y[o+i] = float64(x[o+i])
				}
				for i := 0; i < half; i++ {
					j, k := o+i, o+i+half
					if interleaved {
						j, k = o+2*i, o+2*i+1
					}
					c, sn := float64(cos[p*half+i]), float64(sin[p*half+i])
					y[j] = float64(x[j])*c - float64(x[k])*sn
					y[k] = float64(x[k])*c + float64(x[j])*sn
				}
			}
		}
	}
	return y
}

// transpose12 swaps the middle axes of a [a, b, c, d] FLOAT tensor.
func transpose12(x *tensor.Tensor) *tensor.Tensor {
	a, b, c, d := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	v, w := x.Data.([]float32), make([]float32, x.Len())
	for i := 0; i < a; i++ {
		for j := 0; j < b; j++ {
			for k := 0; k < c; k++ {
				copy(w[((i*c+k)*b+j)*d:][:d], v[((i*b+j)*c+k)*d:][:d])
			}
		}
	}
	return tensor.From([]int{a, c, b, d}, w)
}

// TestRotaryEmbeddingMatchesDefinition checks both pairings, full and
// partial rotary dimensions, both forms of position_ids, and that the
// [batch, heads, seq, head] layout gives the same values as [batch, seq,
// hidden].
func TestRotaryEmbeddingMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	const batch, seq, heads, head = 2, 5, 3, 12
	x := randn(r, 1, batch, seq, heads*head)
	ids := []int64{3, 0, 7, 1, 2, 9, 9, 4, 0, 5}
	for _, rot := range []int{0, 8} {
		for _, il := range []bool{false, true} {
			for _, one := range []bool{false, true} {
				width := head / 2
				attrs := []*onnxpb.Attribute{}
				if rot > 0 {
					width = rot / 2
					attrs = append(attrs, intAttr("rotary_embedding_dim", int64(rot)), intAttr("num_heads", heads))
				}
				if il {
					attrs = append(attrs, intAttr("interleaved", 1))
				}
				cos, sin := ropeCaches(10, width)
				pos := tensor.From([]int{batch, seq}, ids)
				at := func(b, s int) int { return int(ids[b*seq+s]) }
				if one {
					pos = tensor.From([]int{1}, []int64{4})
					at = func(_, s int) int { return 4 + s }
				}
				y, err := run(t, "RotaryEmbedding", attrs, x, pos, cos, sin)
				if err != nil {
					t.Fatal(err)
				}
				want := ropeDef(x.Data.([]float32), batch, seq, heads, head, 2*width, il, at, cos.Data.([]float32), sin.Data.([]float32))
				if err := near(y, want, 1e-6, 1e-7); err != nil {
					t.Errorf("rotary_dim %d, interleaved %v, one position %v%v", rot, il, one, err)
				}
				// The same heads as [batch, heads, seq, head].
				x4 := transpose12(tensor.From([]int{batch, seq, heads, head}, x.Data.([]float32)))
				y4, err := run(t, "RotaryEmbedding", attrs, x4, pos, cos, sin)
				if err != nil {
					t.Fatal(err)
				}
				back := transpose12(y4)
				if err := near(tensor.From(y.Shape, back.Data.([]float32)), y.Float64s(), 0, 0); err != nil {
					t.Errorf("rotary_dim %d, interleaved %v, one position %v: 4-D%v", rot, il, one, err)
				}
			}
		}
	}
}

// TestRotaryEmbeddingFloat16: FLOAT16 input and caches give FLOAT16.
func TestRotaryEmbeddingFloat16(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	x := randn(r, 1, 1, 3, 8)
	cos, sin := ropeCaches(4, 4)
	pos := tensor.From([]int{1}, []int64{1})
	y, err := run(t, "RotaryEmbedding", nil, half(x), pos, half(cos), half(sin))
	if err != nil {
		t.Fatal(err)
	}
	want, err := run(t, "RotaryEmbedding", nil, x, pos, cos, sin)
	if err != nil {
		t.Fatal(err)
	}
	if y.DType != tensor.Float16 {
		t.Fatalf("FLOAT16 input gives %v", y.DType)
	}
	if err := near(y, want.Float64s(), 1.0/256, 1e-3); err != nil {
		t.Errorf("FLOAT16%v", err)
	}
}

// TestRotaryEmbeddingRefuses: attribute values and inputs outside the
// definition.
func TestRotaryEmbeddingRefuses(t *testing.T) {
	for name, attrs := range map[string][]*onnxpb.Attribute{
		"rotary_embedding_dim without num_heads": {intAttr("rotary_embedding_dim", 4)},
		"an odd rotary_embedding_dim":            {intAttr("rotary_embedding_dim", 5), intAttr("num_heads", 1)},
		"negative num_heads":                     {intAttr("num_heads", -1)},
		"interleaved 2":                          {intAttr("interleaved", 2)},
		"is_packed_batching 2":                   {intAttr("is_packed_batching", 2)},
	} {
		if _, _, err := opstest.Compile(node("RotaryEmbedding", 1, attrs...), 4); err == nil {
			t.Errorf("%s compiled", name)
		}
	}
	if _, _, err := opstest.Compile(node("RotaryEmbedding", 1, intAttr("interleaved", 2)), 4); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("interleaved 2: %v, want unsupported", err)
	}

	r := rand.New(rand.NewPCG(23, 24))
	x := randn(r, 1, 2, 3, 16)
	cos, sin := ropeCaches(6, 4)
	one := tensor.From([]int{1}, []int64{0})
	for name, c := range map[string]struct {
		attrs []*onnxpb.Attribute
		in    []*tensor.Tensor
	}{
		"rank 2 input":               {nil, []*tensor.Tensor{randn(r, 1, 3, 16), one, cos, sin}},
		"INT32 positions":            {nil, []*tensor.Tensor{x, tensor.From([]int{1}, []int32{0}), cos, sin}},
		"a start past the end":       {nil, []*tensor.Tensor{x, tensor.From([]int{1}, []int64{4}), cos, sin}},
		"a negative start":           {nil, []*tensor.Tensor{x, tensor.From([]int{1}, []int64{-1}), cos, sin}},
		"a position past the end":    {nil, []*tensor.Tensor{x, tensor.From([]int{2, 3}, []int64{0, 1, 2, 3, 4, 6}), cos, sin}},
		"positions of another shape": {nil, []*tensor.Tensor{x, tensor.From([]int{3, 2}, []int64{0, 1, 2, 3, 4, 5}), cos, sin}},
		"caches of two shapes":       {nil, []*tensor.Tensor{x, one, cos, randn(r, 1, 6, 3)}},
		"a cache of rank 1":          {nil, []*tensor.Tensor{x, one, randn(r, 1, 24), randn(r, 1, 24)}},
		"hidden not in heads":        {nil, []*tensor.Tensor{randn(r, 1, 2, 3, 12), one, cos, sin}},
		"num_heads disagreeing":      {[]*onnxpb.Attribute{intAttr("num_heads", 4)}, []*tensor.Tensor{x, one, cos, sin}},
		"caches of the head, not the rotary dim": {[]*onnxpb.Attribute{intAttr("num_heads", 2), intAttr("rotary_embedding_dim", 4)},
			[]*tensor.Tensor{x, one, cos, sin}},
		"rotary dim over the head": {[]*onnxpb.Attribute{intAttr("num_heads", 4), intAttr("rotary_embedding_dim", 8)},
			[]*tensor.Tensor{x, one, cos, sin}},
		"4-D heads of another size": {nil, []*tensor.Tensor{randn(r, 1, 2, 2, 3, 6), one, cos, sin}},
		"4-D heads disagreeing":     {[]*onnxpb.Attribute{intAttr("num_heads", 3)}, []*tensor.Tensor{randn(r, 1, 2, 2, 3, 8), one, cos, sin}},
	} {
		if _, err := run(t, "RotaryEmbedding", c.attrs, c.in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}
