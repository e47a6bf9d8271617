//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// FakeQuantAVX2 forwards to kernels.FakeQuant in builds without assembly.
func FakeQuantAVX2(dst, src []float32, qs, shift, lo, hi, ds float32) int {
	return kernels.FakeQuant(dst, src, qs, shift, lo, hi, ds)
}

// FakeQuantAVX512 forwards to kernels.FakeQuant in builds without assembly.
func FakeQuantAVX512(dst, src []float32, qs, shift, lo, hi, ds float32) int {
	return kernels.FakeQuant(dst, src, qs, shift, lo, hi, ds)
}

// FakeQuantTableAVX2 forwards to kernels.FakeQuantTable in builds without
// assembly.
func FakeQuantTableAVX2(dst, src []float32, qs, shift float32, lut *[256]float32) int {
	return kernels.FakeQuantTable(dst, src, qs, shift, lut)
}

// FakeQuantTableAVX512 forwards to kernels.FakeQuantTable in builds
// without assembly.
func FakeQuantTableAVX512(dst, src []float32, qs, shift float32, lut *[256]float32) int {
	return kernels.FakeQuantTable(dst, src, qs, shift, lut)
}
