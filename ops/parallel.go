package ops

import (
	"context"

	"github.com/quantserve/quantserve/gemm"
)

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
	e := gemm.Default()
	var ctx context.Context
	if c != nil {
		e, ctx = c.engine, c.ctx
		if e == nil {
			e = gemm.Default()
		}
	}
	if ctx == nil {
		return e.Parallel(n, work, f)
	}
	return e.Parallel(n, work, func(e *gemm.Engine, i0, i1 int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return f(e, i0, i1)
	})
}
