//go:build !arm64 || !gc || purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// FakeQuantNEON forwards to kernels.FakeQuant in builds without assembly.
func FakeQuantNEON(dst, src []float32, qs, shift, lo, hi, ds float32) int {
	return kernels.FakeQuant(dst, src, qs, shift, lo, hi, ds)
}

// FakeQuantTableNEON forwards to kernels.FakeQuantTable in builds without
// assembly.
func FakeQuantTableNEON(dst, src []float32, qs, shift float32, lut *[256]float32) int {
	return kernels.FakeQuantTable(dst, src, qs, shift, lut)
}
