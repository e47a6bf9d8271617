//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

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
// zmm, DynamicQuantizeLinear's bytes (and a QDQ pair's grid's): a
// multiplication by 1/scale where it rounds as the division does, the
// division where a value lies near a midpoint. Requires AVX-512 F.
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

// minMaxRowsAVX512 computes kernels.MinMaxRows for k >= 1, the rows'
// last values under a mask. Requires AVX-512 F, BW.
//
//go:noescape
func minMaxRowsAVX512(a []float32, lda, m, k int, lo, hi []float32) (bad int)

// MinMaxRowsAVX512 computes kernels.MinMaxRows on zmm in one call for a
// block of rows, where MinMax took a call a row (a 3×3 int8 layer's
// per-row parameters take the range of each of its image's pixels, a
// row of 64 channels each on ResNet-50's first stage). Requires AVX-512
// F, BW.
func MinMaxRowsAVX512(a []float32, lda, m, k int, lo, hi []float32) int {
	kernels.CheckMinMaxRows(a, lda, m, k, lo, hi) // the bounds the assembly trusts
	switch {
	case m == 0:
		return -1
	case k == 0:
		return kernels.MinMaxRows(a, lda, m, k, lo, hi)
	}
	return minMaxRowsAVX512(a, lda, m, k, lo, hi)
}

// quantizeRangedRowsAVX512 quantizes m <= 16 rows of k >= 1 values
// whose ranges lo and hi hold (finite), as quant.RowParams and
// QuantizeU8 do: kernels.QuantizeRowsU8's bytes, zero points and scales.
// Requires AVX-512 F, BW.
//
//go:noescape
func quantizeRangedRowsAVX512(a []float32, lda, m, k int, lo, hi []float32, u []uint8, ldu int, zp []int32, scale []float32)

// QuantizeRowsU8AVX512 computes kernels.QuantizeRowsU8 on zmm a block
// of sixteen rows at a time: their ranges (minMaxRowsAVX512), then their
// parameters in one vector pass (two VDIVPS for sixteen rows) and their
// bytes (quantizeRangedRowsAVX512). Taking a row's range, parameters and
// bytes in one pass left each row waiting on the last one's divisions
// (48 rows of 256 values in the first-level cache: 1.58 µs, against
// 1.09-1.15 in blocks). Requires AVX-512 F, BW.
func QuantizeRowsU8AVX512(a []float32, lda, m, k int, u []uint8, ldu int, zp []int32, scale []float32) int {
	kernels.CheckQuantizeRows(a, lda, m, k, u, ldu, zp, scale) // the bounds the assembly trusts
	if k == 0 {
		return kernels.QuantizeRowsU8(a, lda, m, k, u, ldu, zp, scale)
	}
	var lo, hi [16]float32
	for r0 := 0; r0 < m; r0 += 16 {
		n := min(16, m-r0)
		x := a[r0*lda:]
		bad := minMaxRowsAVX512(x, lda, n, k, lo[:], hi[:])
		if bad >= 0 {
			n = bad
		}
		if n > 0 {
			quantizeRangedRowsAVX512(x, lda, n, k, lo[:], hi[:], u[r0*ldu:], ldu, zp[r0:], scale[r0:])
		}
		if bad >= 0 {
			return r0 + bad
		}
	}
	return -1
}

// quantizeRunsU8AVX512 computes kernels.QuantizeRunsU8 for at least one
// row and run of w >= 1 values, each run's last values under a mask.
// Requires AVX-512 F, BW.
//
//go:noescape
func quantizeRunsU8AVX512(x []float32, bases, offs []int, w int, inv []float32, zp []int32, u []uint8, ldu int)

// QuantizeRunsU8AVX512 computes kernels.QuantizeRunsU8 on zmm in one call
// for a block of im2col rows, where QuantizeU8 took a call a run (three a
// row of a 3×3 kernel, seven of ResNet-50's 7×7 first layer). Requires
// AVX-512 F, BW.
func QuantizeRunsU8AVX512(x []float32, bases, offs []int, w int, inv []float32, zp []int32, u []uint8, ldu int) {
	kernels.CheckQuantizeRuns(x, bases, offs, w, inv, zp, u, ldu) // the bounds the assembly trusts
	if len(bases) > 0 && len(offs) > 0 && w > 0 {
		quantizeRunsU8AVX512(x, bases, offs, w, inv, zp, u, ldu)
	}
}

// gatherRunsU8AVX512 computes kernels.GatherRunsU8 for at least one row
// and run of w >= 1 bytes, each run's last bytes under a mask. Requires
// AVX-512 F, BW.
//
//go:noescape
func gatherRunsU8AVX512(x []uint8, bases, offs []int, w int, u []uint8, ldu int)

// GatherRunsU8AVX512 computes kernels.GatherRunsU8 on zmm in one call for
// a block of im2col rows of bytes, where copy took a call a run (three a
// row of a 3×3 kernel, 9,408 for a 56×56 image: 40% of its rows' time,
// the loop around them another 25%). Requires AVX-512 F, BW.
func GatherRunsU8AVX512(x []uint8, bases, offs []int, w int, u []uint8, ldu int) {
	kernels.CheckGatherRuns(x, bases, offs, w, u, ldu) // the bounds the assembly trusts
	if len(bases) > 0 && len(offs) > 0 && w > 0 {
		gatherRunsU8AVX512(x, bases, offs, w, u, ldu)
	}
}
