//go:build !amd64 || !gc || purego

package model

// convTapsSIMD reports whether this build has a vector convTaps.
const convTapsSIMD = false

func convTapsFast(dst, src, w []float32, step int) { convTapsGo(dst, src, w, step) }

func convTransposeFast(dst, src []float32, rows, cols, r0, c0, c1 int) {
	convTransposeCols(dst, src, rows, cols, r0, c0, c1)
}

func convTranspose8Strided(dst, src []float32, ldd, lds, n int) {
	for i := 0; i < 8; i++ {
		for j, v := range src[i*lds : i*lds+n] {
			dst[j*ldd+i] = v
		}
	}
}

func convFinishFast(dst, bias, res []float32, lo, hi float32) { convFinishGo(dst, bias, res, lo, hi) }

func convHardFast(dst []float32, a, b, lo, hi, d float32, mode int) {
	convHardGo(dst, a, b, lo, hi, d, mode)
}

func convScaleRowsFast(dst, s []float32) { convScaleRowsGo(dst, s) }

func poolSumFast(x []float32) float64 { return poolSumGo(x) }
