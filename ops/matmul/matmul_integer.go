package matmul

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "MatMulInteger", Since: 10, Fold: true}, buildMatMulInteger)
}

// matMulInteger is a compiled MatMulInteger: (A - a_zero_point)·(B -
// b_zero_point) in INT32, on the int8 kernels when B and its zero point
// are constants they take (p), widened to INT32 otherwise.
type matMulInteger struct {
	p *intProduct
}

func buildMatMulInteger(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 4, 1, 1); err != nil {
		return nil, err
	}
	return &matMulInteger{p: newIntProduct(n, 1, 3)}, nil
}

func (mi *matMulInteger) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	azp := ops.Optional(in, 2)
	if mi.p != nil {
		return ops.Result(mi.p.run(c, in[0], azp))
	}
	a, err := minusZeroPoint(c, in[0], azp, -2)
	if err != nil {
		return nil, err
	}
	b, err := minusZeroPoint(c, in[1], ops.Optional(in, 3), -1)
	if err != nil {
		return nil, err
	}
	return ops.Result(Product(c, "MatMul", a, b))
}

// minusZeroPoint returns x - zp as INT32, zp a scalar or a 1-D tensor along
// the given axis of x (-2: rows of the last two dims, -1: columns),
// piece by piece under the request.
func minusZeroPoint(c *ops.Context, x, zp *tensor.Tensor, axis int) (*tensor.Tensor, error) {
	if _, _, ok := IntRange(x.DType); !ok || x.DType == tensor.Int32 || x.DType == tensor.Int16 || x.DType == tensor.Uint16 {
		return nil, ops.InputErrorf("integer matmul takes INT8 or UINT8, got %v", x.DType)
	}
	xv, _ := x.Int64s()
	out := make([]int32, len(xv))
	var z []int64
	if zp != nil {
		if zp.DType != x.DType {
			return nil, ops.InputErrorf("zero point type %v differs from %v", zp.DType, x.DType)
		}
		z, _ = zp.Int64s()
	}
	r := x.Rank()
	if r == 0 {
		return nil, ops.InputErrorf("integer matmul needs rank >= 1")
	}
	dim, inner := x.Shape[r-1], 1
	if axis == -2 && r >= 2 {
		dim, inner = x.Shape[r-2], x.Shape[r-1]
	}
	if len(z) > 1 && len(z) != dim {
		return nil, ops.InputErrorf("zero point has %d entries, want 1 or %d", len(z), dim)
	}
	err := c.InPieces(len(xv), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := xv[i]
			switch len(z) {
			case 0:
			case 1:
				v -= z[0]
			default:
				v -= z[i/inner%dim]
			}
			out[i] = int32(v)
		}
	})
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.Int32, Shape: x.Shape, Data: out}, nil
}
