//go:build gc && !purego

package arm64

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// TestGeluNEONRounded compares GeluNEON with kernels.GeluOne, whose
// multiply-adds are kernels.FMA32 and whose other products are rounded on
// every architecture, bit for bit (any NaN for a NaN) on every length to
// 70 and a long row, with and without bias: normal values, every power of
// two's neighbourhood from subnormals to float32's largest, ±0, ±Inf and
// NaN.
func TestGeluNEONRounded(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 20))
	var special []float32
	for e := -149; e <= 127; e++ {
		v := float32(math.Ldexp(1, e))
		special = append(special, v, -v, math.Nextafter32(v, 0), -math.Nextafter32(v, 0))
	}
	special = append(special, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)))
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 70, 4099} {
		for _, withBias := range []bool{false, true} {
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(r.NormFloat64() * 4)
				if r.IntN(3) == 0 {
					src[i] = special[r.IntN(len(special))]
				}
			}
			var bias []float32
			if withBias {
				bias = make([]float32, n)
				for i := range bias {
					bias[i] = float32(r.NormFloat64())
				}
			}
			dst := make([]float32, n+1)[1:] // unaligned
			GeluNEON(dst, src, bias)
			for i, x := range src {
				if bias != nil {
					x += bias[i]
				}
				want := kernels.GeluOne(x)
				if math.Float32bits(dst[i]) != math.Float32bits(want) && !(dst[i] != dst[i] && want != want) {
					t.Fatalf("n=%d bias=%v: gelu(%v) = %v (%08x), want %v (%08x)", n, withBias, x, dst[i], math.Float32bits(dst[i]), want, math.Float32bits(want))
				}
			}
		}
	}
}

// TestGeluTanhNEON compares GeluTanhNEON with kernels.GeluTanhOne bit for
// bit (any NaN for a NaN): random values of several spreads on every
// length to 70 and a long row, out of place (dst unaligned) and in place;
// special values (±0, ±Inf, NaN, ±1e30, ExpNegMin's neighbourhood, every
// value from -9.97 to -10, where the result flushes to 0); and a comb
// through all 2³² bit patterns (a coarser one in short mode).
func TestGeluTanhNEON(t *testing.T) {
	for l, c := range kernels.ActConsts()[kernels.ActGeluA][:4] {
		if c != actConsts[22][l] || kernels.ActConsts()[kernels.ActGeluK][l] != actConsts[23][l] {
			t.Fatalf("actConsts rows 22, 23 are not kernels.ActConsts' GeluTanh rows")
		}
	}
	check := func(what string, src []float32) {
		t.Helper()
		dst := make([]float32, len(src)+1)[1:]
		GeluTanhNEON(dst, src)
		in := append([]float32(nil), src...)
		GeluTanhNEON(in, in)
		for i, x := range src {
			want := kernels.GeluTanhOne(x)
			for _, got := range []float32{dst[i], in[i]} {
				if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
					t.Fatalf("%s (n=%d): GeluTanh(%v = %08x) = %v (%08x), want %v (%08x)", what, len(src), x, math.Float32bits(x), got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(7, 21))
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 70, 4099} {
		for _, spread := range []float64{0.5, 4, 30} {
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(r.NormFloat64() * spread)
			}
			check("random", src)
		}
	}
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0xffffffff), 1e30, -1e30, math.MaxFloat32, -math.MaxFloat32, 1e-45, -1e-45, 1e-38, -1e-38,
		kernels.ExpNegMin, -kernels.ExpNegMin, kernels.ExpNegMin / 2, -kernels.ExpNegMin / 2, 1, -1, 3, -3}
	for v := float32(-9.97); v >= -10; v = math.Nextafter32(v, -11) {
		special = append(special, v)
	}
	check("special", special)
	step := uint64(4099)
	if testing.Short() {
		step = 65537
	}
	comb := make([]float32, 0, 1<<32/step+1)
	for b := uint64(0); b < 1<<32; b += step {
		comb = append(comb, math.Float32frombits(uint32(b)))
	}
	check("comb", comb)
}
