package quant_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// pairValue is QuantizeLinear then DequantizeLinear as their ONNX
// definitions spell them, one value at a time: the independent reference.
func pairValue(x, qs float32, qz, dz int, ds float32, signed bool) float32 {
	y, _ := pairValueIndex(x, qs, qz, dz, ds, signed)
	return y
}

// pairValueIndex is pairValue with the integer's offset from the type's
// least.
func pairValueIndex(x, qs float32, qz, dz int, ds float32, signed bool) (float32, int) {
	lo, hi := 0.0, 255.0
	if signed {
		lo, hi = -128, 127
	}
	r := math.RoundToEven(float64(x/qs)) + float64(qz)
	var q float64
	switch {
	case math.IsNaN(r):
		if signed {
			q = float64(int8(r))
		} else {
			q = float64(uint8(r))
		}
	default:
		q = min(max(r, lo), hi)
	}
	return float32(q-float64(dz)) * ds, int(q - lo)
}

// fakeInputs are random values of several magnitudes around the scale
// and every edge: zeros, halves, the bounds, huge values, infinities,
// NaN.
func fakeInputs(rng *rand.Rand, qs float32, n int) []float32 {
	x := make([]float32, 0, n+64)
	for _, v := range []float64{0, math.Copysign(0, -1), 0.5, -0.5, 1.5, -1.5, 2.5, 127.5, -128.5, 255.5, 1e30, -1e30,
		math.Inf(1), math.Inf(-1), math.NaN(), 0x1p21, -0x1p21, 0x1p22, -0x1p22, 0x1.8p23, -0x1.8p23, 0x1p24, -0x1p24} {
		x = append(x, float32(v)*qs, float32(v))
	}
	for i := -300; i <= 300; i++ { // every half step around the range
		x = append(x, float32(i)/2*qs, math.Nextafter32(float32(i)/2*qs, float32(math.Inf(1))), math.Nextafter32(float32(i)/2*qs, float32(math.Inf(-1))))
	}
	for len(x) < cap(x)+n {
		x = append(x, float32(rng.NormFloat64()*float64(qs)*math.Pow(10, float64(rng.IntN(5)))))
		if len(x) > n+2000 {
			break
		}
	}
	return x
}

func TestFakeQuantApplyVectorMatchesPair(t *testing.T) {
	if kernels.HardXTDiv != 2 {
		t.Fatalf("kernels.HardXTDiv is %d; FakeQuant.ApplyVector passes 2", kernels.HardXTDiv)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		qs, ds float32
		qz, dz int
		signed bool
	}{
		{0.0235, 0.0235, 0, 0, false},
		{0.0235, 0.0235, 128, 128, false},
		{0.1, 0.1, 0, 0, true},
		{0.013, 0.027, -5, 3, true},
		{3.7e-5, 3.7e-5, 255, 255, false},
		{1.9, 0.5, 127, -128, true},
		{1e-40, 1e-40, 0, 0, true}, // a subnormal scale: most quotients overflow
		{0, 0.0235, 0, 0, false},   // a zero scale: 0/0 is NaN
		{float32(math.Inf(1)), 0.5, 3, 3, true},
	}
	for _, tb := range append(dispatch.Available(), nil) {
		name, k := "no kernels", quant.FakeQuantKernels{} // the scalar loop
		if tb != nil {
			name, k = tb.Name, tb.FakeQuantKernels()
		}
		for ci, c := range cases {
			f := quant.NewFakeQuant(c.qs, float64(c.qz), c.ds, float64(c.dz), c.signed)
			x := fakeInputs(rng, c.qs, 3000)
			for _, n := range []int{0, 1, 7, 8, 9, 255, 256, 257, len(x)} { // chunk and vector tails
				src := x[len(x)-n:]
				want := make([]float32, n)
				for i, v := range src {
					want[i] = pairValue(v, c.qs, c.qz, c.dz, c.ds, c.signed)
				}
				got := make([]float32, n+1)
				got[n] = 42 // guard
				f.ApplyVector(got[:n], src, k)
				scalar := make([]float32, n)
				f.Apply(scalar, src)
				inPlace := append([]float32(nil), src...)
				f.ApplyVector(inPlace, inPlace, k)
				for i := range n {
					w := math.Float32bits(want[i])
					if math.Float32bits(got[i]) != w || math.Float32bits(scalar[i]) != w || math.Float32bits(inPlace[i]) != w {
						t.Fatalf("%s case %d n %d: x=%g (%#x): ApplyVector %g, in place %g, Apply %g, the pair %g",
							name, ci, n, src[i], math.Float32bits(src[i]), got[i], inPlace[i], scalar[i], want[i])
					}
				}
				if got[n] != 42 {
					t.Fatalf("%s: ApplyVector wrote past dst", name)
				}
				// Any function of the output, tabulated.
				var lut [256]float32
				for i := range lut {
					lut[i] = float32(i)*1.5 - 7
				}
				tab := append([]float32(nil), src...)
				f.ApplyTable(tab, tab, &lut, k)
				for i, v := range src {
					_, j := pairValueIndex(v, c.qs, c.qz, c.dz, c.ds, c.signed)
					if tab[i] != lut[j] {
						t.Fatalf("%s case %d n %d: x=%g: ApplyTable %g, want lut[%d] = %g", name, ci, n, v, tab[i], j, lut[j])
					}
				}
				if normal := c.qs != 0 && !math.IsInf(float64(c.qs), 0); normal && f.Table() != tableOf(c.qs, c.qz, c.dz, c.ds, c.signed) {
					t.Fatalf("case %d: Table is not the pair's outputs", ci)
				}
			}
		}
	}
}

// tableOf is the pair's output for each integer, by its offset from the
// type's least.
func tableOf(qs float32, qz, dz int, ds float32, signed bool) [256]float32 {
	var t [256]float32
	lo := 0
	if signed {
		lo = -128
	}
	for i := range t {
		t[i], _ = pairValueIndex(float32(lo+i-qz)*qs, qs, qz, dz, ds, signed)
	}
	return t
}

func BenchmarkFakeQuant(b *testing.B) {
	f := quant.NewFakeQuant(0.0235, 128, 0.0235, 128, false)
	x := make([]float32, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	y := make([]float32, len(x))
	b.Run("Apply", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			f.Apply(y, x)
		}
	})
	for _, tb := range dispatch.Available() {
		k := tb.FakeQuantKernels()
		b.Run("ApplyVector/"+tb.Name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				f.ApplyVector(y, x, k)
			}
		})
	}
}

// TestFakeQuantNonFiniteRuns: values that are not finite alone, in runs,
// alternating with finite ones, at the kernels' block edges and filling
// all of x: ApplyVector and ApplyTable, in place, give Apply's and the
// scalar loop's values on every table.
func TestFakeQuantNonFiniteRuns(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	f := quant.NewFakeQuant(0.05, 3, 0.05, 3, true)
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(i) - 100
	}
	patterns := map[string]func(i int) bool{
		"none":        func(int) bool { return false },
		"all":         func(int) bool { return true },
		"alternating": func(i int) bool { return i%2 == 0 },
		"edges":       func(i int) bool { return i == 7 || i == 8 || i == 31 || i == 32 || i == 33 || i == 64 },
		"run":         func(i int) bool { return i >= 5 && i < 45 },
		"last":        func(i int) bool { return i == 99 },
	}
	for name, bad := range patterns {
		x := make([]float32, 100)
		for i := range x {
			x[i] = float32(i-50) * 0.037
			if bad(i) {
				x[i] = [...]float32{nan, inf, -inf}[i%3]
			}
		}
		want := make([]float32, len(x))
		f.Apply(want, x)
		wantT := make([]float32, len(x))
		f.ApplyTable(wantT, x, &lut, quant.FakeQuantKernels{})
		for _, tb := range dispatch.Available() {
			k := tb.FakeQuantKernels()
			got := append([]float32(nil), x...)
			f.ApplyVector(got, got, k)
			tab := append([]float32(nil), x...)
			f.ApplyTable(tab, tab, &lut, k)
			for i := range x {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || tab[i] != wantT[i] {
					t.Fatalf("%s %s: x[%d]=%g: ApplyVector %g, Apply %g; ApplyTable %g, the scalar loop %g", tb, name, i, x[i], got[i], want[i], tab[i], wantT[i])
				}
			}
		}
	}
}
