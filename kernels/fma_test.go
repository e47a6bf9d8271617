package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// fmaExact rounds x·y+z computed exactly (big.Float) to float32.
func fmaExact(x, y, z float32) float32 {
	bx := new(big.Float).SetPrec(200).SetFloat64(float64(x))
	by := new(big.Float).SetPrec(200).SetFloat64(float64(y))
	bz := new(big.Float).SetPrec(200).SetFloat64(float64(z))
	s := new(big.Float).SetPrec(200).Mul(bx, by)
	s.Add(s, bz)
	f, _ := s.Float32()
	if s.Sign() == 0 {
		// IEEE: an exact zero sum of opposite signs is +0
		if math.Signbit(float64(x*y)) && math.Signbit(float64(z)) {
			return float32(math.Copysign(0, -1))
		}
		return 0
	}
	return f
}

func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	check := func(x, y, z float32) {
		t.Helper()
		got, want := FMA32(x, y, z), fmaExact(x, y, z)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("FMA32(%g, %g, %g) = %g (%#x), want %g (%#x)", x, y, z, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	for i := 0; i < 50000; i++ {
		x := math.Float32frombits(r.Uint32())
		y := math.Float32frombits(r.Uint32())
		z := math.Float32frombits(r.Uint32())
		if x != x || y != y || z != z || math.IsInf(float64(x*y), 0) || math.IsInf(float64(z), 0) {
			continue
		}
		check(x, y, z)
		// near-cancellation and ties: z close to -x·y
		check(x, y, -float32(float64(x)*float64(y)))
		check(x, y, math.Nextafter32(-float32(float64(x)*float64(y)), 0))
	}
	// The double-rounding trap: x·y = 1 + 2^-24 + 2^-48 lands on a float32
	// midpoint only after rounding to float64.
	check(1+0x1p-23, 1+0x1p-24, 0)
	check(1+0x1p-12, 1+0x1p-12, -0x1p-60)
	check(1+0x1p-12, 1+0x1p-12, 0x1p-60)
	check(float32(math.MaxFloat32), 1, float32(math.MaxFloat32))
	check(0x1p-100, 0x1p-49, 0)       // subnormal product
	check(0x1p-75, 0x1p-75, 0x1p-149) // below the smallest subnormal
	// A subnormal sum on a float32 halfway point only after rounding to
	// float64: 2^-126 - 2^-150 (between the largest subnormal and
	// 2^-126), less 2^-196. Its float64 bits end in zeros, as a normal
	// float32's would: only the size of s sends it to the exact path.
	check(float32(0x1p-126*(1+0x1p-23)), float32(0x1p-24*(1-0x1p-23)), math.Float32frombits(0x007fffff))
}
