package conv

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// floats returns t's values as float32 (a copy for FP16, BF16).
func floats(t *tensor.Tensor) ([]float32, bool) {
	switch d := t.Data.(type) {
	case []float32:
		return d, true
	case []tensor.F16:
		return tensor.HalfToFloat32(d), true
	case []tensor.BF16:
		return tensor.HalfToFloat32(d), true
	}
	return nil, false
}

// asFloat32 returns a float tensor's values as float32 (FP64 rounded).
func asFloat32(t *tensor.Tensor) []float32 {
	if d, ok := t.Data.([]float64); ok {
		r := make([]float32, len(d))
		for i, v := range d {
			r[i] = float32(v)
		}
		return r
	}
	v, _ := floats(t)
	return v
}

// fromFloats wraps float32 values as a tensor of type dt (FP32, FP16 or
// BF16, rounded once).
func fromFloats(dt tensor.DataType, shape []int, v []float32) *tensor.Tensor {
	switch dt {
	case tensor.Float16:
		return &tensor.Tensor{DType: dt, Shape: shape, Data: tensor.Float32ToHalf[tensor.F16](v)}
	case tensor.BFloat16:
		return &tensor.Tensor{DType: dt, Shape: shape, Data: tensor.Float32ToHalf[tensor.BF16](v)}
	}
	return tensor.From(shape, v)
}

// isFloat reports the types the float convolutions take.
func isFloat(dt tensor.DataType) bool {
	return dt == tensor.Float32 || dt == tensor.Float16 || dt == tensor.BFloat16 || dt == tensor.Float64
}

// biasOf checks the optional bias against n channels and returns its
// values as float32 (nil when absent, and for FP64).
func biasOf(op string, b *tensor.Tensor, dt tensor.DataType, n int) ([]float32, error) {
	if b == nil {
		return nil, nil
	}
	if b.DType != dt {
		return nil, ops.InputErrorf("%s bias is %v, the input %v", op, b.DType, dt)
	}
	if b.Rank() != 1 || b.Shape[0] != n {
		return nil, ops.InputErrorf("%s bias %s must be 1-D with %d values", op, tensor.ShapeString(b.Shape), n)
	}
	if dt == tensor.Float64 {
		return nil, nil
	}
	v, _ := floats(b)
	return v, nil
}
