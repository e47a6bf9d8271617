package attention

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "RotaryEmbedding", Since: 23, Fold: true}, buildRotaryEmbedding)
}

// RotaryEmbeddingAttrs are RotaryEmbedding's attributes.
type RotaryEmbeddingAttrs struct {
	Interleaved        bool  `onnx:"interleaved"`
	NumHeads           int64 `onnx:"num_heads"`
	RotaryEmbeddingDim int64 `onnx:"rotary_embedding_dim"` // 0: the head size
}

// rotaryEmbedding implements RotaryEmbedding (opset 23): the first
// rotary_embedding_dim features of each head are rotated pairwise, pairs
// being (i, i + dim/2) or, interleaved, (2i, 2i+1), by the angles whose
// cosines and sines the caches hold for each token's position.
type rotaryEmbedding struct {
	at *RotaryEmbeddingAttrs
}

func buildRotaryEmbedding(n *ops.Node, at *RotaryEmbeddingAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 4, 1, 1); err != nil {
		return nil, err
	}
	if at.NumHeads < 0 || at.RotaryEmbeddingDim < 0 {
		return nil, fmt.Errorf("negative num_heads %d or rotary_embedding_dim %d", at.NumHeads, at.RotaryEmbeddingDim)
	}
	return &rotaryEmbedding{at: at}, nil
}

func (op *rotaryEmbedding) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, cos, sin := in[0], in[1], in[2]
	rg, err := newRotaryGeom(op.at, x, cos, sin, ops.Optional(in, 3))
	if err != nil {
		return nil, err
	}
	var out any
	if xd, ok := x.Data.([]float64); ok {
		y, err := rotaryApply(rg, xd, float64s(cos), float64s(sin), c)
		if err != nil {
			return nil, err
		}
		out = y
	} else {
		xf, err := ops.Float32s(x, "RotaryEmbedding")
		if err != nil {
			return nil, err
		}
		y, err := rotaryApply(rg, xf, float32s(cos), float32s(sin), c)
		if err != nil {
			return nil, err
		}
		out = ops.RoundFloat32s(y, x.DType)
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
}

// rotaryGeom is one RotaryEmbedding call's layout.
type rotaryGeom struct {
	b, h, s, d  int
	rd          int // features rotated
	interleaved bool
	x           attnView[float32] // strides only
	pos         []int64           // (b, s) cache rows; nil: the caches are (b, s, rd/2)
}

func newRotaryGeom(at *RotaryEmbeddingAttrs, x, cos, sin, pos *tensor.Tensor) (*rotaryGeom, error) {
	if !x.DType.IsFloat() || cos.DType != x.DType || sin.DType != x.DType {
		return nil, ops.InputErrorf("RotaryEmbedding takes a floating-point input and caches of its type, got %v, %v, %v", x.DType, cos.DType, sin.DType)
	}
	rg := &rotaryGeom{interleaved: at.Interleaved}
	switch x.Rank() {
	case 4:
		rg.b, rg.h, rg.s, rg.d = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		rg.x = headMajor[float32](nil, rg.h, rg.s, rg.d)
	case 3:
		if at.NumHeads <= 0 || at.NumHeads > math.MaxInt32 || x.Shape[2]%int(at.NumHeads) != 0 {
			return nil, ops.InputErrorf("RotaryEmbedding on a rank-3 input needs num_heads dividing its hidden size %d, has %d", x.Shape[2], at.NumHeads)
		}
		rg.b, rg.s, rg.h = x.Shape[0], x.Shape[1], int(at.NumHeads)
		rg.d = x.Shape[2] / rg.h
		rg.x = seqMajor[float32](nil, rg.h, rg.s, rg.d)
	default:
		return nil, ops.InputErrorf("RotaryEmbedding takes a rank-3 or rank-4 input, got %s", tensor.ShapeString(x.Shape))
	}
	rg.rd = rg.d
	if at.RotaryEmbeddingDim > 0 {
		if at.RotaryEmbeddingDim > int64(rg.d) {
			return nil, ops.InputErrorf("rotary_embedding_dim %d exceeds the head size %d", at.RotaryEmbeddingDim, rg.d)
		}
		rg.rd = int(at.RotaryEmbeddingDim)
	}
	if rg.rd%2 != 0 {
		return nil, ops.InputErrorf("RotaryEmbedding rotates pairs: %d features is odd", rg.rd)
	}
	half := rg.rd / 2
	if !ops.EqualShape(cos.Shape, sin.Shape) {
		return nil, ops.InputErrorf("RotaryEmbedding: cos_cache %s and sin_cache %s differ", tensor.ShapeString(cos.Shape), tensor.ShapeString(sin.Shape))
	}
	if pos != nil {
		p, ok := pos.Data.([]int64)
		if !ok || !ops.EqualShape(pos.Shape, []int{rg.b, rg.s}) {
			return nil, ops.InputErrorf("RotaryEmbedding: position_ids must be INT64 of shape (%d, %d), got %v%s", rg.b, rg.s, pos.DType, tensor.ShapeString(pos.Shape))
		}
		if cos.Rank() != 2 || cos.Shape[1] != half {
			return nil, ops.InputErrorf("RotaryEmbedding: caches indexed by position must be (max_position, %d), got %s", half, tensor.ShapeString(cos.Shape))
		}
		for _, v := range p {
			if v < 0 || v >= int64(cos.Shape[0]) {
				return nil, ops.InputErrorf("RotaryEmbedding: position %d is outside the cache's %d rows", v, cos.Shape[0])
			}
		}
		rg.pos = p
	} else if !ops.EqualShape(cos.Shape, []int{rg.b, rg.s, half}) {
		return nil, ops.InputErrorf("RotaryEmbedding without position_ids needs caches of shape (%d, %d, %d), got %s", rg.b, rg.s, half, tensor.ShapeString(cos.Shape))
	}
	return rg, nil
}

// rotaryApply returns x rotated as rg describes, in T. It stops with the
// request's error when pace says so.
func rotaryApply[T float32 | float64](rg *rotaryGeom, x, cos, sin []T, pace *ops.Context) ([]T, error) {
	out := make([]T, len(x))
	copy(out, x) // features past rd pass through
	half := rg.rd / 2
	for b := 0; b < rg.b; b++ {
		for s := 0; s < rg.s; s++ {
			if err := pace.Tick(rg.h * rg.rd); err != nil {
				return nil, err
			}
			row := b*rg.s + s // the caches' row
			if rg.pos != nil {
				row = int(rg.pos[row])
			}
			c, sn := cos[row*half:(row+1)*half], sin[row*half:(row+1)*half]
			for h := 0; h < rg.h; h++ {
				off := rg.x.at(b, h) + s*rg.x.ss
				xi, yo := x[off:off+rg.rd], out[off:off+rg.rd]
				if rg.interleaved {
					for i := 0; i < half; i++ {
						x1, x2 := xi[2*i], xi[2*i+1]
						yo[2*i] = c[i]*x1 - sn[i]*x2
						yo[2*i+1] = sn[i]*x1 + c[i]*x2
					}
					continue
				}
				for i := 0; i < half; i++ {
					x1, x2 := xi[i], xi[i+half]
					yo[i] = c[i]*x1 - sn[i]*x2
					yo[i+half] = sn[i]*x1 + c[i]*x2
				}
			}
		}
	}
	return out, nil
}
