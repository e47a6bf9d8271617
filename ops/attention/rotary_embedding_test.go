package attention

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

// rotaryOp compiles a RotaryEmbedding node with attributes at for inputs
// inputs.
func rotaryOp(t testing.TB, at RotaryEmbeddingAttrs, inputs int) runFunc {
	t.Helper()
	n := opstest.Node{Op: "RotaryEmbedding", Opset: 23, Attrs: []*onnxpb.Attribute{
		attrInt("interleaved", boolInt(at.Interleaved)), attrInt("num_heads", at.NumHeads),
		attrInt("rotary_embedding_dim", at.RotaryEmbeddingDim),
	}}
	return compiled(compile(t, n, inputs), nil)
}

// TestRotaryLayouts checks the rank-4 (batch, heads, seq, dim) form
// against the rotation written out, that the rank-3 (batch, seq,
// heads·dim) form rotates alike, and the errors.
func TestRotaryLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	b, h, s, d := 2, 3, 4, 8
	x4 := randTensor(r, b, h, s, d)
	xd := x4.Data.([]float32)
	x3 := make([]float32, b*s*h*d)
	for bi := 0; bi < b; bi++ {
		for hi := 0; hi < h; hi++ {
			for si := 0; si < s; si++ {
				copy(x3[((bi*s+si)*h+hi)*d:], xd[((bi*h+hi)*s+si)*d:((bi*h+hi)*s+si+1)*d])
			}
		}
	}
	cos, sin := randTensor(r, 10, 2), randTensor(r, 10, 2)
	pos := tensor.From([]int{b, s}, []int64{0, 1, 2, 3, 9, 8, 7, 6})
	cd, sd, pd := cos.Data.([]float32), sin.Data.([]float32), pos.Data.([]int64)
	for _, inter := range []bool{false, true} {
		op4 := rotaryOp(t, RotaryEmbeddingAttrs{Interleaved: inter, RotaryEmbeddingDim: 4}, 4)
		op3 := rotaryOp(t, RotaryEmbeddingAttrs{Interleaved: inter, RotaryEmbeddingDim: 4, NumHeads: int64(h)}, 4)
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
					row := xd[((bi*h+hi)*s+si)*d:]
					p := int(pd[bi*s+si])
					want := make([]float64, d)
					for f := range want {
						want[f] = float64(row[f])
					}
					for i := 0; i < 2; i++ {
						j, k := i, i+2 // the pair (x[i], x[i + dim/2])
						if inter {
							j, k = 2*i, 2*i+1
						}
						c, sn := float64(cd[p*2+i]), float64(sd[p*2+i])
						want[j] = c*float64(row[j]) - sn*float64(row[k])
						want[k] = sn*float64(row[j]) + c*float64(row[k])
					}
					for f := 0; f < d; f++ {
						g, w := a3[((bi*s+si)*h+hi)*d+f], a4[((bi*h+hi)*s+si)*d+f]
						if g != w {
							t.Fatalf("interleaved=%v (%d,%d,%d,%d): rank 3 %v, rank 4 %v", inter, bi, hi, si, f, g, w)
						}
						if f >= 4 && w != row[f] {
							t.Fatal("features past rotary_embedding_dim must pass through")
						}
						if math.Abs(float64(w)-want[f]) > 1e-6*(1+math.Abs(want[f])) {
							t.Fatalf("interleaved=%v (%d,%d,%d,%d) = %v, want %v", inter, bi, hi, si, f, w, want[f])
						}
					}
				}
			}
		}
	}
	op := rotaryOp(t, RotaryEmbeddingAttrs{}, 4)
	op3 := rotaryOp(t, RotaryEmbeddingAttrs{}, 3)
	for name, c := range map[string]struct {
		op runFunc
		in []*tensor.Tensor
	}{
		"position beyond the cache": {op, []*tensor.Tensor{x4, randTensor(r, 5, 4), randTensor(r, 5, 4), tensor.From([]int{b, s}, []int64{0, 1, 2, 3, 4, 5, 6, 7})}},
		"cache width":               {op, []*tensor.Tensor{x4, cos, sin, pos}},
		"no positions, cache shape": {op3, []*tensor.Tensor{x4, randTensor(r, 10, 4), randTensor(r, 10, 4)}},
		"rank 3 without num_heads":  {op, []*tensor.Tensor{randTensor(r, b, s, 8), randTensor(r, 10, 4), randTensor(r, 10, 4), pos}},
		"odd rotary width":          {op3, []*tensor.Tensor{randTensor(r, 1, 1, 1, 3), randTensor(r, 1, 1, 1), randTensor(r, 1, 1, 1)}},
		"caches differ":             {op, []*tensor.Tensor{x4, cos, randTensor(r, 9, 2), pos}},
		"cache type":                {op, []*tensor.Tensor{x4, to64(cos), to64(sin), pos}},
	} {
		if _, err := c.op(c.in); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	if _, _, err := opstest.Compile(opstest.Node{Op: "RotaryEmbedding", Opset: 23, Attrs: []*onnxpb.Attribute{attrInt("num_heads", -1)}}, 3); err == nil {
		t.Error("num_heads -1 accepted")
	}
}
