//go:build gc && !purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// lnLanesNEON writes kernels.LayerNormLanes of the sixteen lanes of d =
// x[i] - shift (a[:4]) and of d² (a[4:]). Requires ASIMD and len(x) a
// multiple of 16.
//
//go:noescape
func lnLanesNEON(x []float32, shift float32, a *[8]float32)

// lnApplyNEON computes kernels.LayerNormApply(y, x, scale, bias, mean,
// inv) (no bias when len(bias) is 0). Requires ASIMD, len(x), len(scale)
// and len(bias), if any, >= len(y), and len(y) a multiple of 8.
//
//go:noescape
func lnApplyNEON(y, x, scale, bias []float32, mean, inv float32)

// LayerNormSumsNEON computes kernels.LayerNormSums(x, shift). Requires
// NEON.
func LayerNormSumsNEON(x []float32, shift float32) (s1, s2 float64) {
	var a [8]float32
	for len(x) > 0 {
		b := x[:min(len(x), kernels.LayerNormBlock)]
		x = x[len(b):]
		n := len(b) &^ 15
		a = [8]float32{}
		if n > 0 {
			lnLanesNEON(b[:n], shift, &a)
		}
		ds, qs := kernels.LayerNormTail([4]float32(a[:4]), [4]float32(a[4:]), b[n:], shift)
		s1 += float64(ds)
		s2 += float64(qs)
	}
	return s1, s2
}

// LayerNormApplyNEON computes kernels.LayerNormApply(y, x, scale, bias,
// mean, inv). Requires ASIMD.
func LayerNormApplyNEON(y, x, scale, bias []float32, mean, inv float32) {
	x, scale = x[:len(y)], scale[:len(y)] // Go checks the bounds the assembly trusts
	if bias != nil {
		bias = bias[:len(y)]
	}
	n := len(y) &^ 7
	if n > 0 {
		var b []float32
		if bias != nil {
			b = bias[:n]
		}
		lnApplyNEON(y[:n], x[:n], scale[:n], b, mean, inv)
	}
	var rest []float32
	if bias != nil {
		rest = bias[n:]
	}
	kernels.LayerNormApply(y[n:], x[n:], scale[n:], rest, mean, inv)
}
