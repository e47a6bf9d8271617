package ops_test

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
)

// TestScaledSigmoidEnds: on every table, x·sigmoid(alpha·x) of the
// infinities is the float64 limit (the kernel's own answer there is NaN),
// NaN stays NaN, and finite values are the kernel's, within 4 ulps of
// float64.
func TestScaledSigmoidEnds(t *testing.T) {
	inf := float32(math.Inf(1))
	x := []float32{inf, -inf, float32(math.NaN()), 0, 3, -3, -100, 100, 1e-20}
	for _, alpha := range []float64{1.702, -0.5} {
		s := ops.NewScaledSigmoid(alpha)
		for _, tb := range dispatch.Available() {
			y := make([]float32, len(x))
			s.Apply(tb, y, x)
			for i, v := range x {
				want := float64(v) * ops.Sigmoid(alpha*float64(v))
				got := float64(y[i])
				switch {
				case math.IsNaN(want) || math.IsInf(want, 0):
					if !(math.IsNaN(want) && math.IsNaN(got) || got == want) {
						t.Errorf("%v α %v: %v·sigmoid(α·%v) = %v, want %v", tb, alpha, v, v, got, want)
					}
				case math.Abs(got-want) > 4*math.Abs(want)*0x1p-23+1e-36:
					t.Errorf("%v α %v: %v·sigmoid(α·%v) = %v, want %v", tb, alpha, v, v, got, want)
				}
			}
		}
	}
}
