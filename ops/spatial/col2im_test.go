package spatial

import (
	"errors"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
)

func TestCol2ImAndErrors(t *testing.T) {
	// Col2Im of 1×1 blocks is a reshape
	x := seq(1, 2, 4)
	got, err := run(t, 18, "Col2Im", ins(x, opstest.I64s(2, 2), opstest.I64s(1, 1)))
	check(t, got, err, []int{1, 2, 2, 2}, x.Data)
	for _, c := range [][2][]int64{{{2, 3}, {1, 1}}, {{2, 2}, {3, 1}}, {{2}, {1, 1}}, {{0, 2}, {1, 1}}, {{2, 2}, {1, -1}}} {
		if _, err := run(t, 18, "Col2Im", ins(x, opstest.I64s(c[0]...), opstest.I64s(c[1]...))); !errors.Is(err, ops.ErrInput) {
			t.Errorf("image %v block %v: %v", c[0], c[1], err)
		}
	}
	if _, err := run(t, 18, "Col2Im", ins(x, opstest.I64s(2, 2), opstest.I64s(1, 1)), opstest.AttrInts("strides", 0, 1)); err == nil || !strings.Contains(err.Error(), "strides") {
		t.Errorf("zero stride: %v", err)
	}
}
