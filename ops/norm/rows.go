package norm

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/reduce"
	"github.com/quantserve/quantserve/tensor"
)

// The transformer normalizations, LayerNormalization (opset 17) and
// RMSNormalization (opset 23), normalize X over its axes from axis on
// (the "rows" of X viewed as [outer, inner]), in float32 for FP32, FP16
// and BF16 inputs (stash_type 1) and in float64 for FP64, one pass over a
// row for its statistics and one for the output.

// lnRows views a tensor as [outer, inner] rows normalized from axis on.
type lnRows struct {
	shape        []int
	axis         int
	outer, inner int
	statShape    []int // shape[:axis] followed by ones: Mean's and InvStdDev's
}

func newLNRows(x *tensor.Tensor, axis int64) (*lnRows, error) {
	if x.Rank() == 0 {
		return nil, ops.InputErrorf("normalization needs a tensor of rank >= 1")
	}
	a, err := ops.NormAxis(axis, x.Rank())
	if err != nil {
		return nil, err
	}
	nr := &lnRows{shape: x.Shape, axis: a, outer: 1, inner: 1}
	for i, d := range x.Shape {
		if i < a {
			nr.outer *= d
			nr.statShape = append(nr.statShape, d)
		} else {
			nr.inner *= d
			nr.statShape = append(nr.statShape, 1)
		}
	}
	return nr, nil
}

// lnParam is a scale or bias broadcast over X: row r reads
// v[r*stride : r*stride+inner] (stride 0 when every row shares it).
type lnParam[T float32 | float64] struct {
	v      []T
	stride int
}

// lnParamOf broadcasts p (data: its values), which must broadcast
// unidirectionally to X, for the rows: once over the normalized axes when
// it does not vary along the others, else over all of X. The rows only
// read it, so a parameter of as many values as its broadcast (a
// transformer's scale and bias of the hidden size) is used as it is.
func lnParamOf[T float32 | float64](nr *lnRows, p *tensor.Tensor, data []T) (lnParam[T], error) {
	lead := len(nr.shape) - p.Rank() // X's axes p lacks
	if lead < 0 {
		return lnParam[T]{}, ops.InputErrorf("a scale or bias of shape %s does not broadcast to %s", tensor.ShapeString(p.Shape), tensor.ShapeString(nr.shape))
	}
	rowsOnly := true // p is 1 along every axis before the normalized ones
	for i, d := range p.Shape {
		if lead+i < nr.axis && d != 1 {
			rowsOnly = false
		}
	}
	if rowsOnly {
		sub := p.Shape[max(0, nr.axis-lead):]
		v, err := broadcastRead(data, sub, nr.shape[nr.axis:])
		if err != nil {
			return lnParam[T]{}, err
		}
		return lnParam[T]{v: v}, nil
	}
	v, err := broadcastRead(data, p.Shape, nr.shape)
	if err != nil {
		return lnParam[T]{}, err
	}
	return lnParam[T]{v: v, stride: nr.inner}, nil
}

// broadcastRead returns data (of shape) broadcast unidirectionally to
// out, for reading only: data itself when the broadcast repeats nothing
// (as many values as out, each in its place), else ops.BroadcastTo's
// copy.
func broadcastRead[T float32 | float64](data []T, shape, out []int) ([]T, error) {
	if n, err := tensor.NumElements(out); err == nil && len(data) == n {
		bs, err := ops.BroadcastShape(shape, out)
		if err != nil {
			return nil, err
		}
		if ops.EqualShape(bs, out) {
			return data, nil
		}
	}
	return ops.BroadcastTo(data, shape, out)
}

// row returns the parameter's values for row r (nil if absent).
func (p lnParam[T]) row(r, inner int) []T {
	if p.v == nil {
		return nil
	}
	return p.v[r*p.stride : r*p.stride+inner]
}

// layerNormRows computes y = (x - mean)·invStd·scale + bias row by row,
// recording each row's mean and 1/sqrt(variance + eps): the float64 rows
// (float32 rows run on the kernels: layerNormRows32).
func layerNormRows[T float32 | float64](x, y []T, nr *lnRows, scale, bias lnParam[T], eps T, mean, inv []float32, oc *ops.Context) error {
	inner := nr.inner
	return oc.ParallelRows(nr.outer, 2*inner*ops.ScalarCost, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			xr := x[r*inner : (r+1)*inner]
			yr := y[r*inner : r*inner+len(xr)]
			m, v := rowMeanVar(xr)
			is := T(1 / math.Sqrt(v+float64(eps)))
			mean[r], inv[r] = float32(m), float32(is)
			mt := T(m)
			sc, b := scale.row(r, inner), bias.row(r, inner)
			sc = sc[:len(xr)]
			if b == nil {
				for j, xv := range xr {
					yr[j] = (xv - mt) * is * sc[j]
				}
				continue
			}
			b = b[:len(xr)]
			for j, xv := range xr {
				yr[j] = (xv-mt)*is*sc[j] + b[j]
			}
		}
	})
}

// layerNormRows32 is layerNormRows on float32 rows, each a pass for its
// statistics and one to normalize it on the engine's vector kernels, a
// block of lnBlock rows at a time: every row's sums, then their means and
// inverse deviations, then the rows normalized. A row's square root and
// division waited on its sums, and the next row's sums on them; across a
// block they overlap. Each row's values are computed as one at a time.
func layerNormRows32(x, y []float32, nr *lnRows, scale, bias lnParam[float32], eps float32, mean, inv []float32, oc *ops.Context) error {
	inner := nr.inner
	tb := oc.Engine().Table()
	return oc.ParallelRows(nr.outer, 2*inner*ops.VectorCost, func(r0, r1 int) {
		var s1, s2 [lnBlock]float64
		for b0 := r0; b0 < r1; b0 += lnBlock {
			b1 := min(b0+lnBlock, r1)
			if inner > 0 {
				for r := b0; r < b1; r++ {
					xr := x[r*inner : (r+1)*inner]
					s1[r-b0], s2[r-b0] = tb.LayerNormSums(xr, xr[0])
				}
			}
			for r := b0; r < b1; r++ {
				m, is := float32(math.NaN()), float32(math.NaN())
				if inner > 0 {
					m1 := s1[r-b0] / float64(inner)
					v := max(s2[r-b0]/float64(inner)-m1*m1, 0)
					m, is = float32(float64(x[r*inner])+m1), float32(1/math.Sqrt(v+float64(eps)))
				}
				mean[r], inv[r] = m, is
			}
			for r := b0; r < b1; r++ {
				tb.LayerNormApply(y[r*inner:(r+1)*inner], x[r*inner:(r+1)*inner], scale.row(r, inner), bias.row(r, inner), mean[r], inv[r])
			}
		}
	})
}

// lnBlock is how many rows layerNormRows32 takes the statistics of
// before it normalizes them.
const lnBlock = 8

// rows32 runs row on each row r of x and of y (nr.inner values each),
// rows split across the engine's cores, each costing two vector passes.
func rows32(x, y []float32, nr *lnRows, oc *ops.Context, row func(r int, xr, yr []float32)) error {
	inner := nr.inner
	return oc.ParallelRows(nr.outer, 2*inner*ops.VectorCost, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			xr := x[r*inner : (r+1)*inner]
			row(r, xr, y[r*inner:r*inner+len(xr)])
		}
	})
}

// rmsNormRows computes y = x / sqrt(mean(x²) + eps) · scale row by row.
func rmsNormRows[T float32 | float64](x, y []T, nr *lnRows, scale lnParam[T], eps T, oc *ops.Context) error {
	inner := nr.inner
	return oc.ParallelRows(nr.outer, 2*inner*ops.ScalarCost, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			xr := x[r*inner : (r+1)*inner]
			yr := y[r*inner : r*inner+len(xr)]
			ms := reduce.RowSumSquares(xr) / float64(inner)
			is := T(1 / math.Sqrt(ms+float64(eps)))
			sc := scale.row(r, inner)[:len(xr)]
			for j, xv := range xr {
				yr[j] = xv * is * sc[j]
			}
		}
	})
}

// rmsNormRows32 is rmsNormRows on float32 rows on the engine's vector
// kernels, as layerNormRows32 runs: the sum of squares is
// LayerNormSums's with no shift, the row LayerNormApply's with mean 0
// and no bias, ((x - 0)·inv)·scale, the product rmsNormRows rounds.
func rmsNormRows32(x, y []float32, nr *lnRows, scale lnParam[float32], eps float32, oc *ops.Context) error {
	inner := nr.inner
	tb := oc.Engine().Table()
	return rows32(x, y, nr, oc, func(r int, xr, yr []float32) {
		_, s2 := tb.LayerNormSums(xr, 0)
		is := float32(1 / math.Sqrt(s2/float64(inner)+float64(eps)))
		tb.LayerNormApply(yr, xr, scale.row(r, inner), nil, 0, is)
	})
}

// rowMeanVar returns the mean and (population) variance of x in one pass:
// sums of d = x - x[0] and d² in T with independent partials per block,
// blocks added in float64. Shifting by a sample keeps Σd² - (Σd)²/n from
// cancelling when the mean is large against the spread.
func rowMeanVar[T float32 | float64](x []T) (mean, variance float64) {
	n := len(x)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	shift := x[0]
	var s1, s2 float64
	for len(x) > 0 {
		b := x[:min(len(x), reduce.Block)]
		x = x[len(b):]
		var a0, a1, a2, a3, q0, q1, q2, q3 T
		for len(b) >= 4 {
			v := b[:4:4]
			d0, d1, d2, d3 := v[0]-shift, v[1]-shift, v[2]-shift, v[3]-shift
			a0 += d0
			a1 += d1
			a2 += d2
			a3 += d3
			q0 += d0 * d0
			q1 += d1 * d1
			q2 += d2 * d2
			q3 += d3 * d3
			b = b[4:]
		}
		for _, v := range b {
			d := v - shift
			a0 += d
			q0 += d * d
		}
		s1 += float64((a0 + a1) + (a2 + a3))
		s2 += float64((q0 + q1) + (q2 + q3))
	}
	m1 := s1 / float64(n)
	variance = max(s2/float64(n)-m1*m1, 0)
	return float64(shift) + m1, variance
}

// mustFloat32s is ops.Float32s for a tensor already checked to have a
// floating-point type.
func mustFloat32s(x *tensor.Tensor) []float32 {
	v, _ := ops.Float32s(x, "")
	return v
}
