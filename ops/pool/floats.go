package pool

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// poolFloats runs f over x's elements in float64 and returns its output
// (of shape out) in x's floating-point type, rounded once.
func poolFloats(op string, x *tensor.Tensor, out []int, f func(x, y []float64) error) (*tensor.Tensor, error) {
	switch x.DType {
	case tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16:
	default:
		return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
	}
	n, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%s output %v: %v", op, out, err)
	}
	y := make([]float64, n)
	if err := f(x.Float64s(), y); err != nil {
		return nil, err
	}
	return ops.FromFloat64s(x.DType, out, y), nil
}
