//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// fakeQuantAVX2 computes kernels.FakeQuant(dst, src, qs, shift, lo, hi,
// ds) in blocks of 32 and 8, returning the start of the first block that
// holds a value that is not finite (len(src) if none) with nothing of it
// written. Requires AVX2, len(dst) == len(src) and a multiple of 8.
//
//go:noescape
func fakeQuantAVX2(dst, src []float32, qs, shift, lo, hi, ds float32) int

// fakeQuantAVX512 is fakeQuantAVX2 in zmm registers, in blocks of 64 and
// 16. Requires AVX-512 F, len(dst) == len(src) and a multiple of 16.
//
//go:noescape
func fakeQuantAVX512(dst, src []float32, qs, shift, lo, hi, ds float32) int

// fakeQuantTableAVX2 computes kernels.FakeQuantTable(dst, src, qs,
// shift, lut) in blocks of 32 and 8 (the look-ups one at a time),
// returning as fakeQuantAVX2 does. Requires AVX2, len(dst) == len(src)
// and a multiple of 8.
//
//go:noescape
func fakeQuantTableAVX2(dst, src []float32, qs, shift float32, lut *[256]float32) int

// fakeQuantTableAVX512 computes kernels.FakeQuantTable(dst, src, qs,
// shift, lut) 16 values at a time, lut held in registers and looked up
// by permutations, returning as fakeQuantAVX512 does. Requires AVX-512 F,
// len(dst) == len(src) and a multiple of 16, and shift within 256 of
// −kernels.FakeQuantMagic (a zero point's offset from its type's least).
//
//go:noescape
func fakeQuantTableAVX512(dst, src []float32, qs, shift float32, lut *[256]float32) int

// FakeQuantAVX2 computes kernels.FakeQuant(dst, src, qs, shift, lo, hi,
// ds): the same bits in dst and the same count. Requires AVX2.
func FakeQuantAVX2(dst, src []float32, qs, shift, lo, hi, ds float32) int {
	return fakeQuantBlocks(fakeQuantAVX2, 8, dst, src, qs, shift, lo, hi, ds)
}

// FakeQuantAVX512 computes kernels.FakeQuant(dst, src, qs, shift, lo, hi,
// ds): the same bits in dst and the same count. Requires AVX-512 F.
func FakeQuantAVX512(dst, src []float32, qs, shift, lo, hi, ds float32) int {
	return fakeQuantBlocks(fakeQuantAVX512, 16, dst, src, qs, shift, lo, hi, ds)
}

// fakeQuantBlocks runs kernel, which takes whole blocks of block values
// (a power of two), on src's whole blocks, and the reference on the block
// it stopped at, up to its first value that is not finite, or on the
// tail: kernels.FakeQuant's bits and count.
func fakeQuantBlocks(kernel func(dst, src []float32, qs, shift, lo, hi, ds float32) int, block int,
	dst, src []float32, qs, shift, lo, hi, ds float32) int {
	dst = dst[:len(src)] // Go checks the bounds the assembly trusts
	n := len(src) &^ (block - 1)
	if n > 0 {
		n = kernel(dst[:n], src[:n], qs, shift, lo, hi, ds)
	}
	return n + kernels.FakeQuant(dst[n:], src[n:], qs, shift, lo, hi, ds)
}

// FakeQuantTableAVX2 computes kernels.FakeQuantTable(dst, src, qs,
// shift, lut): the same values in dst and the same count. Requires AVX2.
func FakeQuantTableAVX2(dst, src []float32, qs, shift float32, lut *[256]float32) int {
	return fakeQuantTableBlocks(fakeQuantTableAVX2, 8, dst, src, qs, shift, lut)
}

// FakeQuantTableAVX512 computes kernels.FakeQuantTable(dst, src, qs,
// shift, lut): the same values in dst and the same count. Requires
// AVX-512 F. A shift further than 256 from −kernels.FakeQuantMagic
// (never a pair's) runs on FakeQuantTableAVX2, whose division holds for
// any.
func FakeQuantTableAVX512(dst, src []float32, qs, shift float32, lut *[256]float32) int {
	if d := shift + kernels.FakeQuantMagic; !(d >= -256 && d <= 256) {
		return FakeQuantTableAVX2(dst, src, qs, shift, lut)
	}
	return fakeQuantTableBlocks(fakeQuantTableAVX512, 16, dst, src, qs, shift, lut)
}

// fakeQuantTableBlocks is fakeQuantBlocks for the look-up kernels.
func fakeQuantTableBlocks(kernel func(dst, src []float32, qs, shift float32, lut *[256]float32) int, block int,
	dst, src []float32, qs, shift float32, lut *[256]float32) int {
	dst = dst[:len(src)] // Go checks the bounds the assembly trusts
	_ = lut[0]           // and that lut is not nil
	n := len(src) &^ (block - 1)
	if n > 0 {
		n = kernel(dst[:n], src[:n], qs, shift, lut)
	}
	return n + kernels.FakeQuantTable(dst[n:], src[n:], qs, shift, lut)
}
