package spatial

import (
	"errors"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestAffineGridAndErrors(t *testing.T) {
	theta := tensor.From([]int{1, 2, 3}, []float32{1, 0, 0, 0, 1, 0})
	got, err := run(t, 20, "AffineGrid", ins(theta, opstest.I64s(1, 1, 1, 2)), opstest.AttrInt("align_corners", 1))
	check(t, got, err, []int{1, 1, 2, 2}, []float32{-1, -1, 1, -1})
	for _, s := range [][]int64{{1, 1, 2}, {2, 1, 2, 2}, {1, 1, 0, 2}, {1, 1, 2, 2, 2}, {1, 1, 1 << 40, 2}} {
		if _, err := run(t, 20, "AffineGrid", ins(theta, opstest.I64s(s...))); !errors.Is(err, ops.ErrInput) {
			t.Errorf("size %v: %v", s, err)
		}
	}
}
