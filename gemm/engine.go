package gemm

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// Engine runs products on one kernel table with a bounded worker pool. It
// is safe for concurrent use. Close stops its workers.
type Engine struct {
	t    *dispatch.Table
	pool *Pool
	// shared marks the engine Default returns, which Close leaves running.
	shared bool
	// kcBytes bounds the packed weights one K block of a block kernel
	// reads (NP panels × kc groups): the block stays in L1/L2 while every
	// row tile of a chunk passes over it.
	kcBytes int
	// serial is the one-core engine of Serial, made on first use.
	serialOnce sync.Once
	serial     *Engine
	// probe, when set (Probed), is told of work that could split.
	probe *Probe
	// running counts the runs in progress (Begin), started those ever begun.
	running atomic.Int32
	started atomic.Uint64
}

// Begin marks the start of a run of work on e (a model's run, bracketed
// by its caller) and returns the func that marks its end and reports
// whether the run had e to itself: whether no other run begun on e was
// in progress at any time during it. A caller timing its runs to choose
// how to run the next ones (a model's split or one-core choice) times
// only those: a run beside others is slowed by them, whatever its way.
func (e *Engine) Begin() (end func() (alone bool)) {
	alone := e.running.Add(1) == 1
	start := e.started.Add(1)
	return func() bool {
		alone = alone && e.started.Load() == start
		e.running.Add(-1)
		return alone
	}
}

// New returns an Engine on table t using at most threads cores. Its
// workers run until Close.
func New(t *dispatch.Table, threads int) *Engine {
	return NewSpin(t, threads, DefaultSpin)
}

// NewSpin is New with workers that spin for spin after each task before
// they park (NewPoolSpin).
func NewSpin(t *dispatch.Table, threads int, spin time.Duration) *Engine {
	return &Engine{t: t, pool: NewPoolSpin(threads, spin), kcBytes: 64 << 10}
}

// Close stops the engine's workers and waits for the tasks they are
// running. It is idempotent. Products still run after Close, with the same
// results, on the calling goroutine alone (see Pool). Close does nothing
// on the engine Default returns: the process shares it.
func (e *Engine) Close() {
	if !e.shared {
		e.pool.Close()
	}
}

var (
	defaultOnce   sync.Once
	defaultEngine *Engine
)

// Default returns an Engine on dispatch.Default() using GOMAXPROCS cores,
// created on first use and shared by the whole process: it is never
// closed.
func Default() *Engine {
	defaultOnce.Do(func() {
		defaultEngine = New(dispatch.Default(), runtime.GOMAXPROCS(0))
		defaultEngine.shared = true
	})
	return defaultEngine
}

// Table returns the kernel table e runs.
func (e *Engine) Table() *dispatch.Table { return e.t }

// Threads returns the number of cores products may use.
func (e *Engine) Threads() int { return e.pool.Size() }

// MinParallelWork is the work (float32 multiply-adds, or units as
// costly) below which a product or a Parallel loop runs on one core
// (callers shaping their loops' units may read it):
// about 5 µs of a float32 product on one core of AVX2 or AVX-512, where
// handing half of it to a worker that is spinning costs under 1 µs
// (BenchmarkForkJoin) and saves 2.5 µs.
const MinParallelWork = 1 << 18

// QMACsPerUnit is how many int8 multiply-adds cost one unit of work (the
// unit of MinParallelWork; convolutions state their int8 work in it): the
// int8 kernels do four for each float32 one (a VNNI instruction sums 4
// byte products per lane where FMA does one), so an int8 product splits
// at four times as many multiply-adds as a float32 one.
const QMACsPerUnit = 4

// rowChunkRows is the most rows whose tiles pass over one K block of a
// panel group before the next group (rounded down to whole tiles).
const rowChunkRows = 96

// rowChunk is the number of rows of m whose tiles pass over one K block
// of a panel group before the next group: a multiple of mr (the table's
// RowStep), at most rowChunkRows (or one tile), the rows split as evenly
// as that allows.
// Uneven chunks (96 and 32 of 128 rows) gave one core of two three times
// the other's work before it could take over the rest, and a part of
// rows unlike the parts of the loops before and after.
func rowChunk(mr, m int) int {
	most := mr * max(1, rowChunkRows/mr)
	if m <= most {
		return most
	}
	chunks := (m + most - 1) / most
	tiles := (m + mr - 1) / mr
	return mr * ((tiles + chunks - 1) / chunks)
}

// spans splits n into parts near-equal ranges; range i is [i*n/parts, (i+1)*n/parts).
func span(i, n, parts int) (int, int) { return i * n / parts, (i + 1) * n / parts }

// run splits units of work over the pool when macs (in units of a float32
// multiply-add: see QMACsPerUnit) is large enough and runs f on each range
// of units, recovering panics.
func (e *Engine) run(units, macs int, f func(u0, u1 int)) error {
	defer e.noted(e.note(units, macs))
	parts := e.parts(macs, units)
	if parts <= 1 {
		return protect(func() { f(0, units) })
	}
	// Chunks of units are claimed as the caller and the workers free to
	// help come to them, each from its own part first (claims): a worker
	// that starts late takes what is left.
	l := loops.Get().(*loop)
	l.start(units, max(1, units/(4*parts)), parts)
	l.f = f
	err := e.pool.share(parts-1, l.claim)
	l.free()
	return err
}

// QRows are activation rows quantized for the int8 kernels: per row, bytes
// u with a zero point and a scale (in [0, 127] from QuantizeRows, see
// quant.RowParams; any byte from LoadU8 and LoadS8). The zero value is
// ready to use; QuantizeRows reuses its buffers.
type QRows struct {
	m, k, ldu int
	u         []uint8
	zp        []int32
	scale     []float32
	off       []int32 // offBase - zp, per row
	offBase   int32
	offOK     bool
	wide      bool // some byte exceeds 128 (rows loaded by LoadU8, LoadS8)
}

// Rows returns the number of rows held.
func (r *QRows) Rows() int { return r.m }

// offsets returns QOffset - zp per row for a table with offset qoff.
func (r *QRows) offsets(qoff int32) []int32 {
	if !r.offOK || r.offBase != qoff {
		r.off = grow(r.off, r.m)
		for i := range r.off {
			r.off[i] = qoff - r.zp[i]
		}
		r.offBase, r.offOK = qoff, true
	}
	return r.off
}

// paddedRows is the number of rows QRows holds room for: 3 rows get room
// for 4, so the kernels run them as one 4-row tile (whose extra row is
// computed from whatever bytes are there and never stored) instead of
// three 1-row tiles: 15% faster at K = N = 4096 on AVX2, where 2 rows
// were 8% slower padded than as two 1-row tiles.
func paddedRows(m int) int {
	if m == 3 {
		return 4
	}
	return m
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// quantizeCost is the work (in MinParallelWork's units) of quantizing
// one value of a row: its share of the row's min/max pass and of the
// quantizing pass, both vector kernels. Rows of 32 K values and more
// split.
const quantizeCost = 8

// QuantizeRows quantizes m rows of k values, row i at a[i*lda:], into dst
// with e's table. A row holding NaN or ±Inf is ErrNotFinite.
func (e *Engine) QuantizeRows(dst *QRows, a []float32, m, k, lda int) error {
	q, err := e.rowQuantizer(dst, a, m, k, lda)
	if err != nil {
		return err
	}
	return e.rowsSplit(q, m)
}

// rowQuantizer readies dst for m rows of k values, row i at a[i*lda:],
// and returns what quantizes rows [r0, r1) of them as QuantizeRows does
// (rowQuant.rows). Ranges of rows may run at once.
func (e *Engine) rowQuantizer(dst *QRows, a []float32, m, k, lda int) (rowQuant, error) {
	if m < 0 || k < 0 || lda < k || m > 0 && len(a) < (m-1)*lda+k {
		return rowQuant{}, fmt.Errorf("gemm: %d values for %d rows of %d (row stride %d)", len(a), m, k, lda)
	}
	dst.ready(m, k)
	return rowQuant{t: e.t, dst: dst, x: a, k: k, lda: lda}, nil
}

// rowQuant is the quantizing of a matrix's rows into a QRows that
// PrepareRows's callers do not do themselves: per row (rowQuantizer), or
// with the parameters every row shares (staticRowQuantizer). A value
// rather than a closure: the 1×1 convolutions of an int8 network
// quantize their rows hundreds of times a run, each closure and its
// split's state an allocation.
type rowQuant struct {
	t            *dispatch.Table
	dst          *QRows
	x            []float32 // row i at x[i*lda:], k values
	k, lda       int
	static       bool
	staticParams // static: the parameters of every row
}

// rows quantizes rows [r0, r1) and returns the first it refused (relative
// to r0, ErrNotFinite's row), or -1.
func (q *rowQuant) rows(r0, r1 int) int {
	t, dst, x, k, lda := q.t, q.dst, q.x, q.k, q.lda
	ldu := dst.ldu
	if !q.static {
		return t.QuantizeRowsU8(x[r0*lda:], lda, r1-r0, k, dst.u[r0*ldu:], ldu, dst.zp[r0:r1], dst.scale[r0:r1])
	}
	for i := r0; i < r1; i++ {
		row := x[i*lda : i*lda+k]
		if q.refuses(t, row) {
			return i - r0
		}
		u := dst.u[i*ldu : i*ldu+ldu]
		q.quantize(t, row, u)
		clear(u[k:])
		dst.zp[i], dst.scale[i] = q.zp, q.scale
	}
	return -1
}

// ready sizes r for m rows of k values, to be quantized.
func (r *QRows) ready(m, k int) {
	ldu := kernels.PackedKLen(k)
	r.m, r.k, r.ldu, r.offOK, r.wide = m, k, ldu, false, false
	r.u = grow(r.u, paddedRows(m)*ldu)
	r.zp = grow(r.zp, m)
	r.scale = grow(r.scale, m)
}

var rowsPool = sync.Pool{New: func() any { return new(QRows) }}

// QMatMul computes c (m×N, row stride N) = quantize_rows(a) · w for a
// (m×K, row stride K).
func (e *Engine) QMatMul(a []float32, m int, w *QWeights, c []float32) error {
	if m == 0 || w.N == 0 {
		return nil
	}
	qa := rowsPool.Get().(*QRows)
	defer rowsPool.Put(qa)
	if ok, err := e.qMatMulChunks(qa, a, m, w, c, nil, nil); ok {
		return err
	}
	if err := e.QuantizeRows(qa, a, m, w.K, w.K); err != nil {
		return err
	}
	return e.QMatMulRows(qa, w, c, w.N)
}

// groups returns the number of panel groups of at most np panels for
// panels panels; group i is span(i, panels, groups).
func groups(panels, np int) int { return (panels + np - 1) / np }

// QMatMulRows computes rows i < qa.Rows() of the product: c[i*ldc+j] for
// j < N, from rows quantized by QuantizeRows. Nothing else of c is written.
func (e *Engine) QMatMulRows(qa *QRows, w *QWeights, c []float32, ldc int) error {
	return e.QMatMulRowsFinish(qa, w, c, ldc, nil)
}

// QMatMulRowsFinish is QMatMulRows whose outputs are finished as fin says
// (nil: not at all), each row tile as it is written: in the kernel's
// registers on tables that take kernels.QFinish, on the table's
// ConvFinish right after the tile otherwise, the same bits either way.
func (e *Engine) QMatMulRowsFinish(qa *QRows, w *QWeights, c []float32, ldc int, fin *Finish) error {
	if err := e.checkRows(qa, w, c, ldc, fin); err != nil || qa.m == 0 || w.N == 0 {
		return err
	}
	qoff := e.t.QOffset
	if e.splits(qa) {
		qoff *= 2 // two passes, each summing (u - QOffset)·W
	}
	j := e.newQJob(qa, w, c, ldc, fin, qa.offsets(qoff))
	defer j.free()
	return e.run(j.units(), j.work(), j.run)
}

// splits reports whether a product of qa's rows runs each row as two
// (wideSplit): wide rows on a table whose kernel is exact only for
// bytes up to 128.
func (e *Engine) splits(qa *QRows) bool { return qa.wide && !e.t.FullRange }

// wideSplit writes lo = min(u, 128) and hi = u - lo for bytes u: two rows
// each of bytes a table that is not FullRange multiplies exactly, whose
// products add up to u's.
func wideSplit(u, lo, hi []uint8) {
	lo, hi = lo[:len(u)], hi[:len(u)]
	for i, v := range u {
		l := min(v, 128)
		lo[i], hi[i] = l, v-l
	}
}

// splitBytes holds the halves of wide rows (wideSplit), reused call to
// call.
var splitBytes = sync.Pool{New: func() any { return new([]uint8) }}

// checkRows validates a product of qa's rows by w into c (row stride
// ldc) finished by fin.
func (e *Engine) checkRows(qa *QRows, w *QWeights, c []float32, ldc int, fin *Finish) error {
	m, n := qa.m, w.N
	if qa.k != w.K && m > 0 {
		return fmt.Errorf("gemm: rows of %d values against weights of K = %d", qa.k, w.K)
	}
	if m == 0 || n == 0 {
		return nil
	}
	if ldc < n || len(c) < (m-1)*ldc+n {
		return fmt.Errorf("gemm: output of %d values for %d rows of %d (row stride %d)", len(c), m, n, ldc)
	}
	if err := fin.check(m, n); err != nil {
		return err
	}
	if fin.inPlace(c) && fin.LDR != ldc {
		return fmt.Errorf("gemm: a finish residual that is the output takes its row stride %d, not %d", ldc, fin.LDR)
	}
	if e.splits(qa) && w.Scheme == quant.PerBlock {
		return fmt.Errorf("gemm: rows hold bytes above 128, which the %s kernels multiply by per-block weights exactly only through QMatMulInt32", e.t.Name)
	}
	return nil
}

// newQJob returns the job of a product of qa's rows (checkRows) with
// their offsets off (QRows.offsets), from the pool: free gives it back.
func (e *Engine) newQJob(qa *QRows, w *QWeights, c []float32, ldc int, fin *Finish, off []int32) *qJob {
	m, n := qa.m, w.N
	over := fin.inPlace(c)
	if over && w.Scheme == quant.PerBlock {
		fin = fin.apart(m, n) // its sums are written before they are finished
	}
	t := e.t
	panels := w.cols / kernels.PanelN
	ng := groups(panels, t.NP)
	mc := rowChunk(t.RowStep(), m)
	kq := qa.ldu / kernels.KGroup
	pstr := w.kp * kernels.PanelN
	// K blocks of the per-channel schemes: even, each under kcBytes of
	// panels, when more than one row tile reuses them; weights in several
	// parts run each part's blocks in turn.
	nkb := 1
	if kcMax := max(1, e.kcBytes/(t.NP*64)); kq > kcMax && m > t.MR {
		nkb = (kq + kcMax - 1) / kcMax
	}
	j := qJobs.Get().(*qJob)
	j.e, j.qa, j.w, j.c, j.ldc, j.off, j.fin = e, qa, w, c, ldc, off, fin
	j.parts = append(append(j.parts[:0], w.packed), w.extra...)
	j.panels, j.ng, j.mc, j.kq, j.pstr, j.nkb = panels, ng, mc, kq, pstr, nkb
	j.rows = append(j.rows[:0], qa.u)
	if e.splits(qa) {
		n := paddedRows(m) * qa.ldu
		j.lo, j.hi = splitBytes.Get().(*[]uint8), splitBytes.Get().(*[]uint8)
		*j.lo, *j.hi = grow(*j.lo, n), grow(*j.hi, n)
		wideSplit(qa.u[:n], *j.lo, *j.hi)
		j.rows = append(j.rows[:0], *j.lo, *j.hi)
	}
	j.passes = nkb * len(j.parts) * len(j.rows)
	// An output over its residual is not touched: the finish reads each
	// of its lines before it writes it (the kernel asks for a tile's
	// residual rows as it starts; the per-block scheme has just copied
	// them), so a touch would only wait for lines coming anyway.
	j.touch = touches(m, n, mc) && !over
	return j
}

// units is how many units j's loop has: a row chunk of one panel group
// each.
func (j *qJob) units() int { return (j.qa.m + j.mc - 1) / j.mc * j.ng }

// work is j's product's work in units of a float32 multiply-add.
func (j *qJob) work() int { return qWork(j.qa.m, j.w) }

// qWork is the work of m rows' product by w in units of a float32
// multiply-add: every packed part of the weights is a pass.
func qWork(m int, w *QWeights) int { return m * w.N * w.K * (1 + len(w.extra)) / QMACsPerUnit }

// free gives j back to the pool, holding no operands.
func (j *qJob) free() {
	clear(j.parts) // the pool keeps no weights alive
	clear(j.rows)
	if j.lo != nil {
		splitBytes.Put(j.lo)
		splitBytes.Put(j.hi)
	}
	*j = qJob{parts: j.parts[:0], rows: j.rows[:0], run: j.run}
	qJobs.Put(j)
}

// qJob is one QMatMulRows call: its operands and the shape of its loop,
// pooled together with the method value the engine runs (a closure over
// them was a heap allocation a call, and a small model's products run by
// the thousand a second).
type qJob struct {
	e                                     *Engine
	qa                                    *QRows
	w                                     *QWeights
	c                                     []float32
	ldc                                   int
	off                                   []int32
	fin                                   *Finish
	parts                                 [][]int8
	rows                                  [][]uint8 // qa's bytes, or their halves (splits)
	lo, hi                                *[]uint8  // the halves' buffers
	panels, ng, mc, kq, pstr, nkb, passes int
	touch                                 bool // touches(m, n, mc), and c is not its finish's residual
	run                                   func(u0, u1 int)
}

var qJobs = sync.Pool{New: func() any {
	j := new(qJob)
	j.run = j.chunks
	return j
}}

// qTask is the scratch of one goroutine's run of a qJob's units: the
// kernel's argument (which escapes through the table's function value),
// the accumulators of several passes and the padded last panel's tile.
type qTask struct {
	q       kernels.QBlock
	acc     []int32
	fsum    []float32
	scratch []float32
}

var qTasks = sync.Pool{New: func() any { return new(qTask) }}

// chunks runs units [u0, u1) of j: for each, one row chunk of one panel
// group.
func (j *qJob) chunks(u0, u1 int) {
	e, t, qa, w := j.e, j.e.t, j.qa, j.w
	m, n, c, ldc, off := qa.m, w.N, j.c, j.ldc, j.off
	panels, ng, mc, kq, pstr, nkb, passes := j.panels, j.ng, j.mc, j.kq, j.pstr, j.nkb, j.passes
	task := qTasks.Get().(*qTask)
	defer qTasks.Put(task)
	accStr := t.NP * kernels.PanelN
	var acc []int32
	var fsum []float32
	if w.Scheme == quant.PerBlock {
		task.fsum = grow(task.fsum, t.MR*accStr)
		fsum = task.fsum
		clear(fsum)
	} else if passes > 1 {
		task.acc = grow(task.acc, mc*accStr)
		acc = task.acc
		clear(acc)
	}
	q := &task.q
	for unit := u0; unit < u1; unit++ {
		ch, g := unit/ng, unit%ng
		m0, m1 := ch*mc, min(m, (ch+1)*mc)
		p0, p1 := span(g, panels, ng)
		c0 := p0 * kernels.PanelN
		if g == 0 && j.touch {
			e.touch(c, ldc, j.fin, m0, m1, n)
		}
		*q = kernels.QBlock{
			LDU: qa.ldu, B: w.packed[p0*pstr:], PStr: pstr, NP: p1 - p0,
			AccStr: accStr, SA: qa.scale, Off: off,
		}
		// Columns past N (the last panel's padding) go to scratch.
		cols := min(n-c0, q.NP*kernels.PanelN)
		if w.Scheme == quant.PerBlock {
			e.qBlocks(q, qa, w, c, ldc, m0, m1, c0, cols, kq, fsum, &task.scratch)
			e.finishRows(j.fin, c, ldc, m0, m1, c0, cols)
			continue
		}
		q.Colsum, q.SB = w.colsum[c0:], w.scales[c0:]
		for pass := 0; pass < passes; pass++ {
			part, kb := pass/nkb%len(j.parts), pass%nkb
			rows := j.rows[pass/(nkb*len(j.parts))]
			g0, g1 := span(kb, kq, nkb)
			q.KQ = g1 - g0
			q.B = j.parts[part][p0*pstr+g0*64:]
			q.Flags = 0
			if pass > 0 {
				q.Flags |= kernels.QLoadAcc
			}
			last := pass == passes-1
			if last {
				q.Flags |= kernels.QOutChannel
			}
			for r0 := m0; r0 < m1; r0 += t.MR {
				q.Rows = min(t.MR, m1-r0)
				if r0 > m0 { // the first tile read the block's weights
					q.Flags |= kernels.QCached
				}
				q.U = rows[r0*qa.ldu+g0*4:]
				q.Off, q.SA = off[r0:], qa.scale[r0:]
				if acc != nil {
					q.Acc = acc[(r0-m0)*accStr:]
				}
				if last {
					e.qOutFinish(q, j.fin, c, ldc, r0, c0, cols, &task.scratch)
				} else {
					t.QBlock(q)
				}
			}
		}
	}
	*q = kernels.QBlock{} // the pool keeps no operands alive
}

// qOut runs q's final call, writing rows r0.. of c at column c0; a block
// wider than the columns left (the padded last panel) goes through a
// scratch tile (grown in tile).
func (e *Engine) qOut(q *kernels.QBlock, c []float32, ldc, r0, c0, cols int, tile *[]float32) {
	if cols == q.NP*kernels.PanelN {
		q.C, q.LDC = c[r0*ldc+c0:], ldc
		e.t.QBlock(q)
		return
	}
	scratch, w := e.qScratch(q, tile)
	e.t.CopyBlock(c[r0*ldc+c0:], ldc, scratch, w, q.Rows, cols)
}

// qScratch runs q's final call into the scratch tile (grown in tile) and
// returns it and its row stride, the block's width.
func (e *Engine) qScratch(q *kernels.QBlock, tile *[]float32) ([]float32, int) {
	w := q.NP * kernels.PanelN
	*tile = grow(*tile, q.Rows*w)
	q.C, q.LDC = *tile, w
	e.t.QBlock(q)
	return *tile, w
}

// qBlocks runs rows m0..m1 of one panel group of per-block weights: for
// each row tile, the blocks of 32 k in order, their scaled sums carried in
// fsum.
func (e *Engine) qBlocks(q *kernels.QBlock, qa *QRows, w *QWeights, c []float32, ldc, m0, m1, c0, cols, kq int, fsum []float32, tile *[]float32) {
	t := e.t
	const kqBlock = quant.BlockSize / kernels.KGroup
	nb := (kq + kqBlock - 1) / kqBlock
	b0 := q.B
	off := q.Off
	for r0 := m0; r0 < m1; r0 += t.MR {
		q.Rows = min(t.MR, m1-r0)
		q.Off, q.SA, q.FSum = off[r0:], qa.scale[r0:], fsum
		for blk := 0; blk < nb; blk++ {
			g0 := blk * kqBlock
			q.KQ = min(kqBlock, kq-g0)
			q.U = qa.u[r0*qa.ldu+g0*4:]
			q.B = b0[g0*64:]
			q.Colsum = w.colsum[blk*w.cols+c0:]
			q.SB = w.scales[blk*w.cols+c0:]
			q.Flags = kernels.QOutBlock
			if blk > 0 {
				q.Flags |= kernels.QLoadSum
			}
			if blk == nb-1 {
				q.Flags |= kernels.QFinal
				e.qOut(q, c, ldc, r0, c0, cols, tile)
			} else {
				t.QBlock(q)
			}
		}
		if nb == 0 { // K = 0: the product is zero
			for r := r0; r < r0+q.Rows; r++ {
				clear(c[r*ldc+c0 : r*ldc+c0+cols])
			}
		}
	}
}

// LoadU8 fills r with m rows of k unsigned bytes, row i at a[i*lda:],
// taken as they are: the activations of an integer product
// (MatMulInteger, QLinearMatMul), whose zero points the caller corrects
// with ColSums.
func (r *QRows) LoadU8(a []uint8, m, k, lda int) error {
	return load(r, a, m, k, lda, 0)
}

// LoadS8 is LoadU8 for int8 activations, stored as a+128 (a^0x80): the
// caller's zero point grows by 128.
func (r *QRows) LoadS8(a []int8, m, k, lda int) error {
	return load(r, a, m, k, lda, 0x80)
}

func load[T int8 | uint8](r *QRows, a []T, m, k, lda int, flip uint8) error {
	if m < 0 || k < 0 || lda < k || m > 0 && len(a) < (m-1)*lda+k {
		return fmt.Errorf("gemm: %d values for %d rows of %d (row stride %d)", len(a), m, k, lda)
	}
	ldu := kernels.PackedKLen(k)
	r.m, r.k, r.ldu, r.offOK, r.wide = m, k, ldu, false, false
	r.u = grow(r.u, paddedRows(m)*ldu)
	r.zp = grow(r.zp, m)
	r.scale = grow(r.scale, m)
	for i := 0; i < m; i++ {
		u := r.u[i*ldu : i*ldu+ldu]
		for j, v := range a[i*lda : i*lda+k] {
			b := uint8(v) ^ flip
			u[j] = b
			r.wide = r.wide || b > 128
		}
		clear(u[k:])
		r.zp[i], r.scale[i] = 0, 1
	}
	return nil
}

// ColSums returns Σ_k W[k][n] of the integer weights, n < N: what a zero
// point z of the activations takes from each output (z·ColSums()[n]).
func (q *QWeights) ColSums() []int32 { return q.colsum[:q.N] }

// QMatMulInt32 computes out[i*ldo+j] = Σ_k u[i][k]·W[k][j] in int32
// (modulo 2^32, as ONNX's integer products wrap) for rows loaded with
// LoadU8 or LoadS8 and integer weights (PackQInt, any parts). Every table
// gives the same sums: a table whose kernel is exact only for bytes up to
// 128 gets rows with larger bytes in two passes (min(u, 128) and the rest).
func (e *Engine) QMatMulInt32(qa *QRows, w *QWeights, out []int32, ldo int) error {
	m, n := qa.m, w.N
	if qa.k != w.K && m > 0 {
		return fmt.Errorf("gemm: rows of %d values against weights of K = %d", qa.k, w.K)
	}
	if w.Scheme == quant.PerBlock {
		return fmt.Errorf("gemm: integer products take per-tensor or per-channel weights")
	}
	if m == 0 || n == 0 {
		return nil
	}
	if ldo < n || len(out) < (m-1)*ldo+n {
		return fmt.Errorf("gemm: output of %d values for %d rows of %d (row stride %d)", len(out), m, n, ldo)
	}
	t := e.t
	splits := [][]uint8{qa.u}
	if e.splits(qa) {
		lo, hi := splitBytes.Get().(*[]uint8), splitBytes.Get().(*[]uint8)
		defer splitBytes.Put(lo)
		defer splitBytes.Put(hi)
		*lo, *hi = grow(*lo, len(qa.u)), grow(*hi, len(qa.u))
		wideSplit(qa.u, *lo, *hi)
		splits = [][]uint8{*lo, *hi}
	}
	parts := w.parts()
	panels := w.cols / kernels.PanelN
	ng := groups(panels, t.NP)
	mc := rowChunk(t.RowStep(), m)
	chunks := (m + mc - 1) / mc
	kq := qa.ldu / kernels.KGroup
	pstr := w.kp * kernels.PanelN
	nkb := 1
	if kcMax := max(1, e.kcBytes/(t.NP*64)); kq > kcMax && m > t.MR {
		nkb = (kq + kcMax - 1) / kcMax
	}
	passes := len(splits) * len(parts) * nkb
	// Each pass sums (u - QOffset)·W: add QOffset·colsum back per pass.
	back := t.QOffset * int32(len(splits))
	return e.run(chunks*ng, m*n*w.K*passes/nkb/QMACsPerUnit, func(u0, u1 int) {
		var scratch []int32
		q := new(kernels.QBlock)
		for unit := u0; unit < u1; unit++ {
			ch, g := unit/ng, unit%ng
			m0, m1 := ch*mc, min(m, (ch+1)*mc)
			p0, p1 := span(g, panels, ng)
			c0 := p0 * kernels.PanelN
			*q = kernels.QBlock{LDU: qa.ldu, PStr: pstr, NP: p1 - p0}
			width := q.NP * kernels.PanelN
			cols := min(n-c0, width)
			acc, ldacc := out[m0*ldo+c0:], ldo
			if cols < width {
				scratch = grow(scratch, (m1-m0)*width)
				acc, ldacc = scratch, width
			}
			q.AccStr = ldacc
			for pass := 0; pass < passes; pass++ {
				s, part, kb := pass/(nkb*len(parts)), pass/nkb%len(parts), pass%nkb
				g0, g1 := span(kb, kq, nkb)
				q.KQ = g1 - g0
				q.B = parts[part][p0*pstr+g0*64:]
				q.Flags = 0
				if pass > 0 {
					q.Flags = kernels.QLoadAcc
				}
				for r0 := m0; r0 < m1; r0 += t.MR {
					q.Rows = min(t.MR, m1-r0)
					q.U = splits[s][r0*qa.ldu+g0*4:]
					q.Acc = acc[(r0-m0)*ldacc:]
					t.QBlock(q)
				}
			}
			for r := m0; r < m1; r++ {
				row := out[r*ldo+c0 : r*ldo+c0+cols]
				src := acc[(r-m0)*ldacc:]
				for j := range row {
					row[j] = src[j] + back*w.colsum[c0+j]
				}
			}
		}
	})
}
