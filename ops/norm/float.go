package norm

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// isFloatType reports whether dt is a floating-point type quantserve
// computes with.
func isFloatType(dt tensor.DataType) bool {
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16:
		return true
	}
	return false
}

// normRun applies a float32 or float64 computation to x: FP16 and BF16
// are widened to float32 and the result rounded back once.
//
// An empty x gives an empty result without calling either: the other
// dimensions of a tensor with a zero one may be as large as a request
// likes, and the computations loop over them.
func normRun(op string, x *tensor.Tensor, f32 func([]float32) ([]float32, error), f64 func([]float64) ([]float64, error)) (*tensor.Tensor, error) {
	if !isFloatType(x.DType) {
		return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
	}
	if x.Len() == 0 {
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: x.Data}, nil
	}
	var data any
	var err error
	switch d := x.Data.(type) {
	case []float32:
		data, err = f32(d)
	case []float64:
		data, err = f64(d)
	case []tensor.F16, []tensor.BF16:
		f, _ := ops.WidenHalf(x)
		var y []float32
		if y, err = f32(f); err == nil {
			data = ops.NarrowHalf(x.DType, y)
		}
	default:
		return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: data}, nil
}

// normParam returns a floating-point scale or bias input as float64,
// checking it has want values.
func normParam(op, name string, t *tensor.Tensor, want int) ([]float64, error) {
	if t == nil || !isFloatType(t.DType) {
		return nil, ops.InputErrorf("%s %s must be a floating-point tensor", op, name)
	}
	if t.Len() != want {
		return nil, ops.InputErrorf("%s %s has %d values (shape %v), want %d", op, name, t.Len(), t.Shape, want)
	}
	return t.Float64s(), nil
}
