package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulps returns how many float32 steps got is from want (want rounded to
// float32 first).
func ulps(got float32, want float64) float64 {
	w := float32(want)
	if got == w {
		return 0
	}
	step := math.Abs(float64(math.Nextafter32(w, float32(math.Inf(1))) - w))
	if step == 0 || math.IsInf(step, 0) {
		step = math.Abs(float64(w - math.Nextafter32(w, 0)))
	}
	return math.Abs(float64(got)-want) / step
}

// TestExpNeg compares ExpNeg with math.Exp over (-104, 0] and its edges.
func TestExpNeg(t *testing.T) {
	worst := 0.0
	for x := float32(0); x > -87.33; x = math.Nextafter32(x, -1) - 0.0001*float32(math.Abs(float64(x))) {
		got := ExpNeg(x)
		worst = max(worst, ulps(got, math.Exp(float64(x))))
		if x < -87 {
			break
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		x := -float32(r.Float64() * 87.3)
		worst = max(worst, ulps(ExpNeg(x), math.Exp(float64(x))))
	}
	t.Logf("ExpNeg: %.2f ulp at worst", worst)
	if worst > 2 {
		t.Errorf("ExpNeg is %.2f ulp from math.Exp", worst)
	}
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {float32(math.Copysign(0, -1)), 1}, {-87.4, 0}, {-1000, 0}, {float32(math.Inf(-1)), 0},
	} {
		if got := ExpNeg(c.x); got != c.want {
			t.Errorf("ExpNeg(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := ExpNeg(float32(math.NaN())); got == got {
		t.Errorf("ExpNeg(NaN) = %v", got)
	}
}

// geluF64 is GELU in float64 from math.Erfc.
func geluF64(x float64) float64 {
	z := x / math.Sqrt2
	if z >= 0 {
		return 0.5 * x * (2 - math.Erfc(z))
	}
	return 0.5 * x * math.Erfc(-z)
}

// worstULPs returns the most float32 ulps one(x) lies from want(x) over
// xs, and the x where, failing t where want is below float32's normal
// range (1.2e-38) and one(x) is not.
func worstULPs(t *testing.T, name string, one func(float32) float32, want func(float64) float64, xs []float32) (worst, at float64) {
	t.Helper()
	for _, x := range xs {
		w, got := want(float64(x)), one(x)
		if math.Abs(w) < 1.2e-38 {
			if math.Abs(float64(got)) > 1.2e-38 {
				t.Errorf("%s(%v) = %v, want %v", name, x, got, w)
			}
			continue
		}
		if u := ulps(got, w); u > worst {
			worst, at = u, float64(x)
		}
	}
	return worst, at
}

// TestGeluAccuracy compares GeluOne with GELU in float64: within 5.5
// float32 ulps of the true value (4.96 at worst on these inputs),
// relative, down to the negative tail; on random values, a grid, and the
// 128 x of each sign nearest each end of a piece, where a + 1's rounding
// may hand an a just below a bound to the next piece.
func TestGeluAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var xs []float32
	for range 400000 {
		xs = append(xs, float32(r.NormFloat64()*4))
	}
	for x := float32(-14); x < 14; x += 1.0 / 1024 {
		xs = append(xs, x)
	}
	for _, b := range geluBounds[1:] {
		x := float32(b * math.Sqrt2)
		for range 64 {
			x = math.Nextafter32(x, 0)
		}
		for range 128 {
			xs = append(xs, x, -x)
			x = math.Nextafter32(x, 100)
		}
	}
	worst, at := worstULPs(t, "gelu", GeluOne, geluF64, xs)
	t.Logf("gelu: %.2f ulp at worst (x = %v)", worst, at)
	if worst > 5.5 {
		t.Errorf("gelu is %.2f ulp from the float64 value at x = %v", worst, at)
	}
	for _, c := range []struct{ x, want float32 }{
		{0, 0}, {float32(math.Inf(1)), float32(math.Inf(1))}, {-20, 0}, {40, 40}, {1e30, 1e30},
	} {
		if got := GeluOne(c.x); got != c.want {
			t.Errorf("gelu(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := GeluOne(float32(math.NaN())); got == got {
		t.Errorf("gelu(NaN) = %v", got)
	}
}

// TestSoftmaxRow checks SoftmaxRow against float64 and its special rows.
func TestSoftmaxRow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 70; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 5)
		}
		scale := float32(0.7)
		want := make([]float64, n)
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, float64(float32(scale*v)))
		}
		var s float64
		for i, v := range x {
			want[i] = math.Exp(float64(float32(scale*v)) - m)
			s += want[i]
		}
		SoftmaxRow(x, scale)
		for i := range x {
			if d := math.Abs(float64(x[i]) - want[i]/s); d > 1e-6*(want[i]/s)+1e-9 {
				t.Fatalf("n=%d: softmax[%d] = %v, want %v", n, i, x[i], want[i]/s)
			}
		}
	}
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	masked := []float32{1, -inf, 1, -inf}
	SoftmaxRow(masked, 1)
	if masked[0] != 0.5 || masked[1] != 0 || masked[2] != 0.5 || masked[3] != 0 {
		t.Errorf("masked row: %v", masked)
	}
	for _, row := range [][]float32{{1, nan, 2}, {1, inf, 2}, {-inf, -inf}} {
		SoftmaxRow(row, 1)
		for _, v := range row {
			if v == v {
				t.Errorf("softmax of a row with NaN, +Inf or only -Inf: %v", row)
				break
			}
		}
	}
}

// TestSigmoidTanhAccuracy compares SigmoidOne and TanhOne with their
// float64 definitions: within 4 float32 ulps, relative, over the range
// where the results are normal, and their limits and NaN.
func TestSigmoidTanhAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, f := range []struct {
		name string
		one  func(float32) float32
		want func(float64) float64
	}{
		{"sigmoid", SigmoidOne, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
		{"tanh", TanhOne, math.Tanh},
	} {
		var xs []float32
		for range 400000 {
			xs = append(xs, float32(r.NormFloat64()*6))
		}
		for x := float32(-90); x < 90; x += 1.0 / 512 {
			xs = append(xs, x)
		}
		for x := float32(1e-30); x < 2; x *= 1.01 { // around 0 and the polynomial's bound
			xs = append(xs, x, -x)
		}
		xs = append(xs, math.Nextafter32(tanhSmall, 0), tanhSmall)
		worst, at := worstULPs(t, f.name, f.one, f.want, xs)
		t.Logf("%s: %.2f ulp at worst (x = %v)", f.name, worst, at)
		if worst > 4 {
			t.Errorf("%s is %.2f ulp from the float64 value at x = %v", f.name, worst, at)
		}
	}
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		name    string
		one     func(float32) float32
		x, want float32
	}{
		{"sigmoid", SigmoidOne, 0, 0.5}, {"sigmoid", SigmoidOne, float32(math.Copysign(0, -1)), 0.5},
		{"sigmoid", SigmoidOne, inf, 1}, {"sigmoid", SigmoidOne, -inf, 0}, {"sigmoid", SigmoidOne, 20, 1}, {"sigmoid", SigmoidOne, -100, 0},
		{"tanh", TanhOne, 0, 0}, {"tanh", TanhOne, inf, 1}, {"tanh", TanhOne, -inf, -1}, {"tanh", TanhOne, 9.1, 1}, {"tanh", TanhOne, -50, -1},
	} {
		if got := c.one(c.x); got != c.want {
			t.Errorf("%s(%v) = %v, want %v", c.name, c.x, got, c.want)
		}
	}
	if got := TanhOne(float32(math.Copysign(0, -1))); math.Float32bits(got) != 1<<31 {
		t.Errorf("tanh(-0) = %v, want -0", got)
	}
	for _, one := range []func(float32) float32{SigmoidOne, TanhOne} {
		if got := one(float32(math.NaN())); got == got {
			t.Errorf("NaN in, %v out", got)
		}
	}
}
