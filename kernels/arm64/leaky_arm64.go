//go:build gc && !purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// leakyReluNEON computes kernels.LeakyRelu(dst, src, alpha). Requires
// ASIMD, len(dst) == len(src) and a multiple of 8.
//
//go:noescape
func leakyReluNEON(dst, src []float32, alpha float32)

// maxMinConstNEON computes kernels.MaxMinConst(dst, c, isMin) with FMAX
// or FMIN. Requires ASIMD and len(dst) a multiple of 8.
//
//go:noescape
func maxMinConstNEON(dst []float32, c float32, isMin bool)

// maxPairNEON computes kernels.MaxPair(dst, a, b) with FMAX. Requires
// ASIMD, len(a) and len(b) >= len(dst), and len(dst) a multiple of 8.
//
//go:noescape
func maxPairNEON(dst, a, b []float32)

// LeakyReluNEON computes kernels.LeakyRelu(dst, src, alpha). Requires
// ASIMD.
func LeakyReluNEON(dst, src []float32, alpha float32) {
	dst = dst[:len(src)] // Go checks the bounds the assembly trusts
	n := len(src) &^ 7
	if n > 0 {
		leakyReluNEON(dst[:n], src[:n], alpha)
	}
	kernels.LeakyRelu(dst[n:], src[n:], alpha)
}

// MaxMinConstNEON computes kernels.MaxMinConst(dst, c, isMin). Requires
// ASIMD.
func MaxMinConstNEON(dst []float32, c float32, isMin bool) {
	n := len(dst) &^ 7
	if n > 0 {
		maxMinConstNEON(dst[:n], c, isMin)
	}
	kernels.MaxMinConst(dst[n:], c, isMin)
}

// MaxPairNEON computes kernels.MaxPair(dst, a, b). Requires ASIMD.
func MaxPairNEON(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)] // Go checks the bounds the assembly trusts
	n := len(dst) &^ 7
	if n > 0 {
		maxPairNEON(dst[:n], a[:n], b[:n])
	}
	kernels.MaxPair(dst[n:], a[n:], b[n:])
}
