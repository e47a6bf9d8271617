//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// MinMaxAVX2 returns kernels.MinMax(x). Requires AVX2.
func MinMaxAVX2(x []float32) (lo, hi float32, finite bool) {
	n := len(x) &^ 7
	if n == 0 {
		return kernels.MinMax(x)
	}
	var lanes [24]float32
	minMax8AVX2(x[:n], &lanes)
	lo, hi = lanes[0], lanes[8]
	var check float32
	for i := 0; i < 8; i++ {
		lo = min(lo, lanes[i])
		hi = max(hi, lanes[8+i])
		check += lanes[16+i]
	}
	finite = check == 0
	if n < len(x) {
		tlo, thi, tfin := kernels.MinMax(x[n:])
		lo, hi, finite = min(lo, tlo), max(hi, thi), finite && tfin
	}
	return lo, hi, finite
}

// QuantizeU8AVX2 computes kernels.QuantizeU8(x, inv, zp, u). Requires AVX2.
func QuantizeU8AVX2(x []float32, inv float32, zp int32, u []uint8) {
	quantizeBytes(quantizeU8AVX2, kernels.QuantizeU8, x, inv, zp, u)
}

// QuantizeDivU8AVX2 computes kernels.QuantizeDivU8(x, scale, zp, u).
// Requires AVX2.
func QuantizeDivU8AVX2(x []float32, scale float32, zp int32, u []uint8) {
	quantizeBytes(quantizeDivU8AVX2, kernels.QuantizeDivU8, x, scale, zp, u)
}

// quantizeBytes runs a byte quantizer's kernel on the whole eights of x
// and its reference ref on the rest (the same bits).
func quantizeBytes(kernel, ref func(x []float32, f float32, zp int32, u []uint8), x []float32, f float32, zp int32, u []uint8) {
	u = u[:len(x)]
	n := len(x) &^ 7
	if n > 0 {
		kernel(x[:n], f, zp, u[:n])
	}
	ref(x[n:], f, zp, u[n:])
}

// QTile4AVX2 computes kernels.QTile(4, u, ldu, bp, kq, acc). Requires AVX2.
func QTile4AVX2(u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	if kq == 0 {
		clear(acc[:64])
		return
	}
	u = u[:3*ldu+4*kq]
	qTile4AVX2(u, ldu, bp[:64*kq], kq, acc[:64])
}

// QTile1AVX2 computes kernels.QTile(1, u, 0, bp, kq, acc). Requires AVX2.
func QTile1AVX2(u []uint8, bp []int8, kq int, acc []int32) {
	qTile1AVX2(u[:4*kq], bp[:64*kq], kq, acc[:16])
}

// FTile6AVX2 computes kernels.FTile(6, a, lda, bp, k, c, ldc) with fused
// multiply-adds, starting from c's values when load is set. Requires AVX2
// and FMA.
func FTile6AVX2(a []float32, lda int, bp []float32, k int, c []float32, ldc int, load bool) {
	if lda < 0 {
		panic("amd64: FTile6AVX2: lda < 0")
	}
	fTile6AVX2(a[:5*lda+k], lda, bp[:16*k], k, c[:5*ldc+16], ldc, b2i(load))
}

// FTile1AVX2 computes kernels.FTile(1, a, 0, bp, k, c, 0) with fused
// multiply-adds, starting from c's values when load is set. Requires AVX2
// and FMA.
func FTile1AVX2(a []float32, bp []float32, k int, c []float32, load bool) {
	fTile1AVX2(a[:k], bp[:16*k], k, c[:16], b2i(load))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// QBlockAVX2 computes kernels.QBlockRef(q) on the AVX2 tiles (4 rows × 1
// panel, up to 32 rows a call); per-channel blocks run their 4-row tiles
// with the epilogue in one assembly loop. Requires AVX2.
func QBlockAVX2(q *kernels.QBlock) {
	q.Check(32, 1)
	if tiles := q.Rows / 4; tiles > 0 && q.Flags&^kernels.QCached == kernels.QOutChannel {
		QPanelAVX2(q.U, q.LDU, tiles, q.B, q.KQ, q.Off, q.SA, q.Colsum, q.SB, q.C, q.LDC)
		if q.Rows%4 != 0 {
			// One more 4-row tile ending at the last row, overlapping rows
			// already stored: a 1-row tile streams the panel as often as
			// a 4-row one, and the overlapped rows are recomputed to the
			// same bits (nothing accumulates into C with these flags).
			r0 := q.Rows - 4
			QPanelAVX2(q.U[r0*q.LDU:], q.LDU, 1, q.B, q.KQ, q.Off[r0:], q.SA[r0:], q.Colsum, q.SB, q.C[r0*q.LDC:], q.LDC)
		}
		return
	}
	kernels.QBlockTiles(q, QTile4AVX2, QTile1AVX2)
}

// FBlockAVX2 computes kernels.FBlockRef(f) with fused multiply-adds on
// the 6-row and 1-row AVX2 tiles, up to 24 rows a call. Requires AVX2 and
// FMA.
func FBlockAVX2(f *kernels.FBlock) {
	f.Check(24, 1)
	kernels.FBlockTiles(f, 6, FTile6AVX2, FTile1AVX2)
}

// QBlockAVX512VNNI computes kernels.QBlockRef(q) with zmm vpdpbusd, up to
// 8 rows × 3 panels. Requires AVX512F, AVX512BW and AVX512VNNI.
//
// It takes QFinish: a tile of eight rows finishes its outputs in
// registers; shorter tiles finish theirs on ConvFinishAVX512 after the
// assembly has written them (the same operations, the same bits).
func QBlockAVX512VNNI(q *kernels.QBlock) {
	q.Check(8, 3)
	if q.Flags&kernels.QFinish == 0 || q.Rows == 8 {
		qBlockVNNI512(q)
		return
	}
	// A shorter tile writes its sums before finishing them: a residual
	// that is C itself (QFinish) is kept aside first.
	cols := q.NP * kernels.PanelN
	res, ldr := q.Res, q.LDR
	var kept [7 * 3 * kernels.PanelN]float32
	if len(res) > 0 && &res[0] == &q.C[0] {
		for r := range q.Rows {
			copy(kept[r*cols:(r+1)*cols], res[r*ldr:])
		}
		res, ldr = kept[:], cols
	}
	q.Flags &^= kernels.QFinish
	qBlockVNNI512(q)
	q.Flags |= kernels.QFinish
	kernels.FinishRows(ConvFinishAVX512, q.C, q.LDC, q.Rows, cols, q.Bias, res, ldr, q.Lo, q.Hi)
}

// FBlockAVX512 computes kernels.FBlockRef(f) with zmm fused multiply-adds,
// up to 8 rows × 3 panels. Requires AVX512F.
//
// It takes FFinish: a tile of eight rows finishes its sums in registers;
// shorter tiles finish theirs on ConvFinishAVX512 after the assembly has
// written them (the same operations, the same bits).
func FBlockAVX512(f *kernels.FBlock) {
	f.Check(8, 3)
	if f.Flags&kernels.FFinish == 0 || f.Rows == 8 {
		fBlockAVX512(f)
		return
	}
	f.Flags &^= kernels.FFinish
	fBlockAVX512(f)
	f.Flags |= kernels.FFinish
	f.FinishRows(ConvFinishAVX512)
}

// QBlockAVXVNNI computes kernels.QBlockRef(q) with ymm vpdpbusd (VEX,
// AVX-VNNI), up to 6 rows × 1 panel. Requires AVX2 and AVX-VNNI.
func QBlockAVXVNNI(q *kernels.QBlock) {
	q.Check(6, 1)
	qBlockAVXVNNI(q)
}

// XCR0 returns the register state the OS saves (XGETBV 0), or 0 when the
// CPU lacks OSXSAVE (osxsave from cpuid leaf 1).
func XCR0(osxsave bool) uint64 {
	if !osxsave {
		return 0
	}
	return xgetbv0()
}

// QPanelAVX2 computes kernels.QPanel(u, ldu, tiles, bp, kq, off, sa,
// colsum, sb, c, ldc). Requires AVX2.
func QPanelAVX2(u []uint8, ldu int, tiles int, bp []int8, kq int, off []int32, sa []float32, colsum []int32, sb []float32, c []float32, ldc int) {
	if tiles <= 0 {
		return
	}
	rows := 4 * tiles
	qPanelAVX2(u[:(rows-1)*ldu+4*kq], ldu, tiles, bp[:64*kq], kq, off[:rows], sa[:rows], colsum[:16], sb[:16], c[:(rows-1)*ldc+16], ldc)
}

// ConvTapsAVX2 computes kernels.ConvTaps(dst, src, w, step) with fused
// multiply-adds: the reference's sums within the rounding ConvTaps states.
// Requires AVX2 and FMA.
func ConvTapsAVX2(dst, src, w []float32, step int) {
	if len(dst) == 0 || len(w) == 0 {
		return
	}
	if step < 0 {
		panic("amd64: ConvTapsAVX2: negative step")
	}
	src = src[:len(dst)+(len(w)-1)*step] // Go checks the bounds the assembly trusts
	convTapsAVX2(dst, src, w, step)
}

// TransposeColsAVX2 computes kernels.TransposeCols(dst, src, rows, cols,
// r0, c0, c1) with whole 8×8 blocks in registers. Requires AVX2.
func TransposeColsAVX2(dst, src []float32, rows, cols, r0, c0, c1 int) {
	n := max(c1-c0, 0) &^ 7
	r := r0
	if n > 0 {
		if c0 < 0 || c0+n > cols {
			panic("amd64: TransposeColsAVX2: columns out of range")
		}
		for ; r+8 <= rows; r += 8 {
			// Go checks the bounds the assembly trusts.
			s := src[r*cols+c0 : (r+7)*cols+c0+n]
			d := dst[c0*rows+r : (c0+n-1)*rows+r+8]
			transpose8AVX2(d, s, rows, cols, n)
		}
	}
	kernels.TransposeCols(dst, src, rows, cols, r, c0, c0+n)  // the last rows
	kernels.TransposeCols(dst, src, rows, cols, r0, c0+n, c1) // the last columns
}

// Transpose8AVX2 computes kernels.Transpose8(dst, src, ldd, lds, n), whole
// 8×8 blocks in registers. Requires AVX2.
func Transpose8AVX2(dst, src []float32, ldd, lds, n int) {
	n8 := n &^ 7
	if n8 > 0 {
		if ldd < 8 || lds < 0 {
			panic("amd64: Transpose8AVX2: ldd < 8 or lds < 0")
		}
		// Go checks the bounds the assembly trusts.
		transpose8AVX2(dst[:(n8-1)*ldd+8], src[:7*lds+n8], ldd, lds, n8)
	}
	if n8 < n {
		kernels.Transpose8(dst[n8*ldd:], src[n8:], ldd, lds, n-n8)
	}
}

// ConvFinishAVX2 computes kernels.ConvFinish(dst, bias, res, lo, hi).
// Requires AVX2.
func ConvFinishAVX2(dst, bias, res []float32, lo, hi float32) {
	bias, res = finishOperands(dst, bias, res)
	convFinishAVX2(dst, bias, res, lo, hi)
}

// ConvFinishAVX512 computes kernels.ConvFinish(dst, bias, res, lo, hi),
// 16 values a register. Requires AVX-512 F.
func ConvFinishAVX512(dst, bias, res []float32, lo, hi float32) {
	bias, res = finishOperands(dst, bias, res)
	convFinishAVX512(dst, bias, res, lo, hi)
}

// finishOperands checks in Go the bounds the assembly trusts.
func finishOperands(dst, bias, res []float32) ([]float32, []float32) {
	if bias != nil {
		bias = bias[:len(dst)]
	}
	if res != nil {
		res = res[:len(dst)]
	}
	return bias, res
}

// ConvHardAVX2 computes kernels.ConvHard(dst, a, b, lo, hi, d, mode).
// Requires AVX2.
func ConvHardAVX2(dst []float32, a, b, lo, hi, d float32, mode int) {
	if uint(mode) > kernels.HardXTMul {
		panic("amd64: ConvHardAVX2: unknown mode")
	}
	convHardAVX2(dst, a, b, lo, hi, d, mode)
}

// ConvHardAVX512 computes kernels.ConvHard(dst, a, b, lo, hi, d, mode),
// 16 values a register. Requires AVX-512 F.
func ConvHardAVX512(dst []float32, a, b, lo, hi, d float32, mode int) {
	if uint(mode) > kernels.HardXTMul {
		panic("amd64: ConvHardAVX512: unknown mode")
	}
	convHardAVX512(dst, a, b, lo, hi, d, mode)
}

// ScaleRowsAVX2 computes kernels.ScaleRows(dst, s). Requires AVX2.
func ScaleRowsAVX2(dst, s []float32) {
	if len(s) == 0 {
		return
	}
	scaleRowsAVX2(dst[:len(dst)/len(s)*len(s)], s) // whole rows only
}

// PoolSumAVX2 computes kernels.PoolSum(x). Requires AVX2.
func PoolSumAVX2(x []float32) float64 {
	n := len(x) &^ 15
	var a [4]float64
	poolSumAVX2(x[:n], &a)
	return kernels.PoolSumTail(&a, x[n:])
}
