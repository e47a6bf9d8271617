package gemm

import (
	"fmt"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// quantizeChunk is how many values QuantizeStatic checks and quantizes at
// a time: the check's pass leaves them in cache for the quantizing one.
const quantizeChunk = 4096

// PrepareRows readies r for m rows of k bytes in [0,
// quant.ActivationLevels] that the caller quantizes in place, row i at
// u[i*ldu : i*ldu+k] (the bytes past k of each row are zero and must stay
// so), each row with the zero point and scale SetRowRange or SetStatic
// gives it. It lets a caller that knows a row's range without reading the
// row (a convolution: an im2col row's range is the range of the pixels it
// gathers) quantize the row as it gathers it, on the table's QuantizeU8
// with the row's inv and zp: the bytes, zero points and scales are then
// QuantizeRows's (QuantizeRowsWith's) for the same values.
func (r *QRows) PrepareRows(m, k int) (u []uint8, ldu int, err error) {
	if m < 0 || k < 0 {
		return nil, 0, fmt.Errorf("gemm: %d rows of %d bytes", m, k)
	}
	ldu = kernels.PackedKLen(k)
	r.m, r.k, r.ldu, r.offOK, r.wide = m, k, ldu, false, false
	r.u = grow(r.u, paddedRows(m)*ldu)
	r.zp = grow(r.zp, m)
	r.scale = grow(r.scale, m)
	if ldu > k {
		for i := 0; i < m; i++ {
			clear(r.u[i*ldu+k : (i+1)*ldu])
		}
	}
	return r.u[:m*ldu], ldu, nil
}

// SetRowRange gives row i (of those PrepareRows readied) the zero point
// and scale QuantizeRows gives a row whose values range over [lo, hi]
// (quant.RowParams(lo, hi)), and returns the reciprocal inv and the zero
// point to quantize its values with: u = QuantizeU8(row, inv, zp). lo and
// hi are finite; whether either is -0 or +0 makes no difference.
func (r *QRows) SetRowRange(i int, lo, hi float32) (inv float32, zp int32) {
	s, inv, zp := quant.RowParams(lo, hi)
	r.SetRowParams(i, s, zp)
	return inv, zp
}

// SetRowParams gives row i (of those PrepareRows readied) the scale and
// zero point quant.RowParams returned for its range: SetRowRange for a
// caller that took the parameters of many rows at once.
func (r *QRows) SetRowParams(i int, scale float32, zp int32) {
	r.zp[i], r.scale[i] = zp, scale
}

// SetStatic gives every row PrepareRows readied a static a's zero point
// and scale, whose bytes QuantizeStatic (or a.Quantize) writes: rows of a
// grid's bytes are wide.
func (r *QRows) SetStatic(a *Activations) error {
	if !a.Static() {
		return fmt.Errorf("gemm: activations without fixed parameters")
	}
	for i := 0; i < r.m; i++ {
		r.zp[i], r.scale[i] = a.zp, a.scale
	}
	r.wide = a.grid
	return nil
}

// QuantizeStatic quantizes x into dst (at least len(x) bytes) with a
// static a's parameters on the caller, value by value as
// QuantizeRowsWith quantizes a row: copied into rows that PrepareRows
// readied and SetStatic gave a's parameters, the bytes are those
// QuantizeRowsAs writes for the same values, and a value quantize(0)
// (a's zero point) stands for a zero. x holding NaN or ±Inf is
// ErrNotFinite, dst then partly written; a grid's values are not checked
// (GridActivations).
func (e *Engine) QuantizeStatic(dst []uint8, x []float32, a *Activations) error {
	if !a.Static() {
		return fmt.Errorf("gemm: activations without fixed parameters")
	}
	if len(dst) < len(x) {
		return fmt.Errorf("gemm: %d bytes for %d values", len(dst), len(x))
	}
	t := e.t
	for i := 0; i < len(x); i += quantizeChunk {
		v := x[i:min(i+quantizeChunk, len(x))]
		if a.refuses(t, v) {
			return ErrNotFinite
		}
		a.Quantize(t, v, dst[i:i+len(v)])
	}
	return nil
}
