package gemm

import (
	"fmt"
	"sync"

	"github.com/quantserve/quantserve/kernels"
)

// The float32 products: the kernels' row tiles over packed weight panels,
// finished as each tile is written.

// MatMul computes c (m×N, row stride N) = a (m×K, row stride K) · w with
// the float kernels.
func (e *Engine) MatMul(a []float32, m int, w *FWeights, c []float32) error {
	return e.MatMulStrided(a, m, w.K, w, c, w.N)
}

// MatMulStrided computes c[i*ldc+j] = Σ_k a[i*lda+k]·W[k][j] for i < m,
// j < N. Nothing else of c is written.
func (e *Engine) MatMulStrided(a []float32, m, lda int, w *FWeights, c []float32, ldc int) error {
	k := w.K
	if m < 0 || m > 0 && (lda < k || len(a) < (m-1)*lda+k) {
		return fmt.Errorf("gemm: %d values for %d rows of %d (row stride %d)", len(a), m, k, lda)
	}
	return e.matMulF(a, m, lda, nil, w, c, ldc, nil)
}

// MatMulSegments computes c[i*ldc+j] = Σ_k A[i][k]·W[k][j] for i < m,
// j < N, where A's K columns are len(segs) segments of equal length
// L = K/len(segs), each read in place: A[i][s·L+t] = a[segs[s]+i*lda+t]
// for t < L. Rows may overlap (lda < L): a convolution's rows read from
// its channels-last image, whose kernel rows are segments and whose
// output positions are rows lda apart, multiply with no im2col copy.
// Nothing of c but the product is written.
func (e *Engine) MatMulSegments(a []float32, m, lda int, segs []int, w *FWeights, c []float32, ldc int) error {
	return e.MatMulSegmentsFinish(a, m, lda, segs, w, c, ldc, nil)
}

// matMulF is MatMulStrided (segs nil) and MatMulSegments, their
// operands checked but for c.
func (e *Engine) matMulF(a []float32, m, lda int, segs []int, w *FWeights, c []float32, ldc int, fin *Finish) error {
	k, n := w.K, w.N
	if m == 0 || n == 0 {
		return nil
	}
	if ldc < n || len(c) < (m-1)*ldc+n {
		return fmt.Errorf("gemm: output of %d values for %d rows of %d (row stride %d)", len(c), m, n, ldc)
	}
	if err := fin.check(m, n); err != nil {
		return err
	}
	if fin.inPlace(c) { // its K blocks write partial sums over the residual
		return fmt.Errorf("gemm: a float product's finish residual is its output")
	}
	t := e.t
	panels := (n + kernels.PanelN - 1) / kernels.PanelN
	// One row (a recurrent step, a batch of one) runs on the table's row
	// kernel, rowPanels panels a unit.
	row := m == 1 && segs == nil
	ng := groups(panels, t.FNP)
	if row {
		ng = groups(panels, rowPanels)
	}
	mc := rowChunk(t.FMR, m)
	chunks := (m + mc - 1) / mc
	pstr := k * kernels.PanelN
	// K blocks: even, each under kcBytes of a panel group's packed
	// weights; with segments, runs of whole segments as long, or each
	// segment split so when one is longer.
	kcMax := k
	if m > t.FMR {
		kcMax = max(1, e.kcBytes/(t.FNP*64))
	}
	j := fJobs.Get().(*fJob)
	j.e, j.a, j.lda, j.w, j.c, j.ldc, j.m = e, a, lda, w, c, ldc, m
	j.panels, j.ng, j.mc, j.pstr = panels, ng, mc, pstr
	j.segs, j.seg, j.spb, j.nkb, j.fin = segs, 0, 0, 1, fin
	j.touch = touches(m, n, mc)
	j.row = row
	if fin != nil && fin.Res == nil && t.FFinish && n%kernels.PanelN != 0 {
		// The padded last panel is finished in the kernel too when no
		// residual is added (its rows would be read past their
		// columns): on the bias padded with zeros to whole panels, the
		// columns past the product's discarded.
		j.padBias = append(j.padBias[:0], fin.Bias[:n]...)
		j.padBias = append(j.padBias, make([]float32, panels*kernels.PanelN-n)...)
	}
	switch {
	case segs == nil:
		if k > kcMax {
			j.nkb = (k + kcMax - 1) / kcMax
		}
		j.pieces = j.nkb
	case k/len(segs) <= kcMax:
		j.seg = k / len(segs)
		j.spb = max(1, kcMax/max(j.seg, 1))
		j.pieces = (len(segs) + j.spb - 1) / j.spb
	default:
		j.seg = k / len(segs)
		j.nkb = (j.seg + kcMax - 1) / kcMax
		j.pieces = len(segs) * j.nkb
	}
	err := e.run(chunks*ng, m*n*k, j.run)
	*j = fJob{run: j.run, padBias: j.padBias[:0]} // the pool keeps no operands alive
	fJobs.Put(j)
	return err
}

// fJob is one MatMulStrided call, pooled with the method value the engine
// runs, as qJob is.
type fJob struct {
	e                         *Engine
	a                         []float32
	lda                       int
	w                         *FWeights
	c                         []float32
	ldc, m                    int
	panels, ng, mc, pstr, nkb int
	// segs are the offsets in a of the segments of seg columns of K
	// (MatMulSegments; nil: a's rows hold K columns each), run spb of
	// them a block, or, when spb is 0, each as nkb blocks. pieces is the
	// number of K blocks.
	segs     []int
	seg, spb int
	pieces   int
	fin      *Finish // nil: none (MatMulStridedFinish)
	// padBias is fin's bias padded with zeros to whole panels when the
	// kernel finishes the padded last panel too (no residual); empty
	// otherwise.
	padBias []float32
	touch   bool // touches(m, n, mc)
	row     bool // the block is one row, on the table's FRow
	run     func(u0, u1 int)
}

// rowPanels is how many panels a unit of a one-row product holds: the
// AVX-512 row kernel's widest call.
const rowPanels = 8

// piece returns K block kb of j: its columns [k0, k1), where in a row of
// a (at i*lda) column k0 lies, and the block's segments (offsets from a
// row's start) when it reads several as they lie.
func (j *fJob) piece(kb int) (k0, k1, at int, segs []int) {
	switch {
	case j.segs == nil:
		k0, k1 = span(kb, j.w.K, j.nkb)
		return k0, k1, k0, nil
	case j.spb > 0:
		s0 := kb * j.spb
		s1 := min(s0+j.spb, len(j.segs))
		return s0 * j.seg, s1 * j.seg, 0, j.segs[s0:s1]
	}
	s, p := kb/j.nkb, kb%j.nkb
	t0, t1 := span(p, j.seg, j.nkb)
	return s*j.seg + t0, s*j.seg + t1, j.segs[s] + t0, nil
}

var fJobs = sync.Pool{New: func() any {
	j := new(fJob)
	j.run = j.chunks
	return j
}}

// fTask is the scratch of one goroutine's run of an fJob's units: the
// kernel's argument and the padded last panel's block. Small
// convolutions multiply thousands of times per image.
type fTask struct {
	f       kernels.FBlock
	scratch []float32
}

var fTasks = sync.Pool{New: func() any { return new(fTask) }}

// chunks runs units [u0, u1) of j: for each, one row chunk of one panel
// group.
func (j *fJob) chunks(u0, u1 int) {
	t, a, lda, w, c, ldc, m := j.e.t, j.a, j.lda, j.w, j.c, j.ldc, j.m
	n := w.N
	panels, ng, mc, pstr := j.panels, j.ng, j.mc, j.pstr
	pieces := j.pieces
	task := fTasks.Get().(*fTask)
	defer fTasks.Put(task)
	f := &task.f
	// The tiles' shares of what they draw (Finish.Draw): one per tile of
	// every K block of every unit (a tile of fewer rows than the
	// kernel's, or of one panel, draws none: its share stays cold).
	tilesPer := (mc + t.FMR - 1) / t.FMR
	drawParts := (m + mc - 1) / mc * ng * pieces * tilesPer
	var draw [2][]float32
	if j.fin != nil && t.FDraws {
		draw = j.fin.Draw
	}
	drawing := len(draw[0])+len(draw[1]) > 0
	for unit := u0; unit < u1; unit++ {
		ch, g := unit/ng, unit%ng
		m0, m1 := ch*mc, min(m, (ch+1)*mc)
		p0, p1 := span(g, panels, ng)
		c0 := p0 * kernels.PanelN
		if g == 0 && j.touch {
			j.e.touch(c, ldc, j.fin, m0, m1, n)
		}
		*f = kernels.FBlock{LDA: lda, PStr: pstr, NP: p1 - p0}
		width := f.NP * kernels.PanelN
		cols := min(n-c0, width)
		// The padded last panel writes through a scratch block of the
		// chunk's rows, copied out after its last K block.
		out, ldo, o0 := c, ldc, c0
		padFinish := cols < width && len(j.padBias) > 0 // finished on the padded bias
		if cols < width {
			task.scratch = grow(task.scratch, (m1-m0)*width)
			out, ldo, o0 = task.scratch[:(m1-m0)*width], width, 0
		}
		full := (m1 - m0) / t.FMR // tiles of the kernel's full height
		for kb := 0; kb < pieces; kb++ {
			var next aheadBlock
			hasNext := false
			if full > 1 { // tiles after the first to draw the next block
				next, hasNext = j.next(g, kb)
			}
			k0, k1, at, segs := j.piece(kb)
			f.K = k1 - k0
			f.Segs, f.SegK = segs, 0
			if segs != nil {
				f.SegK = j.seg
			}
			f.B = w.packed[p0*pstr+k0*kernels.PanelN:]
			f.Flags = 0
			if kb > 0 {
				f.Flags = kernels.FLoadC
			}
			finish := j.fin != nil && kb == pieces-1 && (cols == width || padFinish)
			for r0 := m0; r0 < m1; r0 += t.FMR {
				f.Rows = min(t.FMR, m1-r0)
				f.Ahead = nil
				ti := (r0 - m0) / t.FMR
				if ti > 0 { // the first tile read the block's weights
					f.Flags |= kernels.FCached
					// The next weights only from a full panel group's
					// tiles, as before narrower groups' loops drew at
					// all (nor timed drawing them since).
					if hasNext && ti < full && !drawing && f.NP == t.FNP {
						f.Ahead = next.part(w.packed, pstr, ti-1, full-1)
					}
				}
				if drawing {
					f.Ahead = drawPart(draw, (unit*pieces+kb)*tilesPer+ti, drawParts)
				}
				f.A = a[r0*lda+at:]
				f.LDA = lda
				if cols < width {
					f.C, f.LDC = out[(r0-m0)*ldo+o0:], ldo
				} else {
					f.C, f.LDC = c[r0*ldc+c0:], ldc
				}
				if finish {
					j.fin.block(f, r0, c0)
					if padFinish {
						f.Bias = j.padBias[c0:]
					}
					if t.FFinish {
						f.Flags |= kernels.FFinish
					}
				}
				if j.row {
					t.FRow(f)
				} else {
					t.FBlock(f)
				}
				if finish && !t.FFinish { // after the tile, on the table's vector pass
					f.FinishRows(t.ConvFinish)
				}
			}
		}
		if cols < width {
			t.CopyBlock(c[m0*ldc+c0:], ldc, task.scratch, width, m1-m0, cols)
			if !padFinish {
				j.e.finishRows(j.fin, c, ldc, m0, m1, c0, cols)
			}
		}
	}
	*f = kernels.FBlock{} // the pool keeps no operands alive
}

// aheadBlock is the packed weights of one block of a product: panels
// [p0, p0+np) of K columns [k0, k1).
type aheadBlock struct{ p0, np, k0, k1 int }

// next returns the block the unit of panel group g reads after its K
// block kb: its next K block, or the next group's first; none after the
// last group's last. A block's first tile streams its weights from
// memory; the tiles after it read them from the cache, so they draw the
// next block's weights (FBlock.Ahead), each a share, and the memory
// works while the kernel does.
func (j *fJob) next(g, kb int) (aheadBlock, bool) {
	switch {
	case kb+1 < j.pieces:
		kb++
	case g+1 < j.ng:
		g, kb = g+1, 0
	default:
		return aheadBlock{}, false
	}
	p0, p1 := span(g, j.panels, j.ng)
	k0, k1, _, _ := j.piece(kb)
	return aheadBlock{p0, p1 - p0, k0, k1}, true
}

// part returns share i of parts of the block's weights in packed
// (panels pstr apart), cut short at the end of a panel.
func (b aheadBlock) part(packed []float32, pstr, i, parts int) []float32 {
	l := (b.k1 - b.k0) * kernels.PanelN
	total := b.np * l
	if total == 0 {
		return nil
	}
	s0, s1 := i*total/parts, (i+1)*total/parts
	q := s0 / l
	at := (b.p0+q)*pstr + b.k0*kernels.PanelN
	return packed[at+s0-q*l : at+min(s1, (q+1)*l)-q*l]
}

// drawPart returns share i of parts of the regions of draw (FBlock.Ahead
// of a tile): the parts divided between the regions as their lengths
// are, at least one each when there are two parts or more, and each
// region's parts even shares of it.
func drawPart(draw [2][]float32, i, parts int) []float32 {
	l0, l1 := len(draw[0]), len(draw[1])
	if l0+l1 == 0 {
		return nil
	}
	p0 := (parts*l0 + (l0+l1)/2) / (l0 + l1) // region 0's parts
	switch {
	case l1 > 0 && p0 == parts && parts > 1:
		p0--
	case l0 > 0 && p0 == 0:
		p0 = 1
	}
	if i < p0 {
		return draw[0][i*l0/p0 : (i+1)*l0/p0]
	}
	i, n := i-p0, parts-p0
	return draw[1][i*l1/n : (i+1)*l1/n]
}
