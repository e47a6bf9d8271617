package linalg

import (
	"math/rand/v2"

	"github.com/quantserve/quantserve/tensor"
)

func randF64(r *rand.Rand, shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float64, n)
	for i := range d {
		d[i] = r.NormFloat64()
	}
	return tensor.From(shape, d)
}
