//go:build gc && !purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// columnPoolSums2NEON is kernels.ColumnPoolSums for two channels.
// Requires ASIMD.
//
//go:noescape
func columnPoolSums2NEON(dst *[2]float64, x *float32, rows, ld int)

// ColumnPoolSumsNEON computes kernels.ColumnPoolSums(dst, x, rows, ld)
// two channels at a time, an odd last one in Go. Requires ASIMD.
func ColumnPoolSumsNEON(dst []float64, x []float32, rows, ld int) {
	if rows <= 0 || len(dst) == 0 {
		kernels.ColumnPoolSums(dst, x, rows, ld)
		return
	}
	_ = x[(rows-1)*ld+len(dst)-1]
	j := 0
	for ; j+2 <= len(dst); j += 2 {
		columnPoolSums2NEON((*[2]float64)(dst[j:]), &x[j], rows, ld)
	}
	if j < len(dst) {
		kernels.ColumnPoolSums(dst[j:], x[j:], rows, ld)
	}
}
