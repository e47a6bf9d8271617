package index

import (
	"math/rand/v2"

	"github.com/quantserve/quantserve/tensor"
)

func shapes(ts []*tensor.Tensor) []string {
	var s []string
	for _, t := range ts {
		s = append(s, t.DType.String()+tensor.ShapeString(t.Shape))
	}
	return s
}

// randTensor returns a tensor of rank 0 to 3 with dimensions 0 to 3:
// INT64 with extreme values, small INT32, BOOL or FP32.
func randTensor(r *rand.Rand) *tensor.Tensor {
	extremes := []int64{-1 << 63, 1<<63 - 1, -1 << 40, 1 << 40, -3, -1, 0, 1, 2, 3}
	shape := make([]int, r.IntN(4))
	for i := range shape {
		shape[i] = r.IntN(4)
	}
	n, _ := tensor.NumElements(shape)
	switch r.IntN(4) {
	case 0:
		d := make([]int64, n)
		for i := range d {
			d[i] = extremes[r.IntN(len(extremes))]
		}
		return tensor.From(shape, d)
	case 1:
		d := make([]int32, n)
		for i := range d {
			d[i] = int32(r.IntN(7) - 3)
		}
		return tensor.From(shape, d)
	case 2:
		d := make([]bool, n)
		for i := range d {
			d[i] = r.IntN(2) == 0
		}
		return tensor.From(shape, d)
	}
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(r.NormFloat64() * 3)
	}
	return tensor.From(shape, d)
}
