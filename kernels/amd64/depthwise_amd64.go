//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// depthwiseRowsAVX2 computes kernels.DepthwiseRows(dst, src, w, offs,
// step, channels) on channels [0, width) of each pixel, with fused
// multiply-adds. Requires AVX2 and FMA, len(dst) = pixels·channels,
// width a positive multiple of 8 at most channels, len(offs) >= 1, and
// the reference's bounds on src and w.
//
//go:noescape
func depthwiseRowsAVX2(dst, src, w []float32, offs []int, step, channels, width, pixels int)

// DepthwiseRowsAVX2 computes kernels.DepthwiseRows(dst, src, w, offs,
// step, channels) with fused multiply-adds: the reference's sums within
// the rounding it states. Requires AVX2 and FMA.
func DepthwiseRowsAVX2(dst, src, w []float32, offs []int, step, channels int) {
	if channels <= 0 || len(dst) < channels || len(offs) == 0 {
		return
	}
	width := channels &^ 7
	if width == 0 {
		kernels.DepthwiseRows(dst, src, w, offs, step, channels)
		return
	}
	if step < 0 {
		panic("amd64: DepthwiseRowsAVX2: negative step")
	}
	top := 0
	for _, o := range offs {
		if o < 0 {
			panic("amd64: DepthwiseRowsAVX2: negative offset")
		}
		top = max(top, o)
	}
	// Go checks the bounds the assembly trusts.
	n := len(dst) / channels
	dst = dst[:n*channels]
	src = src[:(n-1)*step+top+channels]
	w = w[:len(offs)*channels]
	depthwiseRowsAVX2(dst, src, w, offs, step, channels, width, n)
	if width < channels {
		kernels.DepthwiseRowsCols(dst, src, w, offs, step, channels, width)
	}
}
