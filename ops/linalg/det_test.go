package linalg

import (
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

func TestDet(t *testing.T) {
	d := tensor.From([]int{2, 3, 3}, []float64{2, 0, 1, 1, 3, 2, 1, 1, 2, 1, 2, 3, 2, 4, 6, 0, 1, 1})
	y := run1(t, 22, "Det", nil, d)
	if got := y.Data.([]float64); !slices.Equal(y.Shape, []int{2}) || math.Abs(got[0]-6) > 1e-12 || got[1] != 0 {
		t.Errorf("Det %v %v, want [6 0]", y.Shape, y.Data)
	}
	check(t, "Det of 0×0", run1(t, 22, "Det", nil, tensor.From([]int{2, 0, 0}, []float32{})), []int{2}, []float32{1, 1})
	wantInputError(t, 22, "Det", nil, []*tensor.Tensor{seq(2, 3)}, "square")
	wantInputError(t, 22, "Det", nil, []*tensor.Tensor{tensor.From([]int{1, 1}, []int32{1})}, "does not take INT32")
}
