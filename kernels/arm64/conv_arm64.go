//go:build gc && !purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// convFinishNEON computes kernels.ConvFinish(dst, bias, res, lo, hi)
// (bias, res empty for nil). Requires ASIMD; len(dst) a positive
// multiple of 8, len(bias) and len(res) 0 or len(dst).
//
//go:noescape
func convFinishNEON(dst, bias, res []float32, lo, hi float32)

// convHardNEON computes kernels.ConvHard(dst, a, b, lo, hi, d, mode).
// Requires ASIMD; len(dst) a positive multiple of 8, mode a valid form.
//
//go:noescape
func convHardNEON(dst []float32, a, b, lo, hi, d float32, mode int)

// mulNEON sets dst[i] *= s[i]. Requires ASIMD; len(dst) a positive
// multiple of 8, len(s) >= len(dst).
//
//go:noescape
func mulNEON(dst, s []float32)

// convTapsNEON computes kernels.ConvTaps(dst, src, w, step) with fused
// multiply-adds. Requires ASIMD; len(dst) a positive multiple of 8,
// len(w) > 0, len(src) >= len(dst) + (len(w)-1)·step, step >= 0.
//
//go:noescape
func convTapsNEON(dst, src, w []float32, step int)

// ConvFinishNEON computes kernels.ConvFinish(dst, bias, res, lo, hi).
// Requires ASIMD.
func ConvFinishNEON(dst, bias, res []float32, lo, hi float32) {
	if bias != nil {
		bias = bias[:len(dst)]
	}
	if res != nil {
		res = res[:len(dst)]
	}
	n8 := len(dst) &^ 7
	if n8 > 0 {
		var b, r []float32
		if bias != nil {
			b = bias[:n8]
		}
		if res != nil {
			r = res[:n8]
		}
		convFinishNEON(dst[:n8], b, r, lo, hi)
	}
	if n8 < len(dst) {
		var b, r []float32
		if bias != nil {
			b = bias[n8:]
		}
		if res != nil {
			r = res[n8:]
		}
		kernels.ConvFinish(dst[n8:], b, r, lo, hi)
	}
}

// ConvHardNEON computes kernels.ConvHard(dst, a, b, lo, hi, d, mode).
// Requires ASIMD.
func ConvHardNEON(dst []float32, a, b, lo, hi, d float32, mode int) {
	if uint(mode) > kernels.HardXTMul {
		panic("arm64: ConvHard: unknown mode")
	}
	n8 := len(dst) &^ 7
	if n8 > 0 {
		convHardNEON(dst[:n8], a, b, lo, hi, d, mode)
	}
	kernels.ConvHard(dst[n8:], a, b, lo, hi, d, mode)
}

// ScaleRowsNEON computes kernels.ScaleRows(dst, s). Requires ASIMD.
func ScaleRowsNEON(dst, s []float32) {
	n8 := len(s) &^ 7
	if n8 == 0 {
		kernels.ScaleRows(dst, s)
		return
	}
	for ; len(dst) >= len(s); dst = dst[len(s):] {
		row := dst[:len(s)]
		mulNEON(row[:n8], s[:n8])
		if n8 < len(s) {
			kernels.ScaleRows(row[n8:], s[n8:])
		}
	}
}

// ConvTapsNEON computes kernels.ConvTaps(dst, src, w, step) with fused
// multiply-adds, within the rounding ConvTaps states. Requires ASIMD.
func ConvTapsNEON(dst, src, w []float32, step int) {
	if len(dst) == 0 || len(w) == 0 {
		return
	}
	if step < 0 { // outside the contract: the reference's behaviour
		kernels.ConvTaps(dst, src, w, step)
		return
	}
	src = src[:len(dst)+(len(w)-1)*step] // Go checks the bounds the assembly trusts
	n8 := len(dst) &^ 7
	if n8 > 0 {
		convTapsNEON(dst[:n8], src, w, step)
	}
	if n8 < len(dst) {
		kernels.ConvTaps(dst[n8:], src[n8:], w, step)
	}
}
