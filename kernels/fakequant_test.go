package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pair is QuantizeLinear then DequantizeLinear as ONNX defines them, in
// float64 from math.RoundToEven, for a finite x: the output and the
// integer's offset from the type's least.
func pair(x, qs float32, qz, dz int, ds float32, signed bool) (float32, int) {
	lo, hi := 0.0, 255.0
	if signed {
		lo, hi = -128, 127
	}
	q := min(max(math.RoundToEven(float64(x/qs))+float64(qz), lo), hi)
	return float32(q-float64(dz)) * ds, int(q - lo)
}

// pairInputs are values around every rounding midpoint of the range,
// beyond it, huge, zeros of both signs, and random values of several
// magnitudes, all finite.
func pairInputs(rng *rand.Rand, qs float32) []float32 {
	var x []float32
	for i := -600; i <= 600; i++ {
		v := float32(i) / 2 * qs
		x = append(x, v, math.Nextafter32(v, float32(math.Inf(1))), math.Nextafter32(v, float32(math.Inf(-1))))
	}
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 0x1p21, -0x1p21, 0x1p22, -0x1p22, 0x1.8p23, -0x1.8p23,
		0x1p24, -0x1p24, math.MaxFloat32, -math.MaxFloat32, 1e-45, -1e-45} {
		x = append(x, v)
		if w := v * qs; !math.IsInf(float64(w), 0) {
			x = append(x, w)
		}
	}
	for range 3000 {
		x = append(x, float32(rng.NormFloat64()*float64(qs)*math.Pow(10, float64(rng.IntN(6)))))
	}
	return x
}

// TestFakeQuantIsThePair checks FakeQuant and FakeQuantTable against the
// pair's own definition on finite values, UINT8 and INT8, scales of
// every magnitude and both signs.
func TestFakeQuantIsThePair(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var indices [256]float32
	for i := range indices {
		indices[i] = float32(i)
	}
	cases := []struct {
		qs, ds float32
		qz, dz int
		signed bool
	}{
		{0.0235, 0.0235, 128, 128, false},
		{0.0235, 0.0235, 0, 0, false},
		{3.7e-5, 3.7e-5, 255, 255, false},
		{0.1, 0.1, 0, 0, true},
		{0.013, 0.027, -5, 3, true},
		{1.9, 0.5, 127, -128, true},
		{-0.5, 0.25, 10, 20, true},
		{1e-40, 1e-40, 0, 0, true}, // subnormal: most quotients overflow
		{1e30, 3, -128, 127, true},
	}
	for ci, c := range cases {
		lo, hi := 0, 255
		if c.signed {
			lo, hi = -128, 127
		}
		shift := float32(float64(c.qz) - float64(c.dz) - FakeQuantMagic)
		ishift := float32(float64(c.qz) - float64(lo) - FakeQuantMagic)
		x := pairInputs(rng, c.qs)
		y := make([]float32, len(x))
		tab := make([]float32, len(x))
		if n := FakeQuant(y, x, c.qs, shift, float32(lo-c.dz), float32(hi-c.dz), c.ds); n != len(x) {
			t.Fatalf("case %d: FakeQuant returned %d of %d finite values", ci, n, len(x))
		}
		if n := FakeQuantTable(tab, x, c.qs, ishift, &indices); n != len(x) {
			t.Fatalf("case %d: FakeQuantTable returned %d of %d finite values", ci, n, len(x))
		}
		for i, v := range x {
			want, j := pair(v, c.qs, c.qz, c.dz, c.ds, c.signed)
			if math.Float32bits(y[i]) != math.Float32bits(want) || tab[i] != float32(j) {
				t.Fatalf("case %d: x=%g (%#x): FakeQuant %g, index %g; the pair %g, %d", ci, v, math.Float32bits(v), y[i], tab[i], want, j)
			}
		}
	}
}

// TestFakeQuantStops: both stop at the first value that is not finite,
// leaving the rest of dst untouched, and compute in place.
func TestFakeQuantStops(t *testing.T) {
	shift := float32(128 - 128 - FakeQuantMagic)
	var indices [256]float32
	for i := range indices {
		indices[i] = float32(i)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for n := range 20 {
			for at := range n + 1 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(i) - 7.3
				}
				if at < n {
					x[at] = bad
				}
				y := make([]float32, n)
				tab := make([]float32, n)
				for i := range y {
					y[i], tab[i] = 42, 42
				}
				in := append([]float32(nil), x...)
				got := FakeQuant(y, x, 0.5, shift, -128, 127, 0.5)
				gotI := FakeQuantTable(tab, x, 0.5, shift+128, &indices)
				gotP := FakeQuant(in, in, 0.5, shift, -128, 127, 0.5)
				if got != at || gotI != at || gotP != at {
					t.Fatalf("%v at %d of %d: returned %d, %d, in place %d", bad, at, n, got, gotI, gotP)
				}
				for i := range n {
					want, j := pair(x[i], 0.5, 128, 128, 0.5, false)
					switch {
					case i >= at && (y[i] != 42 || tab[i] != 42):
						t.Fatalf("%v at %d of %d: wrote %g, %g at %d", bad, at, n, y[i], tab[i], i)
					case i < at && (y[i] != want || tab[i] != float32(j) || in[i] != want):
						t.Fatalf("%v at %d of %d: x=%g gave %g, %g, in place %g; want %g, %d", bad, at, n, x[i], y[i], tab[i], in[i], want, j)
					case i >= at && math.Float32bits(in[i]) != math.Float32bits(x[i]):
						t.Fatalf("%v at %d of %d: in place changed x[%d]", bad, at, n, i)
					}
				}
			}
		}
	}
}

// TestFakeQuantTableNaNQuotient: a scale of 0 or NaN makes a finite x's
// quotient NaN, which FakeQuantTable sends to index 0.
func TestFakeQuantTableNaNQuotient(t *testing.T) {
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(i) + 1
	}
	for _, qs := range []float32{0, float32(math.NaN())} {
		x := []float32{0, 1, -1, 3}
		y := make([]float32, len(x))
		if n := FakeQuantTable(y, x, qs, -FakeQuantMagic, &lut); n != len(x) {
			t.Fatalf("qs %g: returned %d", qs, n)
		}
		for i, v := range x {
			want := lut[0]
			if qs == 0 && v != 0 {
				want = lut[255] // ±1/0 is ±Inf: clamped (−Inf to 0)
				if v < 0 {
					want = lut[0]
				}
			}
			if y[i] != want {
				t.Errorf("qs %g, x %g: %g, want %g", qs, v, y[i], want)
			}
		}
	}
}
