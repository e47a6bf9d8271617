package elem

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Walk calls f for every piece of l's runs, in order, under the request:
// offs holds each operand's offset at the piece's start (offs[0] the
// output's; reused between calls) and n its length, at most
// ops.TickEvery. Each piece is counted with c.Tick before f computes it;
// once the request ends Walk stops and returns the request's error. A nil
// c walks to the end.
func Walk(c *ops.Context, l *Layout, f func(offs []int, n int)) error {
	run := l.Run()
	if run <= ops.TickEvery {
		return l.EachUntil(func(offs []int) error {
			if err := c.Tick(run); err != nil {
				return err
			}
			f(offs, run)
			return nil
		})
	}
	piece := make([]int, len(l.st))
	return l.EachUntil(func(offs []int) error {
		for lo := 0; lo < run; lo += ops.TickEvery {
			n := min(ops.TickEvery, run-lo)
			if err := c.Tick(n); err != nil {
				return err
			}
			for k := range piece {
				piece[k] = offs[k] + lo*l.Inc(k)
			}
			f(piece, n)
		}
		return nil
	})
}

// Map2 computes a broadcast binary operation piece by piece under the
// request: kernel gets the output piece r and the operands from their
// offsets, which advance by ia and ib (1 or 0) per element. It returns
// the output's shape and data, or the request's error once it ends.
func Map2[A, B, R tensor.Elem](c *ops.Context, a []A, b []B, as, bs []int, kernel func(r []R, a []A, b []B, ia, ib int)) ([]int, []R, error) {
	l, err := NewLayout(as, bs)
	if err != nil {
		return nil, nil, err
	}
	if err := c.ReserveTensor(tensor.DTypeOf[R](), l.shape); err != nil {
		return nil, nil, err
	}
	r := make([]R, l.n)
	ia, ib := l.Inc(1), l.Inc(2)
	err = Walk(c, l, func(offs []int, n int) {
		kernel(r[offs[0]:offs[0]+n], a[offs[1]:], b[offs[2]:], ia, ib)
	})
	if err != nil {
		return nil, nil, err
	}
	return l.shape, r, nil
}

// MapFunc computes f elementwise with broadcasting, one call per element,
// under the request: for operators off the hot paths.
func MapFunc[A, B, R tensor.Elem](c *ops.Context, a []A, b []B, as, bs []int, f func(x A, y B) R) ([]int, []R, error) {
	return Map2(c, a, b, as, bs, func(r []R, a []A, b []B, ia, ib int) {
		pa, pb := 0, 0
		for i := range r {
			r[i] = f(a[pa], b[pb])
			pa += ia
			pb += ib
		}
	})
}
