//go:build gc && !purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// fakeQuantNEON computes kernels.FakeQuant(dst, src, qs, shift, lo, hi,
// ds) in blocks of 8, returning the start of the first block that holds
// a value that is not finite (len(src) if none) with nothing of it
// written. Requires ASIMD, len(dst) == len(src) and a multiple of 8.
//
//go:noescape
func fakeQuantNEON(dst, src []float32, qs, shift, lo, hi, ds float32) int

// fakeQuantTableNEON computes kernels.FakeQuantTable(dst, src, qs,
// shift, lut) in blocks of 8, returning as fakeQuantNEON does. Requires
// ASIMD, len(dst) == len(src) and a multiple of 8.
//
//go:noescape
func fakeQuantTableNEON(dst, src []float32, qs, shift float32, lut *[256]float32) int

// FakeQuantNEON computes kernels.FakeQuant(dst, src, qs, shift, lo, hi,
// ds): the same bits in dst and the same count. Requires ASIMD.
func FakeQuantNEON(dst, src []float32, qs, shift, lo, hi, ds float32) int {
	dst = dst[:len(src)] // Go checks the bounds the assembly trusts
	n := len(src) &^ 7
	if n > 0 {
		// The reference finishes the block the assembly stopped at,
		// up to its first value that is not finite, or the tail.
		n = fakeQuantNEON(dst[:n], src[:n], qs, shift, lo, hi, ds)
	}
	return n + kernels.FakeQuant(dst[n:], src[n:], qs, shift, lo, hi, ds)
}

// FakeQuantTableNEON computes kernels.FakeQuantTable(dst, src, qs,
// shift, lut): the same values in dst and the same count. Requires
// ASIMD.
func FakeQuantTableNEON(dst, src []float32, qs, shift float32, lut *[256]float32) int {
	dst = dst[:len(src)] // Go checks the bounds the assembly trusts
	_ = lut[0]           // and that lut is not nil
	n := len(src) &^ 7
	if n > 0 {
		n = fakeQuantTableNEON(dst[:n], src[:n], qs, shift, lut)
	}
	return n + kernels.FakeQuantTable(dst[n:], src[n:], qs, shift, lut)
}
