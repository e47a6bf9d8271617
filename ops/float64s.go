package ops

import (
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

// FromFloat64s returns values computed in float64 as a tensor of the
// floating-point type dt and a copy of shape, each value rounded once
// (for any other type the tensor holds no data).
func FromFloat64s(dt tensor.DataType, shape []int, v []float64) *tensor.Tensor {
	var data any
	switch dt {
	case tensor.Float64:
		data = v
	case tensor.Float32:
		r := make([]float32, len(v))
		for i, x := range v {
			r[i] = float32(x)
		}
		data = r
	case tensor.Float16:
		r := make([]tensor.F16, len(v))
		for i, x := range v {
			r[i] = tensor.F16FromFloat64(x)
		}
		data = r
	case tensor.BFloat16:
		r := make([]tensor.BF16, len(v))
		for i, x := range v {
			r[i] = tensor.BF16FromFloat64(x)
		}
		data = r
	}
	return &tensor.Tensor{DType: dt, Shape: slices.Clone(shape), Data: data}
}
