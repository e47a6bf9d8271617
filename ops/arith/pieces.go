package arith

import "github.com/quantserve/quantserve/ops"

// inPieces calls f on the pieces [lo, hi) of [0, n), in order, each at
// most ops.TickEvery long and counted with c.Tick, and stops with the
// request's error once the request ends (c may be nil: no request to
// watch).
func inPieces(c *ops.Context, n int, f func(lo, hi int)) error {
	for lo := 0; lo < n; lo += ops.TickEvery {
		hi := min(lo+ops.TickEvery, n)
		if err := c.Tick(hi - lo); err != nil {
			return err
		}
		f(lo, hi)
	}
	return nil
}
