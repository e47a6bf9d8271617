//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// QuantizeU8AVX512 forwards to kernels.QuantizeU8 in builds without
// assembly.
func QuantizeU8AVX512(x []float32, inv float32, zp int32, u []uint8) {
	kernels.QuantizeU8(x, inv, zp, u)
}

// MinMaxAVX512 forwards to kernels.MinMax in builds without assembly.
func MinMaxAVX512(x []float32) (lo, hi float32, finite bool) { return kernels.MinMax(x) }

// QuantizeDivU8AVX512 forwards to kernels.QuantizeDivU8 in builds without
// assembly.
func QuantizeDivU8AVX512(x []float32, scale float32, zp int32, u []uint8) {
	kernels.QuantizeDivU8(x, scale, zp, u)
}

// QuantizeRowsU8AVX512 forwards to kernels.QuantizeRowsU8 in builds
// without assembly.
func QuantizeRowsU8AVX512(a []float32, lda, m, k int, u []uint8, ldu int, zp []int32, scale []float32) int {
	return kernels.QuantizeRowsU8(a, lda, m, k, u, ldu, zp, scale)
}

// QuantizeRunsU8AVX512 forwards to kernels.QuantizeRunsU8 in builds
// without assembly.
func QuantizeRunsU8AVX512(x []float32, bases, offs []int, w int, inv []float32, zp []int32, u []uint8, ldu int) {
	kernels.QuantizeRunsU8(x, bases, offs, w, inv, zp, u, ldu)
}

// GatherRunsU8AVX512 forwards to kernels.GatherRunsU8 in builds without
// assembly.
func GatherRunsU8AVX512(x []uint8, bases, offs []int, w int, u []uint8, ldu int) {
	kernels.GatherRunsU8(x, bases, offs, w, u, ldu)
}

// MinMaxRowsAVX512 forwards to kernels.MinMaxRows in builds without
// assembly.
func MinMaxRowsAVX512(a []float32, lda, m, k int, lo, hi []float32) int {
	return kernels.MinMaxRows(a, lda, m, k, lo, hi)
}
