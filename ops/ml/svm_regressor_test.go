package ml

import (
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// Support vectors e0 = [1, 0], e1 = [0, 1], coefficients [1, −1], rho 0.5,
// gamma 0.5, coef0 1, degree 2; x = [1, 2]: x·e0 = 1, x·e1 = 2,
// |x−e0|² = 4, |x−e1|² = 2.
func TestSVMRegressorKernels(t *testing.T) {
	for kern, want := range map[string]float64{
		"LINEAR":  1 - 2 + 0.5,
		"POLY":    math.Pow(0.5*1+1, 2) - math.Pow(0.5*2+1, 2) + 0.5,
		"RBF":     math.Exp(-0.5*4) - math.Exp(-0.5*2) + 0.5,
		"SIGMOID": math.Tanh(0.5*1+1) - math.Tanh(0.5*2+1) + 0.5,
	} {
		for _, oc := range []int64{0, 1} {
			n := node("SVMRegressor", 1, 1, opstest.AttrFloats("support_vectors", 1, 0, 0, 1), opstest.AttrFloats("coefficients", 1, -1), opstest.AttrInt("n_supports", 2),
				opstest.AttrFloats("rho", 0.5), opstest.AttrString("kernel_type", kern), opstest.AttrFloats("kernel_params", 0.5, 1, 2), opstest.AttrInt("one_class", oc))
			y := run(t, n, tensor.From([]int{1, 2}, []float32{1, 2}))[0]
			w := want
			if oc == 1 {
				w = map[bool]float64{true: 1, false: -1}[want > 0]
			}
			if !slices.Equal(y.Shape, []int{1, 1}) || !near(y, []float64{w}, 1e-6) {
				t.Errorf("%s one_class %d: got %v, want %v", kern, oc, y.Data, w)
			}
		}
	}
	// Without support vectors: liblinear's x·coefficients + rho.
	n := node("SVMRegressor", 1, 1, opstest.AttrFloats("coefficients", 2, 3), opstest.AttrFloats("rho", 1))
	if y := run(t, n, tensor.From([]int{1, 2}, []float32{1, 2}))[0]; !near(y, []float64{9}, 1e-6) {
		t.Errorf("linear mode: %v", y.Data)
	}
}
