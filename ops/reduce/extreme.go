package reduce

import (
	"math"
)

// The extremes: ReduceMax and ReduceMin. A NaN wins over every number;
// on BOOL (from opset 20) ReduceMax is any and ReduceMin all.

// ReduceMax and ReduceMin are the operators, by opset range.
var (
	ReduceMax = registerReduction("ReduceMax", reduceMax, 18)
	ReduceMin = registerReduction("ReduceMin", reduceMin, 18)
)

// extremeFloat computes the maximum (isMax) or minimum of floating-point
// x over each output's elements: ∓inf for none.
func extremeFloat[T float32 | float64](isMax bool, x []T, g *reduceGeom) []float64 {
	acc := make([]float64, g.n)
	_, innerRed := g.inner()
	none := math.Inf(1)
	if isMax {
		none = math.Inf(-1)
	}
	g.pieces(len(acc), func(lo, hi int) {
		a := acc[lo:hi]
		for i := range a {
			a[i] = none
		}
	})
	if innerRed {
		g.walk(func(i, o, n int, _ bool) { acc[o] = pickExtreme(acc[o], float64(rowExtreme(x[i:i+n], isMax)), isMax) })
	} else {
		g.walk(func(i, o, n int, _ bool) {
			a := acc[o : o+n]
			for j, v := range x[i : i+n] {
				a[j] = pickExtreme(a[j], float64(v), isMax)
			}
		})
	}
	return acc
}

// pickExtreme returns the larger (isMax) or smaller of a and v; NaN wins.
func pickExtreme(a, v float64, isMax bool) float64 {
	switch {
	case v != v || a != a:
		return math.NaN()
	case isMax && v > a, !isMax && v < a:
		return v
	}
	return a
}

// rowExtreme returns the maximum (isMax) or minimum of x, NaN if any is
// NaN, ∓inf for an empty x.
func rowExtreme[T float32 | float64](x []T, isMax bool) T {
	m := T(math.Inf(1))
	if isMax {
		m = T(math.Inf(-1))
	}
	nan := false
	if isMax {
		for _, v := range x {
			if v > m {
				m = v
			}
			nan = nan || v != v
		}
	} else {
		for _, v := range x {
			if v < m {
				m = v
			}
			nan = nan || v != v
		}
	}
	if nan {
		return T(math.NaN())
	}
	return m
}

// reduceBool implements ReduceMax (any) and ReduceMin (all) on BOOL, with
// false < true.
func reduceBool(isMax bool, x []bool, g *reduceGeom) []bool {
	acc := make([]bool, g.n)
	if !isMax {
		g.pieces(len(acc), func(lo, hi int) {
			a := acc[lo:hi]
			for i := range a {
				a[i] = true
			}
		})
	}
	_, innerRed := g.inner()
	g.walk(func(i, o, n int, _ bool) {
		if innerRed {
			a := acc[o]
			for _, v := range x[i : i+n] {
				if isMax {
					a = a || v
				} else {
					a = a && v
				}
			}
			acc[o] = a
			return
		}
		a := acc[o : o+n]
		for j, v := range x[i : i+n] {
			if isMax {
				a[j] = a[j] || v
			} else {
				a[j] = a[j] && v
			}
		}
	})
	return acc
}
