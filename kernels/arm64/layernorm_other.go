//go:build !arm64 || !gc || purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// LayerNormSumsNEON forwards to kernels.LayerNormSums in builds without
// assembly.
func LayerNormSumsNEON(x []float32, shift float32) (s1, s2 float64) {
	return kernels.LayerNormSums(x, shift)
}

// LayerNormApplyNEON forwards to kernels.LayerNormApply in builds
// without assembly.
func LayerNormApplyNEON(y, x, scale, bias []float32, mean, inv float32) {
	kernels.LayerNormApply(y, x, scale, bias, mean, inv)
}
