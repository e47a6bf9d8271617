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

// depthwiseRowsAVX512 is depthwiseRowsAVX2 on 16 channels a register,
// width a multiple of 16. Requires AVX-512 F.
//
//go:noescape
func depthwiseRowsAVX512(dst, src, w []float32, offs []int, step, channels, width, pixels int)

// DepthwiseRowsAVX2 computes kernels.DepthwiseRows(dst, src, w, offs,
// step, channels) with fused multiply-adds: the reference's sums within
// the rounding it states. Requires AVX2 and FMA.
func DepthwiseRowsAVX2(dst, src, w []float32, offs []int, step, channels int) {
	depthwiseRows(depthwiseRowsAVX2, dst, src, w, offs, step, channels)
}

// DepthwiseRowsAVX512 computes what DepthwiseRowsAVX2 does, bit for bit,
// 16 channels a register where a pixel's channels span whole 64-byte
// lines (channels and step multiples of 16): 1.4-1.55x DepthwiseRowsAVX2
// on 16-96 channels of 3x3 and 5x5 taps (Zen 5). Other rows go to
// DepthwiseRowsAVX2, whose 32-byte loads cross no line where most of the
// 64-byte ones would, and which was faster there (24 channels: 0.85x).
// Requires AVX-512 F.
func DepthwiseRowsAVX512(dst, src, w []float32, offs []int, step, channels int) {
	if channels%16 != 0 || step%16 != 0 {
		depthwiseRows(depthwiseRowsAVX2, dst, src, w, offs, step, channels)
		return
	}
	depthwiseRows(depthwiseRowsAVX512, dst, src, w, offs, step, channels)
}

// depthwiseRows runs kernel on the channels below a multiple of 8 and
// the reference on the rest (the same bits whichever kernel), after
// checking in Go the bounds the assembly trusts.
func depthwiseRows(kernel func(dst, src, w []float32, offs []int, step, channels, width, pixels int), dst, src, w []float32, offs []int, step, channels int) {
	if channels <= 0 || len(dst) < channels || len(offs) == 0 {
		return
	}
	width := channels &^ 7
	if width == 0 {
		kernels.DepthwiseRows(dst, src, w, offs, step, channels)
		return
	}
	if step < 0 {
		panic("amd64: DepthwiseRows: negative step")
	}
	top := 0
	for _, o := range offs {
		if o < 0 {
			panic("amd64: DepthwiseRows: negative offset")
		}
		top = max(top, o)
	}
	n := len(dst) / channels
	dst = dst[:n*channels]
	src = src[:(n-1)*step+top+channels]
	w = w[:len(offs)*channels]
	kernel(dst, src, w, offs, step, channels, width, n)
	if width < channels {
		kernels.DepthwiseRowsCols(dst, src, w, offs, step, channels, width)
	}
}
