//go:build !arm64 || !gc || purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// ConvFinishNEON forwards to kernels.ConvFinish in builds without
// assembly.
func ConvFinishNEON(dst, bias, res []float32, lo, hi float32) {
	kernels.ConvFinish(dst, bias, res, lo, hi)
}

// ConvHardNEON forwards to kernels.ConvHard in builds without assembly.
func ConvHardNEON(dst []float32, a, b, lo, hi, d float32, mode int) {
	kernels.ConvHard(dst, a, b, lo, hi, d, mode)
}

// ScaleRowsNEON forwards to kernels.ScaleRows in builds without assembly.
func ScaleRowsNEON(dst, s []float32) { kernels.ScaleRows(dst, s) }

// ConvTapsNEON forwards to kernels.ConvTaps in builds without assembly.
func ConvTapsNEON(dst, src, w []float32, step int) { kernels.ConvTaps(dst, src, w, step) }
