package ml

import (
	"testing"

	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestLinearRegressor(t *testing.T) {
	n := node("LinearRegressor", 1, 1, opstest.AttrFloats("coefficients", 1, 2, 3, -1, 0, 1), opstest.AttrFloats("intercepts", 10, 20), opstest.AttrInt("targets", 2))
	y := run(t, n, tensor.From([]int{2, 3}, []int32{1, 1, 1, 2, 0, -1}))[0]
	if !near(y, []float64{16, 20, 9, 17}, 1e-6) {
		t.Errorf("got %v", y.Data)
	}
	if err := compileErr(node("LinearRegressor", 1, 1, opstest.AttrFloats("coefficients", 1, 2, 3), opstest.AttrInt("targets", 2)), 1); err == nil {
		t.Error("3 coefficients for 2 targets compiled")
	}
}
