package ops

import (
	"github.com/quantserve/quantserve/tensor"
)

// WidenHalf returns x's elements as float32 when x is FP16 or BF16, and
// whether it was.
func WidenHalf(x *tensor.Tensor) ([]float32, bool) {
	switch d := x.Data.(type) {
	case []tensor.F16:
		return tensor.HalfToFloat32(d), true
	case []tensor.BF16:
		return tensor.HalfToFloat32(d), true
	}
	return nil, false
}

// NarrowHalf rounds float32 results to dt, FP16 or BF16.
func NarrowHalf(dt tensor.DataType, f []float32) any {
	if dt == tensor.BFloat16 {
		return tensor.Float32ToHalf[tensor.BF16](f)
	}
	return tensor.Float32ToHalf[tensor.F16](f)
}

// HalfTo32 widens an FP16 or BF16 tensor to float32; a tensor of any
// other type is returned as it is.
func HalfTo32(t *tensor.Tensor) *tensor.Tensor {
	switch d := t.Data.(type) {
	case []tensor.F16:
		return &tensor.Tensor{DType: tensor.Float32, Shape: t.Shape, Data: tensor.HalfToFloat32(d)}
	case []tensor.BF16:
		return &tensor.Tensor{DType: tensor.Float32, Shape: t.Shape, Data: tensor.HalfToFloat32(d)}
	}
	return t
}

// ToHalf rounds a float32 result to dt, FP16 or BF16 (nil stays nil).
func ToHalf(t *tensor.Tensor, dt tensor.DataType) *tensor.Tensor {
	if t == nil {
		return nil
	}
	f := t.Data.([]float32)
	if dt == tensor.Float16 {
		return &tensor.Tensor{DType: dt, Shape: t.Shape, Data: tensor.Float32ToHalf[tensor.F16](f)}
	}
	return &tensor.Tensor{DType: dt, Shape: t.Shape, Data: tensor.Float32ToHalf[tensor.BF16](f)}
}
