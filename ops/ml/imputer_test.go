package ml

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestImputer(t *testing.T) {
	nan := float32(math.NaN())
	n := node("Imputer", 1, 1, opstest.AttrFloats("imputed_value_floats", 7, 8), opstest.AttrFloat("replaced_value_float", nan))
	if y := run(t, n, tensor.From([]int{2, 2}, []float32{nan, 1, 2, nan}))[0]; !near(y, []float64{7, 1, 2, 8}, 0) {
		t.Errorf("Imputer of NaN: %v", y.Data)
	}
	n = node("Imputer", 1, 1, opstest.AttrInts("imputed_value_int64s", 0), opstest.AttrInt("replaced_value_int64", -1))
	if y := run(t, n, tensor.From([]int{3}, []int64{-1, 5, -1}))[0]; !slices.Equal(y.Data.([]int64), []int64{0, 5, 0}) {
		t.Errorf("Imputer of -1: %v", y.Data)
	}
	if err := runErr(t, n, tensor.From([]int{1}, []float32{1})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("Imputer of a float for integers: %v", err)
	}
}
