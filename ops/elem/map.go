package elem

import (
	"github.com/quantserve/quantserve/tensor"
)

// Map2 computes a broadcast binary operation run by run: kernel gets the
// output run r and the operands from their offsets, which advance by ia
// and ib (1 or 0) per element. It returns the output's shape and data.
func Map2[A, B, R tensor.Elem](a []A, b []B, as, bs []int, kernel func(r []R, a []A, b []B, ia, ib int)) ([]int, []R, error) {
	l, err := NewLayout(as, bs)
	if err != nil {
		return nil, nil, err
	}
	r := make([]R, l.n)
	run, ia, ib := l.Run(), l.Inc(1), l.Inc(2)
	l.Each(func(offs []int) {
		kernel(r[offs[0]:offs[0]+run], a[offs[1]:], b[offs[2]:], ia, ib)
	})
	return l.shape, r, nil
}

// MapFunc computes f elementwise with broadcasting, one call per element:
// for operators off the hot paths.
func MapFunc[A, B, R tensor.Elem](a []A, b []B, as, bs []int, f func(x A, y B) R) ([]int, []R, error) {
	return Map2(a, b, as, bs, func(r []R, a []A, b []B, ia, ib int) {
		pa, pb := 0, 0
		for i := range r {
			r[i] = f(a[pa], b[pb])
			pa += ia
			pb += ib
		}
	})
}
