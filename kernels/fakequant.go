package kernels

import "math"

// FakeQuantMagic is 1.5·2^23: for |t| < 2^22, the float32 sum t +
// FakeQuantMagic is FakeQuantMagic + roundEven(t) exactly, so adding it
// rounds t to an integer half to even.
const FakeQuantMagic = 0x1.8p23

// FakeQuant runs a per-tensor QuantizeLinear -> DequantizeLinear pair over
// src in one pass, up to the first value that is not finite, and returns
// how many values it wrote:
//
//	for i, x := range src {
//		if x is NaN or ±Inf {
//			return i
//		}
//		u := x/qs + FakeQuantMagic   // float32, rounded: x/qs to an integer
//		u += shift                   // qz − dz − FakeQuantMagic: exact
//		if lo > u { u = lo }         // lo − dz
//		if hi < u { u = hi }         // hi − dz
//		dst[i] = u * ds
//	}
//	return len(src)
//
// each operation rounded to float32 in that order (quant.FakeQuant says
// why this is the pair's bits). So the result is len(src) exactly when
// every value is finite; otherwise dst[:n] holds the pair's outputs of
// the finite values before the first that is not, dst[n:] is untouched,
// and the caller computes src[n] (and what follows) its own way. dst may
// be src, or must not overlap it; len(dst) >= len(src).
func FakeQuant(dst, src []float32, qs, shift, lo, hi, ds float32) int {
	dst = dst[:len(src)]
	for i, x := range src {
		if !finite(x) {
			return i
		}
		u := x/qs + FakeQuantMagic
		u += shift
		if lo > u {
			u = lo
		}
		if hi < u {
			u = hi
		}
		dst[i] = u * ds
	}
	return len(src)
}

// FakeQuantTable is FakeQuant followed by any function of the pair's
// output, tabulated: it finds the pair's integer as an index into lut
// (its offset from the integer type's least) and writes lut's entry, up
// to the first value that is not finite, and returns how many it wrote:
//
//	for i, x := range src {
//		if x is NaN or ±Inf {
//			return i
//		}
//		u := x/qs + FakeQuantMagic   // float32, rounded
//		u += shift                   // qz − least − FakeQuantMagic: exact
//		if !(u > 0) { u = 0 }        // NaN (from a qs of 0 or NaN) too
//		if u > 255 { u = 255 }
//		dst[i] = lut[uint8(u)]       // u is an integer in [0, 255]
//	}
//	return len(src)
//
// dst[n:] is untouched; dst may be src, or must not overlap it.
func FakeQuantTable(dst, src []float32, qs, shift float32, lut *[256]float32) int {
	dst = dst[:len(src)]
	for i, x := range src {
		if !finite(x) {
			return i
		}
		u := x/qs + FakeQuantMagic
		u += shift
		if !(u > 0) {
			u = 0
		}
		if u > 255 {
			u = 255
		}
		dst[i] = lut[uint8(u)]
	}
	return len(src)
}

// finite reports whether x is neither NaN nor ±Inf: its exponent bits
// are not all ones.
func finite(x float32) bool {
	return math.Float32bits(x)&0x7f800000 != 0x7f800000
}
