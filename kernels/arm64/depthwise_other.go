//go:build !arm64 || !gc || purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// DepthwiseRowsNEON forwards to kernels.DepthwiseRows in builds without
// assembly.
func DepthwiseRowsNEON(dst, src, w []float32, offs []int, step, channels int) {
	kernels.DepthwiseRows(dst, src, w, offs, step, channels)
}
