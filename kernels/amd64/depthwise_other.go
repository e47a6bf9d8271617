//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// DepthwiseRowsAVX2 forwards to kernels.DepthwiseRows in builds without
// assembly.
func DepthwiseRowsAVX2(dst, src, w []float32, offs []int, step, channels int) {
	kernels.DepthwiseRows(dst, src, w, offs, step, channels)
}

// DepthwiseRowsAVX512 forwards to kernels.DepthwiseRows in builds
// without assembly.
func DepthwiseRowsAVX512(dst, src, w []float32, offs []int, step, channels int) {
	kernels.DepthwiseRows(dst, src, w, offs, step, channels)
}

// PadChannelsAVX512 forwards to kernels.PadChannels in builds without
// assembly.
func PadChannelsAVX512(dst, src []float32, n, ch, cs int) { kernels.PadChannels(dst, src, n, ch, cs) }

// CopyBlockAVX512 forwards to kernels.CopyBlock in builds without
// assembly.
func CopyBlockAVX512(dst []float32, ldd int, src []float32, lds int, rows, cols int) {
	kernels.CopyBlock(dst, ldd, src, lds, rows, cols)
}

// EveryOtherAVX512 forwards to kernels.EveryOther in builds without
// assembly.
func EveryOtherAVX512(dst, src []float32) { kernels.EveryOther(dst, src) }
