package conv

import (
	"fmt"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// lazyRows is rows for an image nothing was prepared for: each row's
// taps are read from the image twice, for the row's range (and whether
// it is finite: a row holding NaN or ±Inf is the input error
// QuantizeRows's ErrNotFinite makes, naming the row within the tile),
// then for its bytes, with the row's parameters or q's static ones (a
// grid's on its own kernel: gemm.Activations.Quantize). A grid's rows are
// read once: its values are finite (gemm.GridActivations).
func (q *qimage) lazyRows(tb *dispatch.Table, dst *gemm.QRows, u []uint8, ldu, b, gi, p0, n int) error {
	t := q.t
	g := t.g
	c, cg := g.C, g.cg()
	kk := len(t.lin)
	k := kk * cg
	xg := q.x[b*q.img+gi*cg : (b+1)*q.img]
	act := q.actOf(b)
	static, grid := act != nil, act.Grid()
	var inv float32
	var zp int32
	if static {
		if err := dst.SetStatic(act); err != nil {
			return err
		}
		_, inv, zp = act.Params()
	}
	quantize := func(x []float32, u []uint8) { // with the row's inv and zp
		if static {
			act.Quantize(tb, x, u)
		} else {
			tb.QuantizeU8(x, inv, zp, u)
		}
	}
	pos := t.pos(p0)
	w := t.run * cg // values per run
	for r := 0; r < n; r++ {
		row := u[r*ldu : r*ldu+k]
		var lo, hi float32 // a tap in the padding reads 0
		finite := true
		switch {
		case grid: // its values are finite, and its parameters fixed
		case pos.interior:
			for _, off := range t.runLin {
				at := (pos.lin + off) * c
				l, h, ok := tb.MinMax(xg[at : at+w])
				lo, hi, finite = min(lo, l), max(hi, h), finite && ok
			}
		default:
			for kidx := 0; kidx < kk; kidx++ {
				if at := pos.at(kidx); at >= 0 {
					l, h, ok := tb.MinMax(xg[at*c : at*c+cg])
					lo, hi, finite = min(lo, l), max(hi, h), finite && ok
				}
			}
		}
		if !finite {
			return ops.InputErrorf("%v", fmt.Errorf("%w (row %d)", gemm.ErrNotFinite, r))
		}
		if !static {
			inv, zp = dst.SetRowRange(r, lo, hi)
		}
		if pos.interior {
			for j, off := range t.runLin {
				at := (pos.lin + off) * c
				quantize(xg[at:at+w], row[j*w:(j+1)*w])
			}
		} else {
			for kidx := 0; kidx < kk; kidx++ {
				seg := row[kidx*cg : (kidx+1)*cg]
				if at := pos.at(kidx); at >= 0 {
					quantize(xg[at*c:at*c+cg], seg)
				} else {
					fill(seg, uint8(zp)) // quantize(0)
				}
			}
		}
		pos.next()
	}
	return nil
}
