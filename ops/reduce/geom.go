package reduce

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// chunk is the longest stretch of a run a reduction visits before it
// counts the work with the run's Tick: about ops.TickEvery elements, in
// whole Blocks, so that a run cut there sums exactly as it does whole.
const chunk = ops.TickEvery / Block * Block

// reduceGeom is a reduction of one shape over the axes it marks, with
// the shape coalesced for the loops: size-1 axes dropped and runs of
// adjacent axes that are all reduced or all kept merged into one.
type reduceGeom struct {
	out   []int // the output's shape
	n     int   // output elements
	count int   // input elements reduced into each output element

	dims   []int  // coalesced dimensions (at least one)
	red    []bool // which are reduced
	inStr  []int  // their strides in the input
	outStr []int  // their strides in the output; 0 where reduced

	c    *ops.Context // the run, whose deadline walk checks
	err  error        // the run's error once walk stopped for it
	cost int          // what an element of the walk costs (0: sumCost)
}

func newReduceGeom(c *ops.Context, shape []int, red []bool, keep bool) (*reduceGeom, error) {
	g := &reduceGeom{count: 1, c: c}
	for i, d := range shape {
		switch {
		case !red[i]:
			g.out = append(g.out, d)
		case keep:
			g.out = append(g.out, 1)
		}
		if red[i] {
			g.count *= d // bounded: shape is a real tensor's
		}
		if d == 1 {
			continue
		}
		if k := len(g.dims) - 1; k >= 0 && g.red[k] == red[i] {
			g.dims[k] *= d
			continue
		}
		g.dims = append(g.dims, d)
		g.red = append(g.red, red[i])
	}
	if len(g.dims) == 0 {
		g.dims, g.red = []int{1}, []bool{false}
	}
	var err error
	if g.n, err = tensor.NumElements(g.out); err != nil {
		return nil, err
	}
	r := len(g.dims)
	g.inStr, g.outStr = make([]int, r), make([]int, r)
	in, out := 1, 1
	for i := r - 1; i >= 0; i-- {
		g.inStr[i] = in
		in *= g.dims[i]
		if !g.red[i] {
			g.outStr[i] = out
			out *= g.dims[i]
		}
	}
	return g, nil
}

// inner is the length of the runs walk visits and whether they are
// reduced.
func (g *reduceGeom) inner() (int, bool) { return g.dims[len(g.dims)-1], g.red[len(g.red)-1] }

// Costs of one element of a reduction, in the units of ops.ParallelFor's
// work (see ops.ScalarCost), from which its loops decide whether they
// split across cores.
const (
	// sumCost is a load and an add into one of several partial sums or
	// extremes: the float loops of the sums, maxima and minima.
	sumCost = ops.ScalarCost / 8
	// chainCost is a step of a dependent float64 chain (a product) or of
	// a loop calling a function per element (the integer reductions).
	chainCost = ops.ScalarCost / 2
)

// colBlock is the columns of a kept run that one unit of a split over
// columns holds, so that each unit reads long stretches of each row.
const colBlock = 1024

// pieces calls f on the pieces [lo, hi) of [0, n) (the loops over whole
// outputs or inputs that come before or after the walk, each element
// computed from its own inputs): less than a chunk in one piece on the
// caller, counted with the run's Tick as walk counts a small input, a
// longer loop split across the engine's cores (ops.Context.ParallelRows).
// It stops as walk does, recording the error in g.err.
func (g *reduceGeom) pieces(n int, f func(lo, hi int)) {
	if g.err != nil || n <= 0 {
		return
	}
	if n < chunk {
		if g.err = g.c.Tick(n); g.err == nil {
			f(0, n)
		}
		return
	}
	g.err = g.c.ParallelRows(n, sumCost, f)
}

// walkFunc is what walk calls for each chunk of a run: f(i, o, n, end).
type walkFunc func(i, o, n int, end bool)

// walk calls f for every run along the last coalesced dimension, cut
// into chunks of at most chunk elements (whole Blocks): f(i, o, n, end)
// gets the offsets of the chunk's first element in the input and the
// output, its length, and whether it ends its run. A reduced run's
// chunks reduce into out[o], in order; a kept chunk's element j goes to
// out[o+j]. The walk splits across the engine's cores (see walkEach), so
// f may be called from several goroutines at once, each call touching
// only its own outputs; each element's inputs still arrive in the order
// of the input, so the split changes no bit. Each element costs g.cost
// (sumCost when unset). Once the request is cancelled or past its
// deadline, walk stops and records the error in g.err (and later walks
// do nothing).
func (g *reduceGeom) walk(f walkFunc) { g.walkEach(func() walkFunc { return f }) }

// walkEach is walk for an f that keeps state from chunk to chunk of a
// run: mk makes one for each part of the walk that runs on a core of its
// own, and each part holds whole reduced runs. The walk splits over the
// outermost coalesced dimension when it is kept (each index of it owns
// its outputs and all the runs reducing into them), else over blocks of
// columns of a kept last dimension; a walk that reduces into outputs of
// neither kind (everything into one output), or whose input is less than
// a chunk, runs on the caller, counting each chunk with the run's Tick.
func (g *reduceGeom) walkEach(mk func() walkFunc) {
	if g.err != nil {
		return
	}
	for _, d := range g.dims {
		if d == 0 {
			return
		}
	}
	r := len(g.dims)
	inner, innerRed := g.inner()
	cost := g.cost
	if cost <= 0 {
		cost = sumCost
	}
	switch total := g.inStr[0] * g.dims[0]; {
	case total < chunk:
		g.walkPart(0, g.dims[0], 0, inner, true, mk())
	case r >= 2 && !g.red[0] && g.dims[0] >= 4:
		g.err = g.c.ParallelRows(g.dims[0], cost*g.inStr[0], func(u0, u1 int) {
			g.walkPart(u0, u1, 0, inner, false, mk())
		})
	case !innerRed && inner >= 2*colBlock:
		rows := total / inner
		blocks := (inner + colBlock - 1) / colBlock
		g.err = g.c.ParallelRows(blocks, cost*rows*colBlock, func(b0, b1 int) {
			g.walkPart(0, g.dims[0], b0*colBlock, min(b1*colBlock, inner), false, mk())
		})
	default:
		g.walkPart(0, g.dims[0], 0, inner, true, mk())
	}
}

// walkPart walks the runs under the indices [u0, u1) of the outermost
// coalesced dimension (all of them when it is the only one, u0 = 0 and
// u1 = its length), each run's columns [c0, c1) (c0 = 0 and c1 = the
// run's length for reduced runs), calling f for each chunk; with tick it
// counts each chunk with the run's Tick and stops once the request ends.
func (g *reduceGeom) walkPart(u0, u1, c0, c1 int, tick bool, f walkFunc) {
	r := len(g.dims)
	inner, innerRed := g.inner()
	var it *tensor.Iter
	if r == 1 {
		it = tensor.NewIter(nil, nil, nil) // one run, at offset 0
	} else {
		dims := append([]int{u1 - u0}, g.dims[1:r-1]...)
		it = tensor.NewIter(dims, g.inStr[:r-1], g.outStr[:r-1]).Start(0, u0*g.inStr[0]).Start(1, u0*g.outStr[0])
	}
	for it.Next() {
		i, o := it.Off(0), it.Off(1)
		for j := c0; j < c1; j += chunk {
			n, oj := min(c1-j, chunk), o
			if !innerRed {
				oj += j
			}
			f(i+j, oj, n, j+n == inner)
			if !tick {
				continue
			}
			if g.err = g.c.Tick(n); g.err != nil {
				return
			}
		}
	}
}
