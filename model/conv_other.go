//go:build !amd64 || !gc || purego

package model

// convTapsSIMD reports whether this build has a vector convTaps.
const convTapsSIMD = false

func convTapsFast(dst, src, w []float32, step int) { convTapsGo(dst, src, w, step) }

func convTransposeFast(dst, src []float32, rows, cols, r0, c0, c1 int) {
	convTransposeCols(dst, src, rows, cols, r0, c0, c1)
}
