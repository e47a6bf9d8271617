package pool

import (
	"github.com/quantserve/quantserve/ops"
)

// checkEvery is about how many elements an operator of this package
// computes between two looks at the request's context.
const checkEvery = 1 << 16

// pacer counts the elements a run computes and looks at the request's
// context about every checkEvery of them. A nil pacer never stops.
type pacer struct {
	c    *ops.Context
	left int
}

func newPacer(c *ops.Context) *pacer { return &pacer{c: c} }

// after counts n more elements and returns the request's error once it
// is cancelled or past its deadline.
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
