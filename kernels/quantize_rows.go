package kernels

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/quant"
)

// QuantizeRowsU8 quantizes m rows of k values (a, row stride lda) each on
// its own range, as a row-by-row loop of MinMax, quant.RowParams and
// QuantizeU8 does: row i's bytes go to u[i*ldu:], zeros from k up to
// ldu, its zero point and scale to zp[i] and scale[i]. It returns the
// first row holding a NaN or an infinity, whose row and those after it
// are left unwritten, or -1 when every row is finite.
func QuantizeRowsU8(a []float32, lda, m, k int, u []uint8, ldu int, zp []int32, scale []float32) int {
	return QuantizeRowsWith(MinMax, QuantizeU8, a, lda, m, k, u, ldu, zp, scale)
}

// QuantizeRowsWith is QuantizeRowsU8 on the given MinMax and QuantizeU8
// (a table's own, where it has no kernel for whole blocks of rows).
func QuantizeRowsWith(minMax func([]float32) (float32, float32, bool), quantize func([]float32, float32, int32, []uint8),
	a []float32, lda, m, k int, u []uint8, ldu int, zp []int32, scale []float32) int {
	CheckQuantizeRows(a, lda, m, k, u, ldu, zp, scale)
	for i := range m {
		row := a[i*lda : i*lda+k]
		lo, hi, finite := minMax(row)
		if !finite {
			return i
		}
		s, inv, z := quant.RowParams(lo, hi)
		ui := u[i*ldu : (i+1)*ldu]
		quantize(row, inv, z, ui)
		clear(ui[k:])
		zp[i], scale[i] = z, s
	}
	return -1
}

// MinMaxRows takes the ranges of m rows of k values (a, row stride lda),
// as MinMax takes each: row i's into lo[i] and hi[i]. It returns the
// first row holding a NaN or an infinity, whose range and those after it
// are left unwritten, or -1 when every row is finite.
func MinMaxRows(a []float32, lda, m, k int, lo, hi []float32) int {
	return MinMaxRowsWith(MinMax, a, lda, m, k, lo, hi)
}

// MinMaxRowsWith is MinMaxRows on the given MinMax (a table's own, where
// it has no kernel for whole blocks of rows).
func MinMaxRowsWith(minMax func([]float32) (float32, float32, bool), a []float32, lda, m, k int, lo, hi []float32) int {
	CheckMinMaxRows(a, lda, m, k, lo, hi)
	for i := range m {
		l, h, finite := minMax(a[i*lda : i*lda+k])
		if !finite {
			return i
		}
		lo[i], hi[i] = l, h
	}
	return -1
}

// CheckMinMaxRows panics unless MinMaxRows's operands hold m rows: a m
// rows of k values at stride lda, lo and hi m values each.
func CheckMinMaxRows(a []float32, lda, m, k int, lo, hi []float32) {
	if m < 0 || k < 0 || m > 0 && (lda < k || len(a) < (m-1)*lda+k || len(lo) < m || len(hi) < m) {
		panic(fmt.Sprintf("kernels: MinMaxRows of %d rows of %d values (stride %d) from %d values into %d and %d", m, k, lda, len(a), len(lo), len(hi)))
	}
}

// CheckQuantizeRows panics unless QuantizeRowsU8's operands hold m rows:
// a m rows of k values at stride lda, u m rows of ldu >= k bytes, zp and
// scale m values each.
func CheckQuantizeRows(a []float32, lda, m, k int, u []uint8, ldu int, zp []int32, scale []float32) {
	if m < 0 || k < 0 || m > 0 && (lda < k || ldu < k || len(a) < (m-1)*lda+k || len(u) < m*ldu || len(zp) < m || len(scale) < m) {
		panic(fmt.Sprintf("kernels: QuantizeRowsU8 of %d rows of %d values (strides %d, %d) from %d values into %d bytes, %d zero points, %d scales",
			m, k, lda, ldu, len(a), len(u), len(zp), len(scale)))
	}
}

// QuantizeRunsU8 quantizes n = len(bases) rows gathered from runs of x
// (an image's im2col rows, a run of adjacent taps at a time): row r is
// len(offs) runs of w values, run j x[bases[r]+offs[j]:][:w], each
// quantized as QuantizeU8 does with the row's inv[r] and zp[r] into
// u[r*ldu+j*w:]. The bytes of a row from len(offs)*w on are left as they
// are.
func QuantizeRunsU8(x []float32, bases, offs []int, w int, inv []float32, zp []int32, u []uint8, ldu int) {
	QuantizeRunsWith(QuantizeU8, x, bases, offs, w, inv, zp, u, ldu)
}

// QuantizeRunsWith is QuantizeRunsU8 on the given QuantizeU8.
func QuantizeRunsWith(quantize func([]float32, float32, int32, []uint8), x []float32, bases, offs []int, w int, inv []float32, zp []int32, u []uint8, ldu int) {
	CheckQuantizeRuns(x, bases, offs, w, inv, zp, u, ldu)
	for r, base := range bases {
		for j, off := range offs {
			at := base + off
			quantize(x[at:at+w], inv[r], zp[r], u[r*ldu+j*w:r*ldu+(j+1)*w])
		}
	}
}

// CheckQuantizeRuns panics unless QuantizeRunsU8's operands hold its
// rows: every run inside x, a parameter pair per row, rows of ldu >=
// len(offs)*w bytes in u.
func CheckQuantizeRuns(x []float32, bases, offs []int, w int, inv []float32, zp []int32, u []uint8, ldu int) {
	if p := runsProblem(bases, offs, w, len(x), len(u), ldu); p != "" {
		panic("kernels: QuantizeRunsU8 of " + p)
	}
	if n := len(bases); len(offs)*w > 0 && (len(inv) < n || len(zp) < n) {
		panic(fmt.Sprintf("kernels: QuantizeRunsU8 of %d rows with %d scales, %d zero points", n, len(inv), len(zp)))
	}
}

// GatherRunsU8 copies n = len(bases) rows gathered from runs of x (the
// im2col rows of an image quantized once, a run of adjacent taps at a
// time): row r is len(offs) runs of w bytes, run j x[bases[r]+offs[j]:][:w],
// into u[r*ldu+j*w:]. The bytes of a row from len(offs)*w on are left as
// they are.
func GatherRunsU8(x []uint8, bases, offs []int, w int, u []uint8, ldu int) {
	CheckGatherRuns(x, bases, offs, w, u, ldu)
	for r, base := range bases {
		for j, off := range offs {
			copy(u[r*ldu+j*w:r*ldu+(j+1)*w], x[base+off:base+off+w])
		}
	}
}

// CheckGatherRuns panics unless GatherRunsU8's operands hold its rows:
// every run inside x, rows of ldu >= len(offs)*w bytes in u.
func CheckGatherRuns(x []uint8, bases, offs []int, w int, u []uint8, ldu int) {
	if p := runsProblem(bases, offs, w, len(x), len(u), ldu); p != "" {
		panic("kernels: GatherRunsU8 of " + p)
	}
}

// runsProblem says how rows of runs of w values at offs from bases
// reach outside an image of nx values, or their len(offs)·w values a row
// at stride ldu outside nu; "" when they do not (or there is nothing to
// move).
func runsProblem(bases, offs []int, w, nx, nu, ldu int) string {
	n, k := len(bases), len(offs)*w
	if w < 0 {
		return fmt.Sprintf("runs of %d values", w)
	}
	if n == 0 || k == 0 {
		return ""
	}
	lo, hi := slices.Min(offs), slices.Max(offs)
	bad := ldu < k || nu < (n-1)*ldu+k
	for _, b := range bases {
		bad = bad || b+lo < 0 || b+hi+w > nx
	}
	if !bad {
		return ""
	}
	return fmt.Sprintf("%d rows of %d runs of %d values (offsets %d..%d, rows from %d to %d) from %d values into %d (stride %d)",
		n, len(offs), w, lo, hi, slices.Min(bases), slices.Max(bases), nx, nu, ldu)
}
