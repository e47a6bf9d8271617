package logic

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestDescriptors pins each operator's opset range and that it folds.
func TestDescriptors(t *testing.T) {
	for op, since := range map[string]int64{
		"Equal": 7, "Less": 7, "Greater": 7, "LessOrEqual": 12, "GreaterOrEqual": 12,
		"And": 7, "Or": 7, "Xor": 7, "Not": 1, "IsNaN": 9, "IsInf": 10, "Where": 9,
	} {
		ds := ops.Descriptors("", op)
		if len(ds) != 1 || ds[0].Since != since || ds[0].Until != 0 || !ds[0].Fold || ds[0].Refused {
			t.Errorf("%s: descriptors %v, want one from opset %d that folds", op, ds, since)
		}
	}
}

// randShapes returns two shapes that broadcast together: random ranks up
// to 4, dimensions 0 to 4, with 1s (and missing leading dimensions) where
// one side broadcasts.
func randShapes(r *rand.Rand) (a, b []int) {
	rank := r.IntN(5)
	out := make([]int, rank)
	for i := range out {
		out[i] = r.IntN(4) + 1
		if r.IntN(12) == 0 {
			out[i] = 0
		}
	}
	pick := func() []int {
		s := slices.Clone(out[r.IntN(rank+1):])
		for i := range s {
			if r.IntN(3) == 0 {
				s[i] = 1
			}
		}
		return s
	}
	return pick(), pick()
}

func randF32(r *rand.Rand, shape []int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(r.NormFloat64() * 4)
	}
	return tensor.From(shape, d)
}

func randI32(r *rand.Rand, shape []int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]int32, n)
	for i := range d {
		d[i] = int32(r.IntN(41) - 20)
	}
	return tensor.From(shape, d)
}

// naive computes f over the broadcast of a and b by walking every output
// index: the definition the operators must match.
func naive[T, R tensor.Elem](a, b []T, as, bs []int, f func(x, y T) R) ([]int, []R) {
	out, err := ops.BroadcastShape(as, bs)
	if err != nil {
		panic(err)
	}
	n, _ := tensor.NumElements(out)
	r := make([]R, n)
	it := tensor.NewIter(out, tensor.BroadcastStrides(as, out), tensor.BroadcastStrides(bs, out))
	for i := 0; it.Next(); i++ {
		r[i] = f(a[it.Off(0)], b[it.Off(1)])
	}
	return out, r
}

// f32s converts values to float32.
func f32s[S int32 | float64](v []S) []float32 {
	r := make([]float32, len(v))
	for i, x := range v {
		r[i] = float32(x)
	}
	return r
}
