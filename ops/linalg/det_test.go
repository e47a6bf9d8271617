package linalg

import (
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestDet(t *testing.T) {
	d := tensor.From([]int{2, 3, 3}, []float64{2, 0, 1, 1, 3, 2, 1, 1, 2, 1, 2, 3, 2, 4, 6, 0, 1, 1})
	y := opstest.Run1(t, opstest.Node{Op: "Det", Opset: 22}, d)
	if got := y.Data.([]float64); !slices.Equal(y.Shape, []int{2}) || math.Abs(got[0]-6) > 1e-12 || got[1] != 0 {
		t.Errorf("Det %v %v, want [6 0]", y.Shape, y.Data)
	}
	opstest.Check(t, "Det of 0×0", opstest.Run1(t, opstest.Node{Op: "Det", Opset: 22}, tensor.From([]int{2, 0, 0}, []float32{})), []int{2}, []float32{1, 1})
	opstest.WantInputError(t, opstest.Node{Op: "Det", Opset: 22}, "square", opstest.Seq(2, 3))
	opstest.WantInputError(t, opstest.Node{Op: "Det", Opset: 22}, "does not take INT32", tensor.From([]int{1, 1}, []int32{1}))
}
