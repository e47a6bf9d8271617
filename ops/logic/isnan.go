package logic

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "IsNaN", Since: 9, Fold: true}, buildIsNaN)
}

// isNaN maps a floating-point tensor to BOOL: true where it holds NaN.
type isNaN struct{}

func buildIsNaN(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return isNaN{}, nil
}

func (isNaN) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	t, err := floatPredicate(c, "IsNaN", in[0], func(v float64) bool { return v != v })
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

// floatPredicate maps a floating-point tensor to BOOL through f (IsNaN's
// and IsInf's walk), piece by piece under the request.
func floatPredicate(c *ops.Context, op string, x *tensor.Tensor, f func(float64) bool) (*tensor.Tensor, error) {
	if !x.DType.IsFloat() {
		return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
	}
	r := make([]bool, x.Len())
	var err error
	switch d := x.Data.(type) {
	case []float32:
		err = c.InPieces(len(d), func(lo, hi int) {
			dst, src := r[lo:hi], d[lo:hi]
			for i, v := range src {
				dst[i] = f(float64(v))
			}
		})
	default: // float64, FP16, BF16: widening is exact
		w := x.Float64s()
		err = c.InPieces(len(w), func(lo, hi int) {
			dst, src := r[lo:hi], w[lo:hi]
			for i, v := range src {
				dst[i] = f(v)
			}
		})
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.Bool, Shape: x.Shape, Data: r}, nil
}
