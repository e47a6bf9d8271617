//go:build gc && !purego

package amd64

// convTapsAVX2 computes kernels.ConvTaps(dst, src, w, step) with fused
// multiply-adds. Requires AVX2 and FMA, len(w) >= 1, step >= 0 and
// len(src) >= len(dst)+(len(w)−1)·step.
//
//go:noescape
func convTapsAVX2(dst, src, w []float32, step int)

// transpose8AVX2 computes kernels.Transpose8(dst, src, ldd, lds, n) in
// 8×8 blocks. Requires AVX2, n a positive multiple of 8, ldd >= 8, lds >=
// 0, len(src) >= 7·lds+n and len(dst) >= (n−1)·ldd+8.
//
//go:noescape
func transpose8AVX2(dst, src []float32, ldd, lds, n int)

// convFinishAVX2 computes kernels.ConvFinish(dst, bias, res, lo, hi)
// (bias and res empty for nil). Requires AVX2; bias and res empty or as
// long as dst.
//
//go:noescape
func convFinishAVX2(dst, bias, res []float32, lo, hi float32)

// convHardAVX2 computes kernels.ConvHard(dst, a, b, lo, hi, d, mode).
// Requires AVX2 and 0 <= mode <= kernels.HardXTMul.
//
//go:noescape
func convHardAVX2(dst []float32, a, b, lo, hi, d float32, mode int)

// convFinishAVX512 is convFinishAVX2 on 16 values a register, the tail
// under a mask. Requires AVX-512 F.
//
//go:noescape
func convFinishAVX512(dst, bias, res []float32, lo, hi float32)

// convHardAVX512 is convHardAVX2 on 16 values a register, the tail under
// a mask. Requires AVX-512 F and 0 <= mode <= kernels.HardXTMul.
//
//go:noescape
func convHardAVX512(dst []float32, a, b, lo, hi, d float32, mode int)

// scaleRowsAVX2 computes kernels.ScaleRows(dst, s). Requires AVX2,
// len(s) >= 1 and len(dst) a multiple of len(s).
//
//go:noescape
func scaleRowsAVX2(dst, s []float32)

// poolSumAVX2 sums x into kernels.PoolSum's four lanes a. Requires AVX2
// and len(x) a multiple of 16.
//
//go:noescape
func poolSumAVX2(x []float32, a *[4]float64)
