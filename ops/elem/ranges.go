package elem

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// RangeWork is the most work (in the units of ops.ParallelFor's work) a
// loop runs whole on the caller, and the work of one call of InRanges'
// f on an engine of one thread: claiming a chunk, looking at the request
// and finding where a range starts (coordinates, offsets) then stay a
// small part of it even for loops of a few units an element.
const RangeWork = 1 << 18

// minRangeWork is the least work one call of f holds on an engine of
// several threads, which cuts a loop into at least four ranges a thread
// when the loop has the work for it.
const minRangeWork = 1 << 14

// InRanges runs f over contiguous ranges [lo, hi) of the units [0, n)
// of a loop whose units are independent (each writes its own part of the
// output), each costing cost (see ops.ScalarCost). A loop of at most
// RangeWork runs whole on the caller, its units counted with c.Tick; a
// longer one goes in ranges of RangeWork or less (at least four a thread
// on an engine of several, down to minRangeWork) through c.ParallelRows,
// which splits them across the engine's cores when the loop is worth it
// and looks at the request between chunks. f must not call Tick. It
// returns the request's error once the request ends.
func InRanges(c *ops.Context, n, cost int, f func(lo, hi int)) error {
	if n <= 0 {
		return nil
	}
	cost = max(cost, 1)
	if n <= RangeWork/cost {
		if err := c.Tick(n); err != nil {
			return err
		}
		f(0, n)
		return nil
	}
	block := (RangeWork + cost - 1) / cost
	if t := threads(c); t > 1 {
		block = min(block, max(n/(4*t), (minRangeWork+cost-1)/cost))
	}
	blocks := (n + block - 1) / block
	return c.ParallelRows(blocks, block*cost, func(b0, b1 int) { f(b0*block, min(b1*block, n)) })
}

// threads returns the threads of the engine c's loops split over.
func threads(c *ops.Context) int {
	if c != nil && c.Engine() != nil {
		return c.Engine().Threads()
	}
	return gemm.Default().Threads()
}
