package kernels

// LeakyRelu computes the LeakyRelu operator's float32 loop:
//
//	for i, v := range src {
//		if v < 0 {
//			v *= alpha
//		}
//		dst[i] = v
//	}
//
// so a NaN keeps its bits and -0 stays -0 (neither is below 0).
// len(dst) >= len(src); dst may be src (but not overlap it otherwise).
func LeakyRelu(dst, src []float32, alpha float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		if v < 0 {
			v *= alpha
		}
		dst[i] = v
	}
}

// MaxMinConst bounds dst by c as the Max and Min operators compute
// float32 values, with Go's built-in max and min:
//
//	dst[i] = max(dst[i], c)   (min(dst[i], c) when isMin)
//
// Go's max and min give a NaN for a NaN operand and order -0 below +0;
// which NaN is the compiler's: on amd64 it computes min(a, b) as
// m | minss(m, a), m = minss(a, b) (minss(x, y) = x < y ? x : y, | on the
// bits), and max(a, b) as min(-a, -b) negated; on arm64 FMINS and FMAXS.
// The SIMD twins compute the same instructions lane by lane.
func MaxMinConst(dst []float32, c float32, isMin bool) {
	if isMin {
		for i, v := range dst {
			dst[i] = min(v, c)
		}
		return
	}
	for i, v := range dst {
		dst[i] = max(v, c)
	}
}

// MaxPair sets dst[i] = max(a[i], b[i]) as the MaxPool and Max operators
// compute float32 values, with Go's built-in max (see MaxMinConst: a NaN
// operand gives a NaN, -0 orders below +0, and the SIMD twins compute
// the compiler's instructions lane by lane). dst may be a or b; len(a)
// and len(b) >= len(dst).
func MaxPair(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = max(a[i], b[i])
	}
}
