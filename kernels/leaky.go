package kernels

import "fmt"

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

// MaxCols sets each of n pixels of ch channels of dst to the maximum, as
// MaxPair computes it tap after tap, of taps pixels of src: pixel i of dst
// is max over t < taps of src[i*step+t*tapStep:][:ch] (a max pool's
// window along a channels-last row, the windows step values apart and
// their taps tapStep).
func MaxCols(dst, src []float32, n, ch, step, taps, tapStep int) {
	MaxColsWith(MaxPair, dst, src, n, ch, step, taps, tapStep)
}

// MaxColsWith is MaxCols on the given MaxPair, a call a pixel and tap.
func MaxColsWith(maxPair func(dst, a, b []float32), dst, src []float32, n, ch, step, taps, tapStep int) {
	CheckMaxCols(dst, src, n, ch, step, taps, tapStep)
	for i := range n {
		d := dst[i*ch : (i+1)*ch]
		copy(d, src[i*step:i*step+ch])
		for t := 1; t < taps; t++ {
			at := i*step + t*tapStep
			maxPair(d, d, src[at:at+ch])
		}
	}
}

// CheckMaxCols panics unless MaxCols's operands hold its pixels.
func CheckMaxCols(dst, src []float32, n, ch, step, taps, tapStep int) {
	if n > 0 && ch > 0 && (taps < 1 || step < 0 || tapStep < 0 || len(dst) < n*ch || len(src) < (n-1)*step+(taps-1)*tapStep+ch) {
		panic(fmt.Sprintf("kernels: MaxCols of %d pixels of %d channels (%d taps, steps %d and %d) from %d values into %d", n, ch, taps, step, tapStep, len(src), len(dst)))
	}
}
