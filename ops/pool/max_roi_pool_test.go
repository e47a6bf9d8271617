package pool

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestMaxRoiPoolByHand: there is no ONNX node test of MaxRoiPool, so its
// answers are worked out here.
func TestMaxRoiPoolByHand(t *testing.T) {
	x := make([]float32, 2*1*4*4)
	for i := range x {
		x[i] = float32(i)
	}
	X := tensor.From([]int{2, 1, 4, 4}, x)
	m, err := compile(22, "MaxRoiPool", 2, 1, opstest.AttrInts("pooled_shape", 2, 2), opstest.AttrFloat("spatial_scale", 0.5))
	if err != nil {
		t.Fatal(err)
	}
	rois := tensor.From([]int{3, 5}, []float32{
		0, 0, 0, 6, 6, // scaled: (0,0)-(3,3), the whole first image
		1, 2, 0, 6, 2, // second image, x 1..3, y 0..1: bins of 1.5×1 pixels
		0, 9, 9, 12, 12, // entirely outside: rounded to 5..6, clamped away
	})
	res, err := m.Run(opstest.Background(), []*tensor.Tensor{X, rois})
	if err != nil {
		t.Fatal(err)
	}
	y := res[0].Data.([]float32)
	want := []float32{
		5, 7, 13, 15,
		// roi 2: rows [0,1) and [1,2), cols floor(0)+1=1..ceil(1.5)+1=3 and floor(1.5)+1=2..ceil(3)+1=4
		16 + 2, 16 + 3, 16 + 6, 16 + 7,
		0, 0, 0, 0,
	}
	if !ops.EqualShape(res[0].Shape, []int{3, 1, 2, 2}) || !slices.Equal(y, want) {
		t.Errorf("MaxRoiPool = %v %v, want %v", res[0].Shape, y, want)
	}
	for _, bad := range [][]float32{{2, 0, 0, 1, 1}, {-1, 0, 0, 1, 1}, {0, float32(math.NaN()), 0, 1, 1}, {0, 0, 0, float32(math.Inf(1)), 1}} {
		_, err := m.Run(opstest.Background(), []*tensor.Tensor{X, tensor.From([]int{1, 5}, bad)})
		if !errors.Is(err, ops.ErrInput) {
			t.Errorf("roi %v: %v, want an input error", bad, err)
		}
	}
}
