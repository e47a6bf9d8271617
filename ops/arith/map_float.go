package arith

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// MapFloat applies f elementwise to a floating-point tensor, in float64;
// FP32, FP16 and BF16 results round once from float64. A tensor of any
// other type is an input error naming op.
func MapFloat(op string, x *tensor.Tensor, f func(float64) float64) (*tensor.Tensor, error) {
	switch d := x.Data.(type) {
	case []tensor.F16:
		r := make([]tensor.F16, len(d))
		for i, v := range d {
			r[i] = tensor.F16FromFloat64(f(float64(v.Float32())))
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	case []tensor.BF16:
		r := make([]tensor.BF16, len(d))
		for i, v := range d {
			r[i] = tensor.BF16FromFloat64(f(float64(v.Float32())))
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	case []float32:
		r := make([]float32, len(d))
		for i, v := range d {
			r[i] = float32(f(float64(v)))
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	case []float64:
		r := make([]float64, len(d))
		for i, v := range d {
			r[i] = f(v)
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	}
	return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
}
