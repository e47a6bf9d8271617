package gemm

import (
	"fmt"

	"github.com/quantserve/quantserve/kernels"
)

// Finish is what QMatMulRowsFinish does to each output value v = c[i*ldc+j]
// of the product once it is complete, as kernels.ConvFinish does:
//
//	v = (v + Bias[j]) + Res[i*LDR+j]   (Res nil: no term)
//	v = clamp(v, Lo, Hi)
//
// Bias holds N values; Res, when not nil, a row of N for every row of the
// product, LDR apart. Res may be the output itself (QMatMulRowsFinish's
// c, at its row stride): each value is then written over its own
// residual, which a layer that is its residual's last reader does to
// save the writes of a cold output's lines. Otherwise it must not
// overlap the output.
//
// Draw, which changes no value, is memory the float kernels draw toward
// the core's cache while the product runs, on tables whose kernels draw
// (dispatch.Table.FDraws; the others ignore it): the regions taken one
// after the other, a share each tile. A caller that writes a cold output
// a tile at a time gives each tile's product the next tile's output (and
// residual) rows, so that their lines come from memory while this tile
// multiplies, where a pass touching them before the product would wait
// for them with the core idle.
type Finish struct {
	Bias   []float32
	Res    []float32
	LDR    int
	Lo, Hi float32
	Draw   [2][]float32
}

// qOutFinish is qOut finishing the block's outputs as fin says (nil:
// not at all): in the kernel when the table takes kernels.QFinish and the
// block writes c itself, after it on the table's ConvFinish otherwise
// (through the scratch tile when the residual is c itself).
func (e *Engine) qOutFinish(q *kernels.QBlock, fin *Finish, c []float32, ldc, r0, c0, cols int, tile *[]float32) {
	if fin == nil {
		e.qOut(q, c, ldc, r0, c0, cols, tile)
		return
	}
	if e.t.QFinish && q.Flags&kernels.QOutChannel != 0 && cols == q.NP*kernels.PanelN {
		q.Flags |= kernels.QFinish
		q.Bias, q.Res = fin.tile(r0, c0)
		q.LDR, q.Lo, q.Hi = fin.LDR, fin.Lo, fin.Hi
		e.qOut(q, c, ldc, r0, c0, cols, tile)
		q.Flags &^= kernels.QFinish
		return
	}
	if fin.inPlace(c) {
		// Written and then finished, the tile would overwrite its
		// residual before reading it: the sums go through a scratch tile,
		// finished from the residual into c.
		scratch, w := e.qScratch(q, tile)
		bias, res := fin.tile(r0, c0)
		kernels.FinishRows(e.t.ConvFinish, scratch, w, q.Rows, cols, bias, res, fin.LDR, fin.Lo, fin.Hi)
		e.t.CopyBlock(c[r0*ldc+c0:], ldc, scratch, w, q.Rows, cols)
		return
	}
	e.qOut(q, c, ldc, r0, c0, cols, tile)
	e.finishRows(fin, c, ldc, r0, r0+q.Rows, c0, cols)
}

// inPlace reports whether fin's residual is the output c itself.
func (fin *Finish) inPlace(c []float32) bool {
	return fin != nil && len(fin.Res) > 0 && len(c) > 0 && &fin.Res[0] == &c[0]
}

// apart returns a finish like fin, whose residual is the product's own
// output (m rows of n values), reading a copy of the residual's values:
// for a product that writes its sums before it finishes them. The copy
// holds only the product's own columns (a grouped convolution's other
// groups' are other cores' to write).
func (fin *Finish) apart(m, n int) *Finish {
	own := *fin
	own.Res, own.LDR = make([]float32, m*n), n
	for i := range m {
		copy(own.Res[i*n:(i+1)*n], fin.Res[i*fin.LDR:])
	}
	return &own
}

// finishRows finishes rows r0..r1 of c, columns c0..c0+cols, as fin says
// (nil: not at all), on the table's ConvFinish.
func (e *Engine) finishRows(fin *Finish, c []float32, ldc, r0, r1, c0, cols int) {
	if fin == nil {
		return
	}
	bias, res := fin.tile(r0, c0)
	kernels.FinishRows(e.t.ConvFinish, c[r0*ldc+c0:], ldc, r1-r0, cols, bias, res, fin.LDR, fin.Lo, fin.Hi)
}

// tile returns the bias and the residual rows (nil: none) of the outputs
// from row r0 and column c0 on.
func (fin *Finish) tile(r0, c0 int) (bias, res []float32) {
	if fin.Res != nil {
		res = fin.Res[r0*fin.LDR+c0:]
	}
	return fin.Bias[c0:], res
}

// check reports a finish (nil: none) too short for m rows of n columns.
func (fin *Finish) check(m, n int) error {
	switch {
	case fin == nil:
		return nil
	case len(fin.Bias) < n:
		return fmt.Errorf("gemm: finish bias of %d values for %d columns", len(fin.Bias), n)
	case fin.Res != nil && (fin.LDR < n || len(fin.Res) < (m-1)*fin.LDR+n):
		return fmt.Errorf("gemm: finish residual of %d values for %d rows of %d (row stride %d)", len(fin.Res), m, n, fin.LDR)
	}
	return nil
}

// block gives f, the last K block of the row tile at row r0 and column
// c0 of a product, the finish's operands: bias, residual rows and clamp.
func (fin *Finish) block(f *kernels.FBlock, r0, c0 int) {
	f.Bias, f.Res = fin.tile(r0, c0)
	f.LDR, f.Lo, f.Hi = fin.LDR, fin.Lo, fin.Hi
}

// MatMulStridedFinish is MatMulStrided whose outputs are finished as fin
// says (nil: not at all), each row tile as its last K block is written:
// in the kernel's registers on tables whose FFinish says so, on the
// table's ConvFinish right after the tile otherwise, the same bits
// either way.
func (e *Engine) MatMulStridedFinish(a []float32, m, lda int, w *FWeights, c []float32, ldc int, fin *Finish) error {
	k := w.K
	if m < 0 || m > 0 && (lda < k || len(a) < (m-1)*lda+k) {
		return fmt.Errorf("gemm: %d values for %d rows of %d (row stride %d)", len(a), m, k, lda)
	}
	return e.matMulF(a, m, lda, nil, w, c, ldc, fin)
}

// MatMulSegmentsFinish is MatMulSegments whose outputs are finished as
// fin says (nil: not at all), as MatMulStridedFinish finishes its own.
func (e *Engine) MatMulSegmentsFinish(a []float32, m, lda int, segs []int, w *FWeights, c []float32, ldc int, fin *Finish) error {
	k := w.K
	if len(segs) == 0 || k%len(segs) != 0 {
		return fmt.Errorf("gemm: %d segments do not divide K = %d", len(segs), k)
	}
	if m < 0 || lda < 0 {
		return fmt.Errorf("gemm: %d rows of row stride %d", m, lda)
	}
	if m > 0 {
		l := k / len(segs)
		for _, off := range segs {
			if off < 0 || len(a) < off+(m-1)*lda+l {
				return fmt.Errorf("gemm: a segment at %d of %d rows of %d (row stride %d) past %d values", off, m, l, lda, len(a))
			}
		}
	}
	return e.matMulF(a, m, lda, segs, w, c, ldc, fin)
}
