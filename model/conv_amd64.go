//go:build gc && !purego

package model

// convTapsAVX2 adds Σ_j w[j]·src[i+j·step] to dst[i] for i < len(dst),
// with fused multiply-adds: convTapsGo's twin up to rounding. Requires
// AVX2 and FMA, len(w) >= 1 and len(src) >= len(dst)+(len(w)−1)·step.
//
//go:noescape
func convTapsAVX2(dst, src, w []float32, step int)

// convTapsSIMD reports whether this build has convTapsAVX2.
const convTapsSIMD = true

// convTapsFast is convTapsGo on the vector unit. The caller checks the CPU
// (convVectorOK).
func convTapsFast(dst, src, w []float32, step int) {
	if len(dst) == 0 || len(w) == 0 {
		return
	}
	src = src[:len(dst)+(len(w)-1)*step] // Go checks the bounds the assembly trusts
	convTapsAVX2(dst, src, w, step)
}

// convTranspose8AVX2 transposes an 8-row strip of src (row stride cols)
// into dst (row stride rows): dst[j·rows + i] = src[i·cols + j] for i < 8,
// j < n. It is convTransposeCols's twin for whole 8×8 blocks. Requires
// AVX2, n a multiple of 8, len(src) >= 7·cols+n and len(dst) >=
// (n−1)·rows+8.
//
//go:noescape
func convTranspose8AVX2(dst, src []float32, rows, cols, n int)

// convTransposeFast is convTransposeCols with whole 8×8 blocks in
// registers. The caller checks the CPU (convVectorOK).
func convTransposeFast(dst, src []float32, rows, cols, r0, c0, c1 int) {
	n := (c1 - c0) &^ 7
	r := r0
	if n > 0 {
		for ; r+8 <= rows; r += 8 {
			// Go checks the bounds the assembly trusts.
			s := src[r*cols+c0 : (r+7)*cols+c0+n]
			d := dst[c0*rows+r : (c0+n-1)*rows+r+8]
			convTranspose8AVX2(d, s, rows, cols, n)
		}
	}
	convTransposeCols(dst, src, rows, cols, r, c0, c0+n)  // the last rows
	convTransposeCols(dst, src, rows, cols, r0, c0+n, c1) // the last columns
}

// convTranspose8Strided writes dst[j·ldd + i] = src[i·lds + j] for i < 8,
// j < n (a multiple of 8), on the vector unit. The caller checks the CPU
// (convVectorOK) and the bounds.
func convTranspose8Strided(dst, src []float32, ldd, lds, n int) {
	convTranspose8AVX2(dst, src, ldd, lds, n)
}

// convFinishAVX2 is convFinishGo on the vector unit, bit for bit.
// Requires AVX2; bias and res are empty or as long as dst.
//
//go:noescape
func convFinishAVX2(dst, bias, res []float32, lo, hi float32)

// convFinishFast is convFinishGo on the vector unit. The caller checks the
// CPU (convVectorOK).
func convFinishFast(dst, bias, res []float32, lo, hi float32) {
	// Go checks the bounds the assembly trusts.
	if bias != nil {
		bias = bias[:len(dst)]
	}
	if res != nil {
		res = res[:len(dst)]
	}
	convFinishAVX2(dst, bias, res, lo, hi)
}

// convHardAVX2 is convHardGo on the vector unit, bit for bit. Requires
// AVX2.
//
//go:noescape
func convHardAVX2(dst []float32, a, b, lo, hi, d float32, mode int)

// convHardFast is convHardGo on the vector unit. The caller checks the CPU
// (convVectorOK).
func convHardFast(dst []float32, a, b, lo, hi, d float32, mode int) {
	convHardAVX2(dst, a, b, lo, hi, d, mode)
}

// convScaleRowsAVX2 is convScaleRowsGo on the vector unit, bit for bit.
// Requires AVX2, len(s) >= 1 and len(dst) a multiple of len(s).
//
//go:noescape
func convScaleRowsAVX2(dst, s []float32)

// convScaleRowsFast is convScaleRowsGo on the vector unit. The caller
// checks the CPU (convVectorOK).
func convScaleRowsFast(dst, s []float32) {
	if len(s) == 0 {
		return
	}
	convScaleRowsAVX2(dst[:len(dst)/len(s)*len(s)], s) // whole rows only
}

// poolSumAVX2 sums x (a multiple of 16 values) into poolSumGo's four
// lanes. Requires AVX2.
//
//go:noescape
func poolSumAVX2(x []float32, a *[4]float64)

// poolSumFast is poolSumGo on the vector unit, bit for bit. The caller
// checks the CPU (convVectorOK).
func poolSumFast(x []float32) float64 {
	n := len(x) &^ 15
	var a [4]float64
	poolSumAVX2(x[:n], &a)
	return poolSumTail(&a, x[n:])
}
