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

// TestGeluAccuracy compares GeluOne with GELU in float64: within a few
// float32 ulps of the true value, relative, down to the negative tail.
func TestGeluAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	worst, at := 0.0, 0.0
	check := func(x float32) {
		want := geluF64(float64(x))
		got := GeluOne(x)
		if math.Abs(want) < 1e-37 { // below float32's normal range
			if math.Abs(float64(got)) > 1e-37 {
				t.Errorf("gelu(%v) = %v, want %v", x, got, want)
			}
			return
		}
		if u := ulps(got, want); u > worst {
			worst, at = u, float64(x)
		}
	}
	for range 400000 {
		check(float32(r.NormFloat64() * 4))
	}
	for x := float32(-14); x < 14; x += 1.0 / 1024 {
		check(x)
	}
	t.Logf("gelu: %.2f ulp at worst (x = %v)", worst, at)
	if worst > 8 {
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
