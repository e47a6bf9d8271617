package ops

import (
	"github.com/quantserve/quantserve/tensor"
)

// Float32s returns a floating-point tensor's values as float32 (x's own
// slice for FP32, which the caller must not modify); op names the
// operator in the input error for any other type.
func Float32s(x *tensor.Tensor, op string) ([]float32, error) {
	switch d := x.Data.(type) {
	case []float32:
		return d, nil
	case []tensor.F16:
		return tensor.HalfToFloat32(d), nil
	case []tensor.BF16:
		return tensor.HalfToFloat32(d), nil
	case []float64:
		f := make([]float32, len(d))
		for i, v := range d {
			f[i] = float32(v)
		}
		return f, nil
	}
	return nil, InputErrorf("%s does not take %v", op, x.DType)
}

// RoundFloat32s returns values computed in float32 as a slice of the
// floating-point type dt (FP16, BF16 or FP64); for FP32 (and any other
// type) it returns v itself.
func RoundFloat32s(v []float32, dt tensor.DataType) any {
	switch dt {
	case tensor.Float16:
		return tensor.Float32ToHalf[tensor.F16](v)
	case tensor.BFloat16:
		return tensor.Float32ToHalf[tensor.BF16](v)
	case tensor.Float64:
		f := make([]float64, len(v))
		for i, x := range v {
			f[i] = float64(x)
		}
		return f
	}
	return v
}
