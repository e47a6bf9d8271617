package ml

import (
	"errors"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestScaler(t *testing.T) {
	n := node("Scaler", 1, 1, opstest.AttrFloats("offset", 1, 2), opstest.AttrFloats("scale", 2, 0.5))
	if y := run(t, n, tensor.From([]int{2, 2}, []int64{3, 4, 0, 0}))[0]; !near(y, []float64{4, 1, -2, -1}, 1e-6) {
		t.Errorf("Scaler: %v", y.Data)
	}
	if err := runErr(t, n, tensor.From([]int{1, 3}, []int64{3, 4, 5})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("Scaler of 3 features: %v", err)
	}
}
