package reduce

import (
	"math"

	"github.com/quantserve/quantserve/ops"
)

// ReduceLogSumExp: log Σ exp(x), -inf for none.

// ReduceLogSumExp is the ReduceLogSumExp operator, by opset range.
var ReduceLogSumExp = registerReduction("ReduceLogSumExp", reduceLogSumExp, 18)

// logSumExpFloat computes log Σ exp(x) of floating-point x as
// m + log Σ exp(x - m) with m the maximum, so no term overflows.
func logSumExpFloat[T float32 | float64](x []T, g *reduceGeom) []float64 {
	acc := make([]float64, g.n)
	_, innerRed := g.inner()
	m := extremeFloat(true, x, g)
	g.cost = ops.ScalarCost // an exponential per element
	g.walkEach(func() walkFunc {
		var t float64 // a reduced run's sum so far
		return func(i, o, n int, end bool) {
			if innerRed {
				if t = rowSumExp(t, x[i:i+n], m[o]); end {
					acc[o] += t
					t = 0
				}
				return
			}
			a, mm := acc[o:o+n], m[o:o+n]
			for j, v := range x[i : i+n] {
				if !math.IsInf(mm[j], 0) {
					a[j] += math.Exp(float64(v) - mm[j])
				}
			}
		}
	})
	g.cost = 0
	g.pieces(len(acc), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if math.IsInf(m[i], 0) || math.IsNaN(m[i]) {
				acc[i] = m[i] // every term -inf (or the empty set), or +inf, or NaN
			} else {
				acc[i] = m[i] + math.Log(acc[i])
			}
		}
	})
	return acc
}

// rowSumExp returns s + Σ exp(x - m) for m the maximum of x (and of the
// runs reducing into the same output); an infinite m contributes nothing,
// the caller handles it.
func rowSumExp[T float32 | float64](s float64, x []T, m float64) float64 {
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return s
	}
	if xs, ok := any(x).([]float32); ok {
		mm := float32(m)
		for len(xs) > 0 {
			b := xs[:min(len(xs), Block)]
			xs = xs[len(b):]
			var p float32
			for _, v := range b {
				p += ops.Exp32(v - mm)
			}
			s += float64(p)
		}
		return s
	}
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return s
}
