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

	c   *ops.Context // the run, whose deadline walk checks
	err error        // the run's error once walk stopped for it
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

// pieces calls f on the pieces [lo, hi) of [0, n), in order, each at
// most chunk long (the loops over whole outputs or inputs that come
// before or after the walk), counting each with the run's Tick; it stops
// as walk does, recording the error in g.err.
func (g *reduceGeom) pieces(n int, f func(lo, hi int)) {
	for lo := 0; lo < n && g.err == nil; lo += chunk {
		hi := min(lo+chunk, n)
		f(lo, hi)
		g.err = g.c.Tick(hi - lo)
	}
}

// walk calls f for every run along the last coalesced dimension, cut
// into chunks of at most chunk elements (whole Blocks), in order:
// f(i, o, n, end) gets the offsets of the chunk's first element in the
// input and the output, its length, and whether it ends its run. A
// reduced run's chunks reduce into out[o]; a kept chunk's element j goes
// to out[o+j]. walk counts each chunk's elements with the run's Tick:
// once the request is cancelled or past its deadline, walk stops and
// records the error in g.err (and later walks do nothing).
func (g *reduceGeom) walk(f func(i, o, n int, end bool)) {
	if g.err != nil {
		return
	}
	r := len(g.dims)
	for _, d := range g.dims {
		if d == 0 {
			return
		}
	}
	inner, innerRed := g.inner()
	it := tensor.NewIter(g.dims[:r-1], g.inStr[:r-1], g.outStr[:r-1])
	for it.Next() {
		i, o := it.Off(0), it.Off(1)
		for j := 0; j < inner; j += chunk {
			n, oj := min(inner-j, chunk), o
			if !innerRed {
				oj += j
			}
			f(i+j, oj, n, j+n == inner)
			if g.err = g.c.Tick(n); g.err != nil {
				return
			}
		}
	}
}
