package ml

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestFeatureVectorizer(t *testing.T) {
	n := node("FeatureVectorizer", 1, 1, opstest.AttrInts("inputdimensions", 2, 2))
	// A is cut to 2 columns, B padded to 2.
	y := run(t, n, tensor.From([]int{2, 3}, []int64{1, 2, 3, 4, 5, 6}), tensor.From([]int{2, 1}, []float32{7, 8}))[0]
	if !slices.Equal(y.Shape, []int{2, 4}) || !near(y, []float64{1, 2, 7, 0, 4, 5, 8, 0}, 0) {
		t.Errorf("FeatureVectorizer: %v %v", y.Shape, y.Data)
	}
	if err := runErr(t, n, tensor.From([]int{1, 3}, []int64{1, 2, 3}), tensor.From([]int{2, 1}, []float32{7, 8})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("rows differ: %v", err)
	}
}
