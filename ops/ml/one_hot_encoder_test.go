package ml

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestOneHotEncoder(t *testing.T) {
	y := run(t, node("OneHotEncoder", 1, 1, opstest.AttrInts("cats_int64s", 4, 2, 9)), tensor.From([]int{1, 2}, []float64{2, 5}))[0]
	if !slices.Equal(y.Shape, []int{1, 2, 3}) || !near(y, []float64{0, 1, 0, 0, 0, 0}, 0) {
		t.Errorf("ints: %v %v", y.Shape, y.Data)
	}
	n := node("OneHotEncoder", 1, 1, opstest.AttrStrings("cats_strings", "a", "b"), opstest.AttrInt("zeros", 0))
	if y := run(t, n, tensor.From([]int{2}, []string{"b", "a"}))[0]; !near(y, []float64{0, 1, 1, 0}, 0) {
		t.Errorf("strings: %v", y.Data)
	}
	if err := runErr(t, n, tensor.From([]int{1}, []string{"c"})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("unknown category with zeros=0: %v", err)
	}
}
