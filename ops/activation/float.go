package activation

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/tensor"
)

// floatMap32 applies an activation to a floating-point tensor: k32 (when
// not nil) fills dst from src for a float32 tensor; every other type
// goes through f in float64, rounded once. It goes piece by piece under
// the request and stops with the request's error once the request ends.
func floatMap32(c *ops.Context, op string, x *tensor.Tensor, k32 func(dst, src []float32), f func(float64) float64) (*tensor.Tensor, error) {
	if d, ok := x.Data.([]float32); ok && k32 != nil {
		r := make([]float32, len(d))
		if err := c.InPieces(len(d), func(lo, hi int) { k32(r[lo:hi], d[lo:hi]) }); err != nil {
			return nil, err
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	}
	return arith.MapFloat(c, op, x, f)
}

// floatFunc is an activation without attributes over floating-point
// types: k32 (if any) for float32, f in float64 otherwise.
type floatFunc struct {
	op  string
	k32 func(dst, src []float32)
	f   func(float64) float64
}

// floatBuilder returns the builder of the activation op: k32 for float32
// tensors (nil: f for them too), f for the other floating-point types.
func floatBuilder(op string, k32 func(dst, src []float32), f func(float64) float64) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	a := &floatFunc{op: op, k32: k32, f: f}
	return func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		return a, nil
	}
}

func (a *floatFunc) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(floatMap32(c, a.op, in[0], a.k32, a.f))
}
