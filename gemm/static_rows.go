package gemm

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/quant"
)

// Activations says how one layer's activation rows are quantized when not
// row by row: with fixed per-tensor parameters calibrated beforehand
// (static quantization, as ONNX Runtime's static QDQ models run: a value
// outside the calibrated range clamps to its end), or per row while the
// range of every row quantized is measured (calibration). A nil
// *Activations is the default: per row, nothing measured.
//
// A static Activations is immutable; a measuring one is safe for
// concurrent use.
type Activations struct {
	static bool
	lo, hi float32 // static: the calibrated range
	staticParams

	mu       sync.Mutex // measuring: guards the fields below
	seen     bool
	minV     float32
	maxV     float32
	measured int64 // rows
}

// StaticActivations returns fixed parameters for activations calibrated
// to lie in [lo, hi]: quant.RowParams(lo, hi), the range widened to hold
// 0 and spread over quant.ActivationLevels steps around a zero point of
// its own, as a row spanning [lo, hi] gets dynamically. A range that is
// not finite, or with lo > hi, is an error; one spanning less than
// quant.MinScaleRange quantizes every value to 0.
func StaticActivations(lo, hi float32) (*Activations, error) {
	if !finite32(lo) || !finite32(hi) || lo > hi {
		return nil, fmt.Errorf("gemm: activation range [%v, %v] is not a finite range", lo, hi)
	}
	s, inv, zp := quant.RowParams(lo, hi)
	return &Activations{static: true, lo: lo, hi: hi, staticParams: staticParams{scale: s, inv: inv, zp: zp}}, nil
}

// staticParams are the parameters every row of a layer shares: scale,
// the reciprocal QuantizeU8 multiplies by and zero point, or a pair's
// grid (QuantizeDivU8 divides by the scale, over all 256 steps).
type staticParams struct {
	grid       bool
	scale, inv float32
	zp         int32
}

// refuses reports whether values x are refused before their bytes
// (ErrNotFinite): one is NaN or ±Inf. A grid's values are finite by
// construction and are not read for it (GridActivations).
func (p *staticParams) refuses(t *dispatch.Table, x []float32) bool {
	if p.grid {
		return false
	}
	_, _, finite := t.MinMax(x)
	return !finite
}

// quantize writes the bytes of values x into u (at least len(x) bytes)
// on table t. x must be finite.
func (p *staticParams) quantize(t *dispatch.Table, x []float32, u []uint8) {
	if p.grid {
		t.QuantizeDivU8(x, p.scale, p.zp, u)
		return
	}
	t.QuantizeU8(x, p.inv, p.zp, u)
}

// GridActivations returns fixed parameters for activations that are the
// outputs of a QuantizeLinear -> DequantizeLinear pair through uint8 with
// dequantize scale and zero point zp: every value is float32(q − zp)·scale
// for a byte q. They quantize with the pair's own parameters over the
// whole byte range, on the table's QuantizeDivU8 (x/scale, rounded half to
// even, clamped to the bytes), which gives back q itself: x/scale is
// within a few ulps of the integer q − zp, and rounds to it. The rows then
// hold the pair's bytes, as ONNX's QLinearConv multiplies them, and are
// wide (QRows.Wide). A pair through int8 is the same grid shifted by 128:
// zero point zp + 128. scale must be positive, zp in [0, 255], and every
// value of the grid finite.
//
// Every value on a grid is finite, so a grid's rows are not checked for
// NaN or ±Inf as other static rows are (ErrNotFinite): that pass took
// 2.3% of ResNet-50's static QDQ file. The caller guarantees the values
// are the grid's (a pair's outputs are, a NaN input included: the pair
// maps it to a byte); a value that is not finite quantizes to a byte that
// may differ between tables.
func GridActivations(scale float32, zp int32) (*Activations, error) {
	lo, hi := float32(-zp)*scale, float32(255-zp)*scale
	if !finite32(scale) || scale <= 0 || zp < 0 || zp > 255 || !finite32(lo) || !finite32(hi) {
		return nil, fmt.Errorf("gemm: activation grid of scale %v and zero point %d", scale, zp)
	}
	return &Activations{static: true, lo: lo, hi: hi, staticParams: staticParams{grid: true, scale: scale, inv: 1 / scale, zp: zp}}, nil
}

// Grid reports whether a holds a pair's grid (GridActivations).
func (a *Activations) Grid() bool { return a != nil && a.grid }

// Quantize writes the bytes of values x with a static a's parameters into
// u (at least len(x) bytes) on table t: QuantizeU8 (or, for a grid,
// QuantizeDivU8) of x. x must be finite.
func (a *Activations) Quantize(t *dispatch.Table, x []float32, u []uint8) { a.quantize(t, x, u) }

// MeasureActivations returns Activations that quantize per row, as nil
// does, and record the range of every row they quantize (Range).
func MeasureActivations() *Activations { return &Activations{} }

// Static reports whether a holds fixed parameters (false for nil).
func (a *Activations) Static() bool { return a != nil && a.static }

// Params returns a static a's scale, the reciprocal the kernels multiply
// by and the zero point.
func (a *Activations) Params() (scale, inv float32, zp int32) { return a.scale, a.inv, a.zp }

// Range returns the range of the activations: a static a's calibrated
// range, or the smallest and largest values a measuring a has seen and
// how many rows held them (0: none yet, and lo = hi = 0).
func (a *Activations) Range() (lo, hi float32, rows int64) {
	if a == nil {
		return 0, 0, 0
	}
	if a.static {
		return a.lo, a.hi, 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.minV, a.maxV, a.measured
}

func (a *Activations) observe(lo, hi float32, rows int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.seen {
		a.minV, a.maxV, a.seen = lo, hi, true
	}
	a.minV, a.maxV = min(a.minV, lo), max(a.maxV, hi)
	a.measured += int64(rows)
}

func finite32(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// QuantizeRowsWith quantizes m rows of k values, row i at x[i*lda:], into
// dst with the parameters every row shares: scale, its reciprocal inv and
// zero point zp (in [0, quant.ActivationLevels]), as quant.RowParams gives
// them. A value quantizes to clamp(roundEven(v·inv), -zp, 127-zp) + zp on
// the table's QuantizeU8, so every table writes the same bytes, and a row
// whose own range gives the same parameters quantizes exactly as
// QuantizeRows quantizes it. A row holding NaN or ±Inf is ErrNotFinite.
func (e *Engine) QuantizeRowsWith(dst *QRows, x []float32, m, k, lda int, scale, inv float32, zp int32) error {
	return e.quantizeRowsStatic(dst, x, m, k, lda, staticParams{scale: scale, inv: inv, zp: zp})
}

// quantizeRowsStatic quantizes m rows with the parameters p every row
// shares (QuantizeRowsWith's, or a grid's).
func (e *Engine) quantizeRowsStatic(dst *QRows, x []float32, m, k, lda int, p staticParams) error {
	q, err := e.staticRowQuantizer(dst, x, m, k, lda, p)
	if err != nil {
		return err
	}
	return e.rowsSplit(q, m)
}

// staticRowQuantizer is rowQuantizer for quantizeRowsStatic: a grid's
// zero point may reach 255, and its rows are wide.
func (e *Engine) staticRowQuantizer(dst *QRows, x []float32, m, k, lda int, p staticParams) (rowQuant, error) {
	if m < 0 || k < 0 || lda < k || m > 0 && len(x) < (m-1)*lda+k {
		return rowQuant{}, fmt.Errorf("gemm: %d values for %d rows of %d (row stride %d)", len(x), m, k, lda)
	}
	levels := int32(quant.ActivationLevels)
	if p.grid {
		levels = 255
	}
	if p.zp < 0 || p.zp > levels || !finite32(p.scale) || !finite32(p.inv) || p.scale < 0 || p.inv < 0 {
		return rowQuant{}, fmt.Errorf("gemm: activation scale %v (1/%v), zero point %d", p.scale, p.inv, p.zp)
	}
	dst.ready(m, k)
	dst.wide = p.grid
	return rowQuant{t: e.t, dst: dst, x: x, k: k, lda: lda, static: true, staticParams: p}, nil
}

// rowsSplit runs q over the m rows it readied, split over e's pool when
// large (ranges of Parallel, each value costing quantizeCost). A refusal
// fails with ErrNotFinite naming the row (the first of those the ranges
// came to, when several are).
func (e *Engine) rowsSplit(q rowQuant, m int) error {
	j := rowsJobs.Get().(*rowsJob)
	j.q = q
	j.bad.Store(-1)
	err := e.Parallel(m, m*q.k*quantizeCost, j.run)
	bad := j.bad.Load()
	j.q = rowQuant{} // the pool keeps no operands alive
	rowsJobs.Put(j)
	if err != nil {
		q.dst.m = 0
		if bad >= 0 {
			return fmt.Errorf("%w (row %d)", ErrNotFinite, bad)
		}
		return err
	}
	return nil
}

// rowsJob is one rowsSplit: its rows, the first row refused, and the
// method value Parallel runs, pooled with it as fJob is.
type rowsJob struct {
	q   rowQuant
	bad atomic.Int64
	run func(e *Engine, r0, r1 int) error
}

var rowsJobs = sync.Pool{New: func() any {
	j := new(rowsJob)
	j.run = j.part
	return j
}}

// part quantizes rows [r0, r1), noting the first it refused.
func (j *rowsJob) part(_ *Engine, r0, r1 int) error {
	i := j.q.rows(r0, r1)
	if i < 0 {
		return nil
	}
	firstRow(&j.bad, r0+i)
	return ErrNotFinite
}

// firstRow lowers bad (-1: none yet) to row i, the lowest refused row of
// the ranges that run at once.
func firstRow(bad *atomic.Int64, i int) {
	for b := bad.Load(); (b < 0 || b > int64(i)) && !bad.CompareAndSwap(b, int64(i)); b = bad.Load() {
	}
}

// QuantizeRowsAs quantizes m rows of k values as a says: per row
// (QuantizeRows) for nil, with a's parameters (QuantizeRowsWith's bytes,
// or a grid's) for a static a, per row while recording the rows' range
// for a measuring a.
func (e *Engine) QuantizeRowsAs(dst *QRows, x []float32, m, k, lda int, a *Activations) error {
	switch {
	case a == nil:
		return e.QuantizeRows(dst, x, m, k, lda)
	case a.static:
		return e.quantizeRowsStatic(dst, x, m, k, lda, a.staticParams)
	}
	if err := e.QuantizeRows(dst, x, m, k, lda); err != nil {
		return err
	}
	if m == 0 || k == 0 {
		return nil
	}
	lo, hi, _ := e.t.MinMax(x[:k])
	for i := 1; i < m; i++ {
		l, h, _ := e.t.MinMax(x[i*lda : i*lda+k])
		lo, hi = min(lo, l), max(hi, h)
	}
	a.observe(lo, hi, m)
	return nil
}

// QMatMulAs computes c (m×N, row stride N) = quantize(x) · w for x (m×K,
// row stride K), its rows quantized as a says (QuantizeRowsAs).
func (e *Engine) QMatMulAs(x []float32, m int, w *QWeights, c []float32, a *Activations) error {
	return e.QMatMulAsFinish(x, m, w, c, a, nil)
}

// QMatMulAsFinish is QMatMulAs whose outputs are finished as fin says
// (QMatMulRowsFinish; nil: not at all).
func (e *Engine) QMatMulAsFinish(x []float32, m int, w *QWeights, c []float32, a *Activations, fin *Finish) error {
	if a == nil && fin == nil {
		return e.QMatMul(x, m, w, c)
	}
	if m == 0 || w.N == 0 {
		return nil
	}
	qa := rowsPool.Get().(*QRows)
	defer rowsPool.Put(qa)
	if a == nil || a.static {
		if ok, err := e.qMatMulChunks(qa, x, m, w, c, a, fin); ok {
			return err
		}
	}
	if err := e.QuantizeRowsAs(qa, x, m, w.K, w.K, a); err != nil {
		return err
	}
	return e.QMatMulRowsFinish(qa, w, c, w.N, fin)
}

// qMatMulChunks runs QMatMulAsFinish (a nil or static) as one loop over
// the product's row chunks, when they split across cores as whole
// chunks: each core quantizes its chunks' rows and multiplies them by
// every panel group, where the product's own loop splits its chunks by
// panel group after a loop quantizing the rows. One fork and join instead
// of two, and no core reads rows another quantized: on two cores of a
// Xeon (amx) the encoder's 128×256×256 product took 10.8 µs instead of
// 13.1 (BenchmarkQMatMulSplit).
// The rows and their products are the other loops', bit for bit. It
// reports false, having done nothing, when the chunks do not split so.
func (e *Engine) qMatMulChunks(qa *QRows, x []float32, m int, w *QWeights, c []float32, a *Activations, fin *Finish) (bool, error) {
	t := e.t
	mc := rowChunk(t.RowStep(), m)
	chunks := (m + mc - 1) / mc
	work := qWork(m, w) + m*w.K*quantizeCost // the product and the rows' quantizing
	parts := e.parts(work, chunks)
	// Whole chunks balance when each core gets as many, or when there
	// are enough that the last one claimed is a small part of the loop.
	if parts < 2 || chunks%parts != 0 && chunks < 4*parts || a.Grid() && !t.FullRange {
		return false, nil // (a grid's wide rows are split after they are all quantized)
	}
	var q rowQuant
	var err error
	if a == nil {
		q, err = e.rowQuantizer(qa, x, m, w.K, w.K)
	} else {
		q, err = e.staticRowQuantizer(qa, x, m, w.K, w.K, a.staticParams)
	}
	if err == nil {
		err = e.checkRows(qa, w, c, w.N, fin)
	}
	if err != nil {
		return true, err
	}
	qa.off = grow(qa.off, m)
	off := qa.off
	j := e.newQJob(qa, w, c, w.N, fin, off)
	defer j.free()
	var bad atomic.Int64
	bad.Store(-1)
	err = e.run(chunks, work, func(c0, c1 int) {
		for ch := c0; ch < c1 && bad.Load() < 0; ch++ {
			m0, m1 := ch*mc, min(m, (ch+1)*mc)
			if i := q.rows(m0, m1); i >= 0 {
				firstRow(&bad, m0+i)
				return
			}
			for r := m0; r < m1; r++ {
				off[r] = t.QOffset - qa.zp[r]
			}
			j.chunks(ch*j.ng, (ch+1)*j.ng)
		}
	})
	if err != nil {
		return true, err
	}
	if i := bad.Load(); i >= 0 {
		qa.m = 0
		return true, fmt.Errorf("%w (row %d)", ErrNotFinite, i)
	}
	return true, nil
}
