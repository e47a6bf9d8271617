package arith

import (
	"math"
	"testing"
)

// TestFloat32Approximations sweeps a sample of every float32 magnitude
// (and the edge cases) through the float32 exp, erf and erfc against
// math's float64 functions.
func TestFloat32Approximations(t *testing.T) {
	edges := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-38, 0.5, -0.5, 0.625, -0.625,
		88.72283, 88.72284, -87.33655, -103.97, -103.973, 9.1, -9.1, 10.06, -10.06, 3.92, 1.5, 3, 5.5,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32}
	xs := edges
	for b := uint64(0); b < 1<<32; b += 65537 { // 65,536 values spread over every exponent
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	for _, c := range []struct {
		name string
		f    func(float32) float32
		ref  func(float64) float64
		ulps float64
	}{
		{"exp", func(x float32) float32 { return Expf(float64(x)) }, math.Exp, 1.5},
		{"erf", Erf32, math.Erf, 3},
		{"erfc", erfc32, math.Erfc, 5},
	} {
		worst, at := 0.0, float32(0)
		for _, x := range xs {
			if e := ulps(c.f(x), c.ref(float64(x))); e > worst {
				worst, at = e, x
			}
		}
		if worst > c.ulps {
			t.Errorf("%s: %.2f ulp at %v (got %v, want %v)", c.name, worst, at, c.f(at), c.ref(float64(at)))
		}
	}
}

// TestExpfFloat64Argument: Expf reduces a float64 argument in float64, so
// it agrees with math.Exp where the argument's float32 rounding would
// move the result by many ulps.
func TestExpfFloat64Argument(t *testing.T) {
	for _, x := range []float64{80.123456789012, -80.123456789012, 50.5 + 1e-9, -100.000001, 1e-12} {
		if e := ulps(Expf(x), math.Exp(x)); e > 1.5 {
			t.Errorf("Expf(%v) = %v, math.Exp %v: %.2f ulp", x, Expf(x), math.Exp(x), e)
		}
	}
}
