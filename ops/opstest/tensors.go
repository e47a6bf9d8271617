package opstest

import (
	"math/rand/v2"

	"github.com/quantserve/quantserve/tensor"
)

// I64s is the 1-D INT64 tensor of v.
func I64s(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }

// F32s is the FP32 tensor of shape holding v.
func F32s(shape []int, v ...float32) *tensor.Tensor { return tensor.From(shape, v) }

// Seq is the FP32 tensor of shape holding 0, 1, 2, ... in row-major
// order.
func Seq(shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(i)
	}
	return tensor.From(shape, d)
}

// Normal is the FP32 tensor of shape holding standard normal values
// drawn from r in row-major order.
func Normal(r *rand.Rand, shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(r.NormFloat64())
	}
	return tensor.From(shape, d)
}
