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

// QuantizeDivU8 writes u[i] = clamp(roundEven(x[i]/scale), -zp, 255-zp) +
// zp for each i, where the quotient is a float32 division: the bytes
// DynamicQuantizeLinear gives x with scale and zero point zp (the clamp
// before rounding to the integer bounds is its saturation after). It
// requires len(u) >= len(x), no x[i]/scale NaN and zp in [0, 255].
func QuantizeDivU8(x []float32, scale float32, zp int32, u []uint8) {
	u = u[:len(x)]
	lo, hi := float32(-zp), float32(255-zp)
	for i, v := range x {
		q := min(max(v/scale, lo), hi)
		u[i] = uint8(int32(math.RoundToEven(float64(q))) + zp)
	}
}

// QuantizeU8 writes u[i] = clamp(roundEven(x[i]*inv), -zp, 127-zp) + zp
// for each i, where the product is a float32 multiplication: bytes in
// [0, 127]. It requires len(u) >= len(x), finite x and zp in [0, 127].
func QuantizeU8(x []float32, inv float32, zp int32, u []uint8) {
	u = u[:len(x)]
	lo, hi := float32(-zp), float32(127-zp)
	for i, v := range x {
		q := v * inv
		q = min(max(q, lo), hi)
		u[i] = uint8(int32(math.RoundToEven(float64(q))) + zp)
	}
}
