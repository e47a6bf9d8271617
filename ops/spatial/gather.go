package spatial

import (
	"slices"
	"sort"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// The gather Pad, CenterCropPad and Resize (nearest) share: each output
// axis reads the input through a map of source indices.

// gather returns the tensor of shape out whose element at index
// (o_0, ..., o_r-1) is x's element at (src[0][o_0], ..., src[r-1][o_r-1]),
// or fill (a scalar of x's type; nil for zero) where any of those is
// negative. len(src[d]) == out[d]; every entry is < x.Shape[d].
func gather(c *ops.Context, x *tensor.Tensor, out []int, src [][]int, fill *tensor.Tensor) (*tensor.Tensor, error) {
	n, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	if err := c.ReserveTensor(x.DType, out); err != nil {
		return nil, err
	}
	var data any
	switch d := x.Data.(type) {
	case []float32:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[float32](fill))
	case []float64:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[float64](fill))
	case []tensor.F16:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[tensor.F16](fill))
	case []tensor.BF16:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[tensor.BF16](fill))
	case []int8:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[int8](fill))
	case []uint8:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[uint8](fill))
	case []int16:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[int16](fill))
	case []uint16:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[uint16](fill))
	case []int32:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[int32](fill))
	case []uint32:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[uint32](fill))
	case []int64:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[int64](fill))
	case []uint64:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[uint64](fill))
	case []bool:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[bool](fill))
	case []string:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[string](fill))
	default:
		return nil, ops.InputErrorf("cannot rearrange %v tensors", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: x.DType, Shape: slices.Clone(out), Data: data}, nil
}

func fillOf[T any](t *tensor.Tensor) T {
	var z T
	if t == nil {
		return z
	}
	if d, ok := t.Data.([]T); ok && len(d) > 0 {
		return d[0]
	}
	return z
}

// segment is a run of one output row: n elements copied from the source
// row at src on, or filled when src < 0.
type segment struct{ at, n, src int }

// segments splits a last-axis source map into runs of consecutive source
// positions and runs of fill.
func segments(src []int) []segment {
	var segs []segment
	for i := 0; i < len(src); {
		j := i + 1
		if src[i] < 0 {
			for j < len(src) && src[j] < 0 {
				j++
			}
		} else {
			for j < len(src) && src[j] == src[j-1]+1 {
				j++
			}
		}
		segs = append(segs, segment{at: i, n: j - i, src: src[i]})
		i = j
	}
	return segs
}

// Costs of one output element, in the units of ops.ParallelFor's work
// (see ops.ScalarCost), from which the loops of this package decide
// whether they split across cores: those of ops/tensor's copies.
const (
	// runCost is an element of a run moved by copy().
	runCost = ops.ScalarCost / 4
	// gatherCost is an element read one at a time through an index.
	gatherCost = ops.ScalarCost / 2
	// tapCost is a tap of an interpolation: a multiply-add in a plain
	// loop.
	tapCost = ops.ScalarCost / 4
)

// gatherAxes is gather on a slice: rows along the last axis are built by
// copying runs (when the source map has long runs: Pad, crops) or by a
// per-element gather (Resize), and a row whose source row is that of the
// row before (nearest upsampling repeats rows) is copied from it.
// Contiguous ranges of the output, which may cut rows, split across the
// engine's cores (ops.Context.ParallelRows), each element built alone.
// It stops with the request's error once the request ends.
func gatherAxes[T any](oc *ops.Context, xs []T, in, out []int, n int, src [][]int, fill T) ([]T, error) {
	res := make([]T, n)
	if n == 0 {
		return res, nil
	}
	r := len(out)
	if r == 0 {
		res[0] = xs[0]
		return res, nil
	}
	g := &gatherRows[T]{xs: xs, res: res, out: out, src: src, fill: fill, st: tensor.Strides(in), w: out[r-1], last: src[r-1]}
	g.segs = segments(g.last)
	g.bySegs = len(g.segs)*4 <= g.w
	g.hasFill = slices.ContainsFunc(g.last, func(s int) bool { return s < 0 })
	cost := gatherCost
	if g.bySegs {
		cost = runCost
	}
	if err := oc.ParallelRows(n, cost, g.build); err != nil {
		return nil, err
	}
	return res, nil
}

// gatherRows is what gatherAxes builds its rows from.
type gatherRows[T any] struct {
	xs, res []T
	out     []int
	src     [][]int
	fill    T
	st      []int // the input's strides
	w       int   // the length of a row
	last    []int // the last axis's source map
	segs    []segment
	bySegs  bool // copy the last axis by segments
	hasFill bool // the last axis's map holds fill
}

// build builds the output elements [e0, e1): the columns of each row
// that fall in it. A row repeating the source row of the row before is
// copied from it when this call built those columns of it.
func (g *gatherRows[T]) build(e0, e1 int) {
	r, w := len(g.out), g.w
	idx := make([]int, r-1)
	for d, rem := r-2, e0/w; d >= 0; d-- {
		idx[d] = rem % g.out[d]
		rem /= g.out[d]
	}
	prevBase, prevRow, prevLo, prevHi := 0, -1, 0, 0
	for row := e0 / w; row*w < e1; row++ {
		lo, hi := max(e0-row*w, 0), min(e1-row*w, w)
		base := 0
		for d := 0; d < r-1; d++ {
			s := g.src[d][idx[d]]
			if s < 0 {
				base = -1
				break
			}
			base += s * g.st[d]
		}
		dst := g.res[row*w+lo : row*w+hi]
		if prevRow >= 0 && base == prevBase && prevLo <= lo && hi <= prevHi {
			copy(dst, g.res[prevRow*w+lo:prevRow*w+hi])
		} else {
			g.cols(dst, base, lo, hi)
		}
		prevBase, prevRow, prevLo, prevHi = base, row, lo, hi
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			if idx[d] < g.out[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// cols builds the columns [lo, hi) of a row reading the input row at
// base (fill for base < 0) into dst.
func (g *gatherRows[T]) cols(dst []T, base, lo, hi int) {
	xs, fill := g.xs, g.fill
	switch {
	case base < 0:
		for i := range dst {
			dst[i] = fill
		}
	case g.bySegs:
		k := sort.Search(len(g.segs), func(i int) bool { return g.segs[i].at+g.segs[i].n > lo })
		for _, sg := range g.segs[k:] {
			if sg.at >= hi {
				break
			}
			p, q := max(sg.at, lo), min(sg.at+sg.n, hi)
			if sg.src < 0 {
				for i := p; i < q; i++ {
					dst[i-lo] = fill
				}
			} else {
				at := base + sg.src + p - sg.at
				copy(dst[p-lo:q-lo], xs[at:at+q-p])
			}
		}
	case g.hasFill:
		for i, s := range g.last[lo:hi] {
			if s < 0 {
				dst[i] = fill
			} else {
				dst[i] = xs[base+s]
			}
		}
	default:
		row := xs[base:]
		for i, s := range g.last[lo:hi] {
			dst[i] = row[s]
		}
	}
}

// scalarAs converts a one-element numeric tensor to type dt (strings and
// booleans take their zero value, which Pad and Resize fill them with).
func scalarAs(v *tensor.Tensor, dt tensor.DataType) (*tensor.Tensor, error) {
	if dt == tensor.String || dt == tensor.Bool {
		return nil, nil
	}
	return tensorops.CastTo(v, dt)
}

// take returns the tensor of shape out holding x's elements at idx.
func take(x *tensor.Tensor, out []int, idx []int) *tensor.Tensor {
	return &tensor.Tensor{DType: x.DType, Shape: out, Data: ops.Gather(x.Data, idx)}
}

// next advances a row-major multi-index over shape, wrapping to zero.
func next(idx, shape []int) {
	for d := len(idx) - 1; d >= 0; d-- {
		idx[d]++
		if idx[d] < shape[d] {
			return
		}
		idx[d] = 0
	}
}
