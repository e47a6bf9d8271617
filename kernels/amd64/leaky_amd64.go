//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// leakyReluAVX2 computes kernels.LeakyRelu(dst, src, alpha). Requires
// AVX2, len(dst) == len(src) and a multiple of 8.
//
//go:noescape
func leakyReluAVX2(dst, src []float32, alpha float32)

// leakyReluAVX512 computes kernels.LeakyRelu(dst, src, alpha), the values
// after the last whole 16 under a mask. Requires AVX-512 F and len(dst)
// == len(src).
//
//go:noescape
func leakyReluAVX512(dst, src []float32, alpha float32)

// maxMinConstAVX2 computes kernels.MaxMinConst(dst, c, sign == 0), the
// sequence Go compiles min and max to (sign 0x80000000: max). Requires
// AVX2 and len(dst) a multiple of 8.
//
//go:noescape
func maxMinConstAVX2(dst []float32, c float32, sign uint32)

// maxMinConstAVX512 is maxMinConstAVX2 on zmm, the values after the last
// whole 16 under a mask. Requires AVX-512 F.
//
//go:noescape
func maxMinConstAVX512(dst []float32, c float32, sign uint32)

// maxPairAVX2 computes kernels.MaxPair(dst, a, b), the sequence Go
// compiles max to. Requires AVX2, len(a) and len(b) >= len(dst), and
// len(dst) a multiple of 8.
//
//go:noescape
func maxPairAVX2(dst, a, b []float32)

// LeakyReluAVX2 computes kernels.LeakyRelu(dst, src, alpha). Requires
// AVX2.
func LeakyReluAVX2(dst, src []float32, alpha float32) {
	dst = dst[:len(src)] // Go checks the bounds the assembly trusts
	n := len(src) &^ 7
	if n > 0 {
		leakyReluAVX2(dst[:n], src[:n], alpha)
	}
	kernels.LeakyRelu(dst[n:], src[n:], alpha)
}

// LeakyReluAVX512 computes kernels.LeakyRelu(dst, src, alpha). Requires
// AVX-512 F.
func LeakyReluAVX512(dst, src []float32, alpha float32) {
	dst = dst[:len(src)] // Go checks the bounds the assembly trusts
	if len(src) > 0 {
		leakyReluAVX512(dst, src, alpha)
	}
}

// maxSign is the sign flip that makes maxMinConst's min a max.
func maxSign(isMin bool) uint32 {
	if isMin {
		return 0
	}
	return 1 << 31
}

// MaxMinConstAVX2 computes kernels.MaxMinConst(dst, c, isMin). Requires
// AVX2.
func MaxMinConstAVX2(dst []float32, c float32, isMin bool) {
	n := len(dst) &^ 7
	if n > 0 {
		maxMinConstAVX2(dst[:n], c, maxSign(isMin))
	}
	kernels.MaxMinConst(dst[n:], c, isMin)
}

// MaxMinConstAVX512 computes kernels.MaxMinConst(dst, c, isMin).
// Requires AVX-512 F.
func MaxMinConstAVX512(dst []float32, c float32, isMin bool) {
	if len(dst) > 0 {
		maxMinConstAVX512(dst, c, maxSign(isMin))
	}
}

// MaxPairAVX2 computes kernels.MaxPair(dst, a, b). Requires AVX2.
func MaxPairAVX2(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)] // Go checks the bounds the assembly trusts
	n := len(dst) &^ 7
	if n > 0 {
		maxPairAVX2(dst[:n], a[:n], b[:n])
	}
	kernels.MaxPair(dst[n:], a[n:], b[n:])
}

// maxColsAVX2 computes kernels.MaxCols for ch a multiple of 8, n >= 1,
// taps >= 1.
//
//go:noescape
func maxColsAVX2(dst, src []float32, n, ch, step, taps, tapStep int)

// maxPairAVX512 computes kernels.MaxPair(dst, a, b) as maxPairAVX2
// does, the values after the last whole 16 under a mask. Requires
// AVX-512 F and len(a), len(b) >= len(dst).
//
//go:noescape
func maxPairAVX512(dst, a, b []float32)

// maxColsAVX512 computes kernels.MaxCols for n >= 1, ch >= 1, taps >= 1,
// the channels after the last whole 16 under a mask.
//
//go:noescape
func maxColsAVX512(dst, src []float32, n, ch, step, taps, tapStep int)

// MaxColsAVX2 computes kernels.MaxCols on ymm in one call for a row of
// pixels, where MaxPair took a call a pixel and tap (a 3×3 max pool over
// 64 channels: two calls of 64 values an output pixel). Channels not a
// multiple of 8 go to kernels.MaxCols. Requires AVX2.
func MaxColsAVX2(dst, src []float32, n, ch, step, taps, tapStep int) {
	kernels.CheckMaxCols(dst, src, n, ch, step, taps, tapStep) // the bounds the assembly trusts
	switch {
	case n <= 0 || ch <= 0:
	case ch%8 != 0:
		kernels.MaxCols(dst, src, n, ch, step, taps, tapStep)
	default:
		maxColsAVX2(dst, src, n, ch, step, taps, tapStep)
	}
}

// MaxPairAVX512 computes kernels.MaxPair(dst, a, b). Requires AVX-512 F.
func MaxPairAVX512(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)] // Go checks the bounds the assembly trusts
	if len(dst) > 0 {
		maxPairAVX512(dst, a, b)
	}
}

// MaxColsAVX512 computes kernels.MaxCols on zmm in one call for a row of
// pixels, four vectors of channels at a time, any channel count (a
// PaddleOCR pool's 200: twelve whole vectors and eight lanes under a
// mask). Requires AVX-512 F.
func MaxColsAVX512(dst, src []float32, n, ch, step, taps, tapStep int) {
	kernels.CheckMaxCols(dst, src, n, ch, step, taps, tapStep) // the bounds the assembly trusts
	if n > 0 && ch > 0 {
		maxColsAVX512(dst, src, n, ch, step, taps, tapStep)
	}
}
