package activation

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/tensor"
)

// Shrink is the Shrink operator.
var Shrink = ops.Op{
	ops.Register(ops.Descriptor{Type: "Shrink", Since: 9, Fold: true}, buildShrink),
}

// ShrinkAttrs are Shrink's attributes.
type ShrinkAttrs struct {
	Lambd float32 `onnx:"lambd" default:"0.5"`
	Bias  float32 `onnx:"bias"`
}

// shrink implements Shrink on every numeric type: x+bias below -lambd,
// x-bias above lambd, 0 between; integers compute in float64 and convert
// back.
type shrink struct{ lambd, bias float64 }

func buildShrink(n *ops.Node, at *ShrinkAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return shrink{lambd: float64(at.Lambd), bias: float64(at.Bias)}, nil
}

func (s shrink) f64(v float64) float64 {
	switch {
	case v < -s.lambd:
		return v + s.bias
	case v > s.lambd:
		return v - s.bias
	}
	return 0
}

func (s shrink) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if x.DType.IsFloat() {
		return ops.Result(arith.MapFloat(c, "Shrink", x, s.f64))
	}
	var out any
	var err error
	switch d := x.Data.(type) {
	case []int8:
		out, err = shrinkInt(c, d, s.f64)
	case []uint8:
		out, err = shrinkInt(c, d, s.f64)
	case []int16:
		out, err = shrinkInt(c, d, s.f64)
	case []uint16:
		out, err = shrinkInt(c, d, s.f64)
	case []int32:
		out, err = shrinkInt(c, d, s.f64)
	case []uint32:
		out, err = shrinkInt(c, d, s.f64)
	case []int64:
		out, err = shrinkInt(c, d, s.f64)
	case []uint64:
		out, err = shrinkInt(c, d, s.f64)
	default:
		return nil, ops.InputErrorf("Shrink does not take %v", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
}

func shrinkInt[T tensor.Integer](c *ops.Context, x []T, f func(float64) float64) ([]T, error) {
	r := make([]T, len(x))
	err := c.ParallelRows(len(x), cheapCost, func(lo, hi int) {
		dst, src := r[lo:hi], x[lo:hi]
		for i, v := range src {
			dst[i] = T(f(float64(v)))
		}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
