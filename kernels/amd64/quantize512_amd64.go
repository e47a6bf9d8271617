//go:build gc && !purego

package amd64

// quantizeU8AVX512 computes kernels.QuantizeU8(x, inv, zp, u), the values
// after the last whole 16 under a mask. Requires AVX-512 F, len(u) >=
// len(x).
//
//go:noescape
func quantizeU8AVX512(x []float32, inv float32, zp int32, u []uint8)

// QuantizeU8AVX512 computes kernels.QuantizeU8(x, inv, zp, u) on zmm:
// sixteen values an instruction, narrowed to bytes by one vpmovdb, and no
// scalar tail (im2col runs of a few taps are most of the calls). Requires
// AVX-512 F.
func QuantizeU8AVX512(x []float32, inv float32, zp int32, u []uint8) {
	u = u[:len(x)] // Go checks the bounds the assembly trusts
	if len(x) > 0 {
		quantizeU8AVX512(x, inv, zp, u)
	}
}

// quantizeDivU8AVX512 computes kernels.QuantizeDivU8(x, scale, zp, u),
// the values after the last whole 16 under a mask. Requires AVX-512 F,
// len(u) >= len(x).
//
//go:noescape
func quantizeDivU8AVX512(x []float32, scale float32, zp int32, u []uint8)

// QuantizeDivU8AVX512 computes kernels.QuantizeDivU8(x, scale, zp, u) on
// zmm, DynamicQuantizeLinear's bytes: the division bounds it, and a zmm
// VDIVPS divides twice the values of the AVX2 kernel's. Requires AVX-512 F.
func QuantizeDivU8AVX512(x []float32, scale float32, zp int32, u []uint8) {
	u = u[:len(x)] // Go checks the bounds the assembly trusts
	if len(x) > 0 {
		quantizeDivU8AVX512(x, scale, zp, u)
	}
}

// minMaxAVX512 computes kernels.MinMax(x) for len(x) >= 1 (lo and hi
// only when finite), the values after the last whole 16 under a mask,
// reduced in registers. Requires AVX-512 F.
//
//go:noescape
func minMaxAVX512(x []float32) (lo, hi float32, finite bool)

// MinMaxAVX512 returns kernels.MinMax(x) on zmm: four chains of sixteen
// lanes, a masked tail and the lanes reduced in registers, where the AVX2
// twin hands its lanes to Go: a row of a few dozen values costs little
// more than its loads. The smallest and largest values are those of the
// reference whenever every value is finite (a zero's sign aside, which
// the row's range ignores: quant.RowParams widens it to hold 0).
// Requires AVX-512 F.
func MinMaxAVX512(x []float32) (lo, hi float32, finite bool) {
	if len(x) == 0 {
		return 0, 0, true
	}
	return minMaxAVX512(x)
}
