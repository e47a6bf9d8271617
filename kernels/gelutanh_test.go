package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// geluTanh64 is GELU's tanh approximation in float64, as x·sigmoid(2u).
func geluTanh64(x float64) float64 {
	t := geluTanhK * (x + geluTanhA*x*x*x)
	if t >= 0 {
		return x / (1 + math.Exp(-t))
	}
	e := math.Exp(t)
	return x * e / (1 + e)
}

// TestGeluTanhAccuracy compares GeluTanhOne with the function in float64:
// within 4 float32 ulps down to the negative tail, where float32
// arithmetic on t alone would be tens of ulps off; below it (results
// under 1.2e-37 in magnitude) within 1.2e-37 of it; and the ends as
// documented.
func TestGeluTanhAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var xs, tail []float32
	for range 400000 {
		xs = append(xs, float32(r.NormFloat64()*4))
	}
	for x := float32(-12); x < 12; x += 1.0 / 2048 {
		xs = append(xs, x)
	}
	for x := float32(1e-30); x < 1e30; x *= 1.01 {
		xs = append(xs, x, -x)
	}
	kept := xs[:0]
	for _, x := range xs {
		if math.Abs(geluTanh64(float64(x))) < 1.2e-37 {
			tail = append(tail, x)
		} else {
			kept = append(kept, x)
		}
	}
	worst, at := worstULPs(t, "GeluTanh", GeluTanhOne, geluTanh64, kept)
	t.Logf("GeluTanh: %.2f ulp at worst (x = %v) over %d values", worst, at, len(kept))
	if worst > 4 {
		t.Errorf("GeluTanh is %.2f ulp from the float64 value at x = %v", worst, at)
	}
	for _, x := range tail {
		if got, want := GeluTanhOne(x), geluTanh64(float64(x)); math.Abs(float64(got)-want) > 1.2e-37 {
			t.Errorf("GeluTanh(%v) = %v, want %v", x, got, want)
		}
	}
	inf := float32(math.Inf(1))
	for _, c := range []struct{ x, want float32 }{
		{0, 0}, {inf, inf}, {1e30, 1e30}, {20, 20}, {-20, 0}, {-1e30, 0},
	} {
		if got := GeluTanhOne(c.x); got != c.want {
			t.Errorf("GeluTanh(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	for _, x := range []float32{float32(math.NaN()), -inf} {
		if got := GeluTanhOne(x); got == got {
			t.Errorf("GeluTanh(%v) = %v, want NaN", x, got)
		}
	}
}

// TestGeluTanhNeedsFloat64Argument: the float32 argument the scalar
// formula would give is far off in the tail, so the float64 argument is
// what the accuracy above rests on.
func TestGeluTanhNeedsFloat64Argument(t *testing.T) {
	worst := 0.0
	for x := float32(-9.5); x < -3; x += 1.0 / 256 {
		t32 := float32(geluTanhK) * (x + float32(geluTanhA)*x*x*x)
		got := x * SigmoidOne(t32)
		worst = max(worst, ulps(got, geluTanh64(float64(x))))
	}
	if worst < 8 {
		t.Errorf("float32 arithmetic on t is %.2f ulp off at worst: the float64 argument would not be needed", worst)
	}
}

// TestXSigmoidScaledAccuracy: XSigmoid on XSigmoidConsts(0, α) is
// x·sigmoid(α·x) within 4 float32 ulps for several α down to the tail,
// where e**(αx) leaves the normal floats and the result flushes (at most
// |x|·1.2e-38); ±Inf give NaN.
func TestXSigmoidScaledAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, alpha := range []float64{1, 1.702, -0.5, 1e-3, float64(float32(1.3))} {
		c := XSigmoidConsts(0, alpha)
		want := func(x float64) float64 {
			u := alpha * x
			if u >= 0 {
				return x / (1 + math.Exp(-u))
			}
			e := math.Exp(u)
			return x * e / (1 + e)
		}
		one := func(x float32) float32 {
			var y [1]float32
			XSigmoid(y[:], []float32{x}, c)
			return y[0]
		}
		var xs []float32
		for range 100000 {
			xs = append(xs, float32(r.NormFloat64()*30))
		}
		for x := float32(1e-30); x < 1e30; x *= 1.02 {
			xs = append(xs, x, -x)
		}
		kept := xs[:0]
		for _, x := range xs {
			if alpha*float64(x) < float64(ExpNegMin)+0.1 { // e**(αx) leaves the normal floats: the result flushes to 0
				if got := one(x); math.Abs(float64(got)) > math.Abs(float64(x))*1.3e-38 {
					t.Errorf("α %v: XSigmoid(%v) = %v, want at most |x|·e**%v", alpha, x, got, ExpNegMin)
				}
				continue
			}
			kept = append(kept, x)
		}
		worst, at := worstULPs(t, "XSigmoid", one, want, kept)
		t.Logf("α %v: %.2f ulp at worst (x = %v)", alpha, worst, at)
		if worst > 4 {
			t.Errorf("α %v: XSigmoid is %.2f ulp from the float64 value at x = %v", alpha, worst, at)
		}
		for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1))} {
			if got := one(x); got == got {
				t.Errorf("α %v: XSigmoid(%v) = %v, want NaN (0·∞)", alpha, x, got)
			}
		}
	}
	var y [3]float32
	XSigmoid(y[:], []float32{-3, 0.5, 7}, ActConsts())
	for i, x := range []float32{-3, 0.5, 7} {
		if y[i] != GeluTanhOne(x) {
			t.Errorf("XSigmoid with ActConsts(%v) = %v, GeluTanh %v", x, y[i], GeluTanhOne(x))
		}
	}
}
