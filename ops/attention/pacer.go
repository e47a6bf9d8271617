package attention

import (
	"github.com/quantserve/quantserve/ops"
)

// checkEvery is about how many multiply-adds an operator of this package
// computes between two looks at the request's context.
const checkEvery = 1 << 16

// pacer counts the work a run does and looks at the request's context
// about every checkEvery multiply-adds. A nil pacer, or one without a
// Context, never stops.
type pacer struct {
	c    *ops.Context
	left int
}

func newPacer(c *ops.Context) *pacer { return &pacer{c: c} }

// after counts n more multiply-adds and returns the request's error once
// it is cancelled or past its deadline.
func (p *pacer) after(n int) error {
	if p == nil || p.c == nil {
		return nil
	}
	p.left -= max(n, 1)
	if p.left > 0 {
		return nil
	}
	p.left = checkEvery
	return p.c.Err()
}
