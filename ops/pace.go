package ops

// TickEvery is about how many units of work (elements computed or
// moved, multiply-adds, comparisons) an operator does between two looks
// at the request's context.
const TickEvery = 1 << 16

// Tick counts work units an operator does for the request and, once
// TickEvery of them have gathered since the last look, looks at the
// request's context: it returns the request's error once the request is
// cancelled or past its deadline, and nil otherwise. An operator that
// loops long calls it every so often with the work since its last call;
// a call that is not due costs an addition and a comparison. Every call
// counts at least one unit, and one of TickEvery units or more is always
// due.
//
// A nil Context, or the zero Context (no request), never stops the work.
// The count belongs to the run, whose operators run one at a time: Tick
// is not safe for concurrent use.
func (c *Context) Tick(work int) error {
	if c == nil {
		return nil
	}
	if c.work += max(work, 1); c.work < TickEvery {
		return nil
	}
	return c.look()
}

// look starts the count again and returns the request's error. It stays
// out of line, so that Tick inlines into the loops that call it.
//
//go:noinline
func (c *Context) look() error {
	c.work = 0
	if c.ctx == nil {
		return nil
	}
	return c.ctx.Err()
}

// InPieces calls f on the pieces [lo, hi) of [0, n), in order, each at
// most TickEvery long and counted with Tick before f computes it, and
// stops with the request's error once the request ends. A nil Context
// walks to the end.
func (c *Context) InPieces(n int, f func(lo, hi int)) error {
	for lo := 0; lo < n; lo += TickEvery {
		hi := min(lo+TickEvery, n)
		if err := c.Tick(hi - lo); err != nil {
			return err
		}
		f(lo, hi)
	}
	return nil
}
