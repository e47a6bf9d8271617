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
