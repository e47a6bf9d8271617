//go:build gc && !purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// depthwiseRowsNEON computes kernels.DepthwiseRows(dst, src, w, offs,
// step, channels) on channels [0, width) of each pixel, with fused
// multiply-adds. Requires ASIMD, len(dst) = pixels·channels, width a
// positive multiple of 4 at most channels, len(offs) >= 1, and the
// reference's bounds on src and w.
//
//go:noescape
func depthwiseRowsNEON(dst, src, w []float32, offs []int, step, channels, width, pixels int)

// DepthwiseRowsNEON computes kernels.DepthwiseRows(dst, src, w, offs,
// step, channels) with fused multiply-adds, within the rounding it
// states. Requires ASIMD.
func DepthwiseRowsNEON(dst, src, w []float32, offs []int, step, channels int) {
	if channels <= 0 || len(dst) < channels || len(offs) == 0 {
		return
	}
	width := channels &^ 3
	if width == 0 || step < 0 { // step < 0 is outside the contract: the reference's behaviour
		kernels.DepthwiseRows(dst, src, w, offs, step, channels)
		return
	}
	top := 0
	for _, o := range offs {
		if o < 0 {
			kernels.DepthwiseRows(dst, src, w, offs, step, channels)
			return
		}
		top = max(top, o)
	}
	// Go checks the bounds the assembly trusts.
	n := len(dst) / channels
	dst = dst[:n*channels]
	src = src[:(n-1)*step+top+channels]
	w = w[:len(offs)*channels]
	depthwiseRowsNEON(dst, src, w, offs, step, channels, width, n)
	if width < channels {
		kernels.DepthwiseRowsCols(dst, src, w, offs, step, channels, width)
	}
}
