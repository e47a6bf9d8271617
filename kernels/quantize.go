package kernels

import "math"

// MinMax returns the smallest and largest values of x and whether every
// value is finite. For an empty x it returns 0, 0, true.
//
//	finite = no x[i] is NaN or ±Inf
func MinMax(x []float32) (lo, hi float32, finite bool) {
	if len(x) == 0 {
		return 0, 0, true
	}
	lo, hi = x[0], x[0]
	finite = true
	for _, v := range x {
		if v != v || v > math.MaxFloat32 || v < -math.MaxFloat32 {
			finite = false
		}
		lo = min(lo, v)
		hi = max(hi, v)
	}
	return lo, hi, finite
}

// QuantizeU8 writes u[i] = clamp(roundEven(x[i]*inv), lo, hi) + zp for
// each i, where the product is a float32 multiplication and [lo, hi] is
// [0, 127] when zp == 0 and [-64, 64] when zp == 64. It requires
// len(u) >= len(x) and finite x.
func QuantizeU8(x []float32, inv float32, zp int32, u []uint8) {
	u = u[:len(x)]
	lo, hi := float32(0), float32(127)
	if zp != 0 {
		lo, hi = -64, 64
	}
	for i, v := range x {
		q := v * inv
		q = min(max(q, lo), hi)
		u[i] = uint8(int32(math.RoundToEven(float64(q))) + zp)
	}
}
