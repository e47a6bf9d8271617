//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// columnPoolSums8AVX512 is kernels.ColumnPoolSums for eight channels.
// Requires AVX-512 F.
//
//go:noescape
func columnPoolSums8AVX512(dst *[8]float64, x *float32, rows, ld int)

// columnPoolSums4AVX2 is kernels.ColumnPoolSums for four channels.
// Requires AVX2.
//
//go:noescape
func columnPoolSums4AVX2(dst *[4]float64, x *float32, rows, ld int)

// ColumnPoolSumsAVX512 computes kernels.ColumnPoolSums(dst, x, rows, ld)
// eight channels at a time, then four, the last few in Go. Requires
// AVX-512 F and AVX2.
func ColumnPoolSumsAVX512(dst []float64, x []float32, rows, ld int) {
	if rows <= 0 || len(dst) == 0 {
		kernels.ColumnPoolSums(dst, x, rows, ld)
		return
	}
	_ = x[(rows-1)*ld+len(dst)-1]
	j := 0
	for ; j+8 <= len(dst); j += 8 {
		columnPoolSums8AVX512((*[8]float64)(dst[j:]), &x[j], rows, ld)
	}
	ColumnPoolSumsAVX2(dst[j:], x[j:], rows, ld)
}

// ColumnPoolSumsAVX2 computes kernels.ColumnPoolSums(dst, x, rows, ld)
// four channels at a time, the last few in Go. Requires AVX2.
func ColumnPoolSumsAVX2(dst []float64, x []float32, rows, ld int) {
	if rows <= 0 || len(dst) == 0 {
		kernels.ColumnPoolSums(dst, x, rows, ld)
		return
	}
	_ = x[(rows-1)*ld+len(dst)-1]
	j := 0
	for ; j+4 <= len(dst); j += 4 {
		columnPoolSums4AVX2((*[4]float64)(dst[j:]), &x[j], rows, ld)
	}
	if j < len(dst) {
		kernels.ColumnPoolSums(dst[j:], x[j:], rows, ld)
	}
}
