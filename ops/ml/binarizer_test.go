package ml

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestBinarizer(t *testing.T) {
	n := node("Binarizer", 1, 1, opstest.AttrFloat("threshold", 2))
	if y := run(t, n, tensor.From([]int{4}, []int64{1, 2, 3, -7}))[0]; !slices.Equal(y.Data.([]int64), []int64{0, 0, 1, 0}) {
		t.Errorf("Binarizer: %v", y.Data)
	}
}
