package reduce

import (
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// reduceInt reduces integers in their own type (sums wrap as numpy's do);
// ReduceMean truncates, and ReduceL2, ReduceLogSum and ReduceLogSumExp
// are computed in float64 and truncated.
func reduceInt[T tensor.Integer](kind reduceKind, x []T, g *reduceGeom) []T {
	switch kind {
	case reduceL2, reduceLogSum, reduceLogSumExp:
		f := make([]float64, len(x))
		g.pieces(len(x), func(p, q int) {
			for i, v := range x[p:q] {
				f[p+i] = float64(v)
			}
		})
		acc := reduceFloat(kind, f, g)
		out := make([]T, len(acc))
		lo, hi := intLimits[T]()
		g.pieces(len(acc), func(p, q int) {
			for i, v := range acc[p:q] {
				switch {
				case math.IsNaN(v):
				case v <= float64(lo):
					out[p+i] = lo
				case v >= float64(hi):
					out[p+i] = hi
				default:
					out[p+i] = T(v)
				}
			}
		})
		return out
	}
	acc := make([]T, g.n)
	lo, hi := intLimits[T]()
	var step func(a, v T) T
	switch kind {
	case reduceSum, reduceMean:
		step = func(a, v T) T { return a + v }
	case reduceL1:
		step = func(a, v T) T {
			if v < 0 {
				v = -v
			}
			return a + v
		}
	case reduceSumSquare:
		step = func(a, v T) T { return a + v*v }
	case reduceProd:
		step = func(a, v T) T { return a * v }
		fillInts(g, acc, 1)
	case reduceMax:
		step = func(a, v T) T { return max(a, v) }
		fillInts(g, acc, lo)
	case reduceMin:
		step = func(a, v T) T { return min(a, v) }
		fillInts(g, acc, hi)
	}
	_, innerRed := g.inner()
	g.cost = chainCost
	g.walk(func(i, o, n int, _ bool) {
		if innerRed {
			a := acc[o]
			for _, v := range x[i : i+n] {
				a = step(a, v)
			}
			acc[o] = a
			return
		}
		a := acc[o : o+n]
		for j, v := range x[i : i+n] {
			a[j] = step(a[j], v)
		}
	})
	g.cost = 0
	if kind == reduceMean && g.count > 0 {
		c := T(g.count)
		g.pieces(len(acc), func(p, q int) {
			a := acc[p:q]
			if int(c) == g.count {
				for i := range a {
					a[i] /= c
				}
			} else { // the count does not fit T: go through float64
				for i, v := range a {
					a[i] = T(float64(v) / float64(g.count))
				}
			}
		})
	}
	return acc
}

// fillInts sets every element of acc to v, piece by piece.
func fillInts[T tensor.Integer](g *reduceGeom, acc []T, v T) {
	g.pieces(len(acc), func(p, q int) {
		a := acc[p:q]
		for i := range a {
			a[i] = v
		}
	})
}

// intLimits returns the smallest and largest values of T.
func intLimits[T tensor.Integer]() (lo, hi T) {
	var zero T
	hi = ^zero
	if hi < zero { // signed: all ones is -1
		bits := 8 * tensor.DTypeOf[T]().Size()
		hi = T(uint64(1)<<(bits-1) - 1)
		lo = -hi - 1
		return lo, hi
	}
	return 0, hi
}
