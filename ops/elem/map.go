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

// elemCost is the cost of one element of a binary kernel, in the units
// of ops.ParallelFor's work: a plain Go loop's loads, operation and
// store, which for a float32 Add of 256×56×56 take about 0.5 ns an
// element here, where the sgemm kernel does about 50 multiply-adds a ns.
const elemCost = ops.ScalarCost / 2

// Map2 computes a broadcast binary operation piece by piece under the
// request: kernel gets the output piece r and the operands from their
// offsets, which advance by ia and ib (1 or 0) per element. Contiguous
// ranges of the output split across the engine's cores
// (ops.Context.ParallelRows); kernel must compute each element from its
// operands alone, so that the split changes no bit. It returns the
// output's shape and data, or the request's error once it ends.
func Map2[A, B, R tensor.Elem](c *ops.Context, a []A, b []B, as, bs []int, kernel func(r []R, a []A, b []B, ia, ib int)) ([]int, []R, error) {
	l, err := NewLayout(as, bs)
	if err != nil {
		return nil, nil, err
	}
	if err := c.ReserveTensor(tensor.DTypeOf[R](), l.shape); err != nil {
		return nil, nil, err
	}
	r := ops.Output[R](c, l.n) // kernel writes every element
	if ops.OneCore(l.n, elemCost) {
		map2Range(l, 0, l.n, r, a, b, kernel)
		return l.shape, r, nil
	}
	err = c.ParallelRows(l.n, elemCost, func(i0, i1 int) { map2Range(l, i0, i1, r, a, b, kernel) })
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

// map2Range computes the output elements [lo, hi) of Map2, run by run:
// it finds each operand's offset at lo from lo's coordinates over the
// merged dimensions, then steps as Each does.
func map2Range[A, B, R tensor.Elem](l *Layout, lo, hi int, r []R, a []A, b []B, kernel func(r []R, a []A, b []B, ia, ib int)) {
	if lo >= hi {
		return
	}
	var buf [8]int
	nd := len(l.dims)
	idx := buf[:0]
	if nd > len(buf) {
		idx = make([]int, nd)
	}
	idx = idx[:nd]
	so, sa, sb := l.st[0], l.st[1], l.st[2]
	oo, oa, ob := 0, 0, 0
	for d, rem := nd-1, lo; d >= 0; d-- {
		idx[d] = rem % l.dims[d]
		rem /= l.dims[d]
		oo += idx[d] * so[d]
		oa += idx[d] * sa[d]
		ob += idx[d] * sb[d]
	}
	last := nd - 1
	run, ia, ib := l.dims[last], sa[last], sb[last]
	for i := lo; i < hi; {
		n := min(run-idx[last], hi-i)
		kernel(r[oo:oo+n], a[oa:], b[ob:], ia, ib)
		i += n
		idx[last] += n
		oo += n * so[last]
		oa += n * ia
		ob += n * ib
		for d := last; d > 0 && idx[d] == l.dims[d]; d-- { // carry into the dimension before
			idx[d] = 0
			idx[d-1]++
			oo += so[d-1] - l.dims[d]*so[d]
			oa += sa[d-1] - l.dims[d]*sa[d]
			ob += sb[d-1] - l.dims[d]*sb[d]
		}
	}
}
