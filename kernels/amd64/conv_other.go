//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// ConvTapsAVX2 forwards to kernels.ConvTaps in builds without assembly.
func ConvTapsAVX2(dst, src, w []float32, step int) { kernels.ConvTaps(dst, src, w, step) }

// TransposeColsAVX2 forwards to kernels.TransposeCols in builds without
// assembly.
func TransposeColsAVX2(dst, src []float32, rows, cols, r0, c0, c1 int) {
	kernels.TransposeCols(dst, src, rows, cols, r0, c0, c1)
}

// Transpose8AVX2 forwards to kernels.Transpose8 in builds without assembly.
func Transpose8AVX2(dst, src []float32, ldd, lds, n int) { kernels.Transpose8(dst, src, ldd, lds, n) }

// ConvFinishAVX2 forwards to kernels.ConvFinish in builds without assembly.
func ConvFinishAVX2(dst, bias, res []float32, lo, hi float32) {
	kernels.ConvFinish(dst, bias, res, lo, hi)
}

// ConvHardAVX2 forwards to kernels.ConvHard in builds without assembly.
func ConvHardAVX2(dst []float32, a, b, lo, hi, d float32, mode int) {
	kernels.ConvHard(dst, a, b, lo, hi, d, mode)
}

// ConvFinishAVX512 forwards to kernels.ConvFinish in builds without
// assembly.
func ConvFinishAVX512(dst, bias, res []float32, lo, hi float32) {
	kernels.ConvFinish(dst, bias, res, lo, hi)
}

// ConvHardAVX512 forwards to kernels.ConvHard in builds without assembly.
func ConvHardAVX512(dst []float32, a, b, lo, hi, d float32, mode int) {
	kernels.ConvHard(dst, a, b, lo, hi, d, mode)
}

// ScaleRowsAVX2 forwards to kernels.ScaleRows in builds without assembly.
func ScaleRowsAVX2(dst, s []float32) { kernels.ScaleRows(dst, s) }

// PoolSumAVX2 forwards to kernels.PoolSum in builds without assembly.
func PoolSumAVX2(x []float32) float64 { return kernels.PoolSum(x) }

// ColumnPoolSumsAVX512 forwards to kernels.ColumnPoolSums in builds
// without assembly.
func ColumnPoolSumsAVX512(dst []float64, x []float32, rows, ld int) {
	kernels.ColumnPoolSums(dst, x, rows, ld)
}

// ColumnPoolSumsAVX2 forwards to kernels.ColumnPoolSums in builds without
// assembly.
func ColumnPoolSumsAVX2(dst []float64, x []float32, rows, ld int) {
	kernels.ColumnPoolSums(dst, x, rows, ld)
}
