package activation

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestPRelu checks slope broadcasting (per channel, scalar, full) against
// the definition, on float32, FP16 and int32, and refuses slopes that do
// not broadcast to X.
func TestPRelu(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x := randF32(r, []int{2, 3, 4, 5})
	for _, ss := range [][]int{{3, 1, 1}, {1}, nil, {5}, {2, 3, 4, 5}, {4, 1}} {
		s := randF32(r, ss)
		out, err := run(t, "PRelu", 16, nil, x, s)
		if err != nil {
			t.Fatal(err)
		}
		// The definition, walking every index of x.
		xv, sv := x.Data.([]float32), s.Data.([]float32)
		want := make([]float32, len(xv))
		it := tensor.NewIter(x.Shape, tensor.Strides(x.Shape), tensor.BroadcastStrides(ss, x.Shape))
		for i := 0; it.Next(); i++ {
			v := xv[it.Off(0)]
			if v < 0 {
				v *= sv[it.Off(1)]
			}
			want[i] = v
		}
		if !slices.Equal(out[0].Shape, x.Shape) || !slices.Equal(out[0].Data.([]float32), want) {
			t.Errorf("PRelu with slope %v differs", ss)
		}
	}
	xi := tensor.From([]int{2, 2}, []int32{-4, 4, -6, 6})
	out, err := run(t, "PRelu", 16, nil, xi, tensor.From([]int{2, 1}, []int32{2, 3}))
	if err != nil || !slices.Equal(out[0].Data.([]int32), []int32{-8, 4, -18, 6}) {
		t.Errorf("int32 PRelu = %v, %v", out, err)
	}
	xh := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{-2, 0.5, -3}))
	out, err = run(t, "PRelu", 16, nil, xh, tensor.Scalar(tensor.F16From(0.25)))
	if err != nil || out[0].DType != tensor.Float16 || !slices.Equal(out[0].Float64s(), []float64{-0.5, 0.5, -0.75}) {
		t.Errorf("FP16 PRelu = %v, %v", out, err)
	}
	for _, ss := range [][]int{{2, 3, 4, 5, 1}, {3}, {1, 1, 1, 1, 2}} {
		if _, err := run(t, "PRelu", 16, nil, x, randF32(r, ss)); !errors.Is(err, ops.ErrInput) {
			t.Errorf("slope %v: %v", ss, err)
		}
	}
	for _, bad := range [][2]*tensor.Tensor{
		{x, tensor.Scalar(float64(1))},
		{tensor.From([]int{1}, []bool{true}), tensor.Scalar(true)},
	} {
		if _, err := run(t, "PRelu", 16, nil, bad[0], bad[1]); !errors.Is(err, ops.ErrInput) {
			t.Errorf("PRelu(%v, %v): %v", bad[0].DType, bad[1].DType, err)
		}
	}
}
