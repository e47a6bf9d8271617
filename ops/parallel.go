package ops

import (
	"context"
	"sync"

	"github.com/quantserve/quantserve/gemm"
)

// Costs of one element in the units of ParallelFor's work (the
// multiply-adds of a product kernel, which does tens of them a cycle), by
// which a loop that is not a product says what it costs.
const (
	// ScalarCost is an element of a scalar pass with float64 sums or
	// a transcendental: a normalization's statistics, a softmax.
	ScalarCost = 64
	// VectorCost is an element of a pass on a vector kernel.
	VectorCost = 4
)

// ParallelRows runs f over the rows [0, rows) of an operator's output,
// each row costing rowCost (see ScalarCost), split across the engine's
// cores as ParallelFor splits; f computes rows r0 to r1 and must not
// touch other rows' output or call Tick. Between chunks it looks at the
// request and returns its error once it ends.
func (c *Context) ParallelRows(rows, rowCost int, f func(r0, r1 int)) error {
	work := rows * max(rowCost, 1)
	if rowCost > 0 && work/rowCost != rows {
		work = int(^uint(0) >> 1)
	}
	l := rowLoops.Get().(*rowLoop)
	l.f = f
	err := c.ParallelFor(rows, work, l.chunk)
	l.f = nil // the pool keeps no operands alive
	rowLoops.Put(l)
	return err
}

// rowLoop is ParallelRows's loop, pooled with the method value
// ParallelFor is given: a closure over f was an allocation a call.
type rowLoop struct {
	f     func(r0, r1 int)
	chunk func(e *gemm.Engine, r0, r1 int) error // l.rows
}

var rowLoops = sync.Pool{New: func() any {
	l := new(rowLoop)
	l.chunk = l.rows
	return l
}}

func (l *rowLoop) rows(_ *gemm.Engine, r0, r1 int) error {
	l.f(r0, r1)
	return nil
}

// OneCore reports whether a loop of n units of cost each (ParallelRows's
// rowCost) is too small for any engine to split (gemm.MinParallelWork):
// an operator then runs it on the calling goroutine itself, without the
// closures ParallelRows takes, which a step of a few hundred values pays
// for in allocations as much as for its work.
func OneCore(n, cost int) bool { return n < gemm.MinParallelWork/max(cost, 1) }

// ParallelFor runs f over the units [0, n) of a loop whose units are
// independent (each writes a part of the output of its own), in chunks
// of consecutive units spread over the engine's workers and the caller
// (gemm.Engine.Parallel): work is the whole loop's cost in multiply-adds
// or units as costly, from which the engine decides whether the loop is
// worth splitting and how long its chunks are. f is given the engine to
// run its products on: the Context's own when the loop runs on the
// caller alone, a one-core engine on the same kernels when its chunks run
// in parallel. f must not call Tick, which is not safe for concurrent
// use: ParallelFor looks at the request itself.
//
// Before each chunk it looks at the request's context: once the request
// is cancelled or past its deadline no further chunk starts, and
// ParallelFor returns the request's error. Otherwise it returns the first
// error f returned. A nil Context runs on gemm.Default() and never stops.
func (c *Context) ParallelFor(n, work int, f func(e *gemm.Engine, i0, i1 int) error) error {
	e := c.Engine()
	var ctx context.Context
	if c != nil {
		ctx = c.ctx
	}
	return e.ParallelContext(ctx, n, work, f)
}
