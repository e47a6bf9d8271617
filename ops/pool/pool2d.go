package pool

import (
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
)

// poolKind selects what pool2D computes.
type poolKind int

const (
	poolMax        poolKind = iota
	poolAvg                 // mean over the input elements a window covers
	poolAvgPadding          // mean counting padding as zeros
)

// tapCost is the cost, in the units of ops.ParallelFor's work, of one
// tap of a window or one element a scalar loop folds (a load and a
// compare or an add): ResNet-50's 3×3 MaxPool takes about 0.5 ns a tap
// here, where the sgemm kernel does about 50 multiply-adds a ns.
const tapCost = ops.ScalarCost / 2

// pool2D is max and average pooling of 2-D float32 planes, separably: for
// each output row it folds the input rows its windows cross into one
// scratch row (max or sum, column by column), then folds each window's
// columns of that row. A 3×3 window costs 2 operations per input column
// and 2 per output instead of 9 per output. Max gives the bits
// maxPoolND gives (the builtin max is exact in any order); sums add in
// another order than avgPoolND, so they agree within rounding. The output
// rows of every plane split across the engine's cores (ops.Context.ParallelRows),
// each row computed alone, so the split changes no bit.
func pool2D(x, y []float32, g *Geometry, kind poolKind, oc *ops.Context) error {
	if len(y) == 0 {
		return nil
	}
	H, W, OH, OW := g.In[0], g.In[1], g.Out[0], g.Out[1]
	dh, dw, kw, sw := g.Dilations[0], g.Dilations[1], g.Kernel[1], g.Strides[1]
	rows, cols := g.spans(0), g.spans(1)
	interior := poolInterior(cols, kw)
	negInf := float32(math.Inf(-1))
	folded := 0 // input elements the rows of a plane fold
	for _, rs := range rows {
		folded += W * rs.n
	}
	rowCost := tapCost * (folded/OH + OW*kw)
	tb := oc.Engine().Table()
	return oc.ParallelRows(g.Planes()*OH, rowCost, func(r0, r1 int) {
		tmp, pairs := oc.Scratch(W), oc.Scratch(W)
		defer oc.Free(tmp)
		defer oc.Free(pairs)
		for r := r0; r < r1; r++ {
			p, oh := r/OH, r%OH
			rs := rows[oh]
			xp := x[p*H*W : (p+1)*H*W]
			yr := y[r*OW : (r+1)*OW]
			if rs.n == 0 { // every window of the row lies in padding
				for ow, cs := range cols {
					switch kind {
					case poolMax:
						yr[ow] = negInf
					case poolAvg:
						yr[ow] = float32(math.NaN())
					case poolAvgPadding:
						yr[ow] = 0 / float32(rs.padded*cs.padded)
					}
				}
				continue
			}
			row := func(r int) []float32 {
				ih := rs.first + r*dh
				return xp[ih*W : (ih+1)*W]
			}
			if kind == poolMax {
				foldMax(tmp, rs.n, row, tb.MaxPair)
			} else {
				foldSum(tmp, rs.n, row)
			}
			switch kind {
			case poolMax:
				maxCols(tb, tmp, yr, cols, interior, kw, sw, dw, pairs)
			default:
				sumCols(tmp, yr, cols, interior, kw, sw, dw)
				if kind == poolAvg {
					for ow, cs := range cols {
						yr[ow] /= float32(rs.n * cs.n)
					}
				} else {
					for ow, cs := range cols {
						yr[ow] /= float32(rs.padded * cs.padded)
					}
				}
			}
		}
	})
}

// foldMax sets tmp to the columnwise max of rows row(0) to row(n-1), n
// >= 1, a pair of rows at a time on maxPair (kernels.MaxPair: the
// builtin max's bits).
func foldMax(tmp []float32, n int, row func(r int) []float32, maxPair func(dst, a, b []float32)) {
	if n == 1 {
		copy(tmp, row(0))
		return
	}
	maxPair(tmp, row(0), row(1))
	for r := 2; r < n; r++ {
		maxPair(tmp, tmp, row(r))
	}
}

// foldSum sets tmp to the columnwise sum of rows row(0) to row(n-1), n
// >= 1, in one pass for the common two and three rows.
func foldSum(tmp []float32, n int, row func(r int) []float32) {
	r0 := row(0)[:len(tmp)]
	start := 1
	switch {
	case n == 1:
		copy(tmp, r0)
		return
	case n >= 3:
		r1, r2 := row(1)[:len(tmp)], row(2)[:len(tmp)]
		for i := range tmp {
			tmp[i] = r0[i] + r1[i] + r2[i]
		}
		start = 3
	default:
		r1 := row(1)[:len(tmp)]
		for i := range tmp {
			tmp[i] = r0[i] + r1[i]
		}
		start = 2
	}
	for r := start; r < n; r++ {
		for i, v := range row(r)[:len(tmp)] {
			tmp[i] += v
		}
	}
}

// poolInterior returns the range [lo, hi) of output columns whose windows
// lie wholly inside the input.
func poolInterior(cols []poolSpan, k int) [2]int {
	lo, hi := 0, 0
	for lo < len(cols) && cols[lo].n != k {
		lo++
	}
	hi = lo
	for hi < len(cols) && cols[hi].n == k {
		hi++
	}
	return [2]int{lo, hi}
}

// maxCols sets yr[ow] to the maximum of row over window ow's columns (-Inf
// for a window over padding only), on tb's MaxPair and EveryOther.
func maxCols(tb *dispatch.Table, row, yr []float32, cols []poolSpan, interior [2]int, k, sw, dw int, pairs []float32) {
	edge := func(ow int) {
		cs := cols[ow]
		m := float32(math.Inf(-1))
		for c, j := cs.first, 0; j < cs.n; c, j = c+dw, j+1 {
			m = max(m, row[c])
		}
		yr[ow] = m
	}
	lo, hi := interior[0], interior[1]
	for ow := 0; ow < lo; ow++ {
		edge(ow)
	}
	if lo < hi {
		c := cols[lo].first
		switch {
		case (k == 2 || k == 3) && dw == 1:
			// The windows' maxima for every column on the vector
			// kernel, max(max(row[c], row[c+1]), row[c+2]) as the
			// builtin computes max(row[c], row[c+1], row[c+2]), then
			// the windows' columns picked out.
			last := c + (hi-lo-1)*sw
			n := last - c + 1
			p := pairs[:n]
			tb.MaxPair(p, row[c:c+n], row[c+1:c+1+n])
			if k == 3 {
				tb.MaxPair(p, p, row[c+2:c+2+n])
			}
			if sw == 2 { // a 2×2 or 3×3 pool of stride 2: a vector pass
				tb.EveryOther(yr[lo:hi], p)
				break
			}
			for ow, j := lo, 0; ow < hi; ow, j = ow+1, j+sw {
				yr[ow] = p[j]
			}
		default:
			for ow := lo; ow < hi; ow++ {
				edge(ow)
			}
		}
	}
	for ow := hi; ow < len(cols); ow++ {
		edge(ow)
	}
}

// sumCols sets yr[ow] to the sum of row over window ow's columns.
func sumCols(row, yr []float32, cols []poolSpan, interior [2]int, k, sw, dw int) {
	edge := func(ow int) {
		cs := cols[ow]
		var s float32
		for c, j := cs.first, 0; j < cs.n; c, j = c+dw, j+1 {
			s += row[c]
		}
		yr[ow] = s
	}
	lo, hi := interior[0], interior[1]
	for ow := 0; ow < lo; ow++ {
		edge(ow)
	}
	if lo < hi {
		c := cols[lo].first
		switch {
		case k == 3 && dw == 1:
			_ = row[c+(hi-lo-1)*sw+2]
			for ow := lo; ow < hi; ow, c = ow+1, c+sw {
				yr[ow] = row[c] + row[c+1] + row[c+2]
			}
		case k == 2 && dw == 1:
			_ = row[c+(hi-lo-1)*sw+1]
			for ow := lo; ow < hi; ow, c = ow+1, c+sw {
				yr[ow] = row[c] + row[c+1]
			}
		default:
			for ow := lo; ow < hi; ow++ {
				edge(ow)
			}
		}
	}
	for ow := hi; ow < len(cols); ow++ {
		edge(ow)
	}
}
