package spatial

import (
	"errors"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
)

func TestCenterCropPad(t *testing.T) {
	x := seq(3, 4)
	// rows 3 -> 5 (pad 1 before, 1 after), columns 4 -> 1 (crop 1 before, 2 after)
	got, err := run(t, 18, "CenterCropPad", ins(x, opstest.I64s(5, 1)))
	check(t, got, err, []int{5, 1}, []float32{0, 2, 6, 10, 0})
	got, err = run(t, 18, "CenterCropPad", ins(x, opstest.I64s(2)), opstest.AttrInts("axes", -1))
	check(t, got, err, []int{3, 2}, []float32{2, 3, 6, 7, 10, 11})
	for _, s := range [][]int64{{1}, {-1, 2}, {2, 2, 2}} {
		if _, err := run(t, 18, "CenterCropPad", ins(x, opstest.I64s(s...))); !errors.Is(err, ops.ErrInput) {
			t.Errorf("shape %v: %v", s, err)
		}
	}
}
