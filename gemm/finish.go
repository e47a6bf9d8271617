package gemm

import "github.com/quantserve/quantserve/kernels"

// Finish is what QMatMulRowsFinish does to each output value v = c[i*ldc+j]
// of the product once it is complete, as kernels.ConvFinish does:
//
//	v = (v + Bias[j]) + Res[i*LDR+j]   (Res nil: no term)
//	v = clamp(v, Lo, Hi)
//
// Bias holds N values; Res, when not nil, a row of N for every row of the
// product, LDR apart.
type Finish struct {
	Bias   []float32
	Res    []float32
	LDR    int
	Lo, Hi float32
}

// qOutFinish is qOut finishing the block's outputs as fin says (nil:
// not at all): in the kernel when the table takes kernels.QFinish and the
// block writes c itself, after it on the table's ConvFinish otherwise.
func (e *Engine) qOutFinish(q *kernels.QBlock, fin *Finish, c []float32, ldc, r0, c0, cols int, tile *[]float32) {
	if fin == nil {
		e.qOut(q, c, ldc, r0, c0, cols, tile)
		return
	}
	if e.t.QFinish && q.Flags&kernels.QOutChannel != 0 && cols == q.NP*kernels.PanelN {
		q.Flags |= kernels.QFinish
		q.Bias, q.Res, q.LDR, q.Lo, q.Hi = fin.Bias[c0:], nil, 0, fin.Lo, fin.Hi
		if fin.Res != nil {
			q.Res, q.LDR = fin.Res[r0*fin.LDR+c0:], fin.LDR
		}
		e.qOut(q, c, ldc, r0, c0, cols, tile)
		q.Flags &^= kernels.QFinish
		return
	}
	e.qOut(q, c, ldc, r0, c0, cols, tile)
	e.finishRows(fin, c, ldc, r0, r0+q.Rows, c0, cols)
}

// finishRows finishes rows r0..r1 of c, columns c0..c0+cols, as fin says
// (nil: not at all), on the table's ConvFinish.
func (e *Engine) finishRows(fin *Finish, c []float32, ldc, r0, r1, c0, cols int) {
	if fin == nil {
		return
	}
	for r := r0; r < r1; r++ {
		var res []float32
		if fin.Res != nil {
			res = fin.Res[r*fin.LDR+c0:][:cols]
		}
		e.t.ConvFinish(c[r*ldc+c0:][:cols], fin.Bias[c0:][:cols], res, fin.Lo, fin.Hi)
	}
}
