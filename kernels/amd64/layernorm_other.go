//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// LayerNormSumsAVX2 forwards to kernels.LayerNormSums in builds without
// assembly.
func LayerNormSumsAVX2(x []float32, shift float32) (s1, s2 float64) {
	return kernels.LayerNormSums(x, shift)
}

// LayerNormApplyAVX2 forwards to kernels.LayerNormApply in builds
// without assembly.
func LayerNormApplyAVX2(y, x, scale, bias []float32, mean, inv float32) {
	kernels.LayerNormApply(y, x, scale, bias, mean, inv)
}
