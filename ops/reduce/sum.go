package reduce

import (
	"math"
)

// The sums: ReduceSum and ReduceMean (Σx, Σx/n), ReduceL1 (Σ|x|), ReduceL2
// (√Σx²), ReduceSumSquare (Σx²) and ReduceLogSum (log Σx).

// The sums' operators, by opset range.
var (
	ReduceSum       = registerReduction("ReduceSum", reduceSum, 13)
	ReduceMean      = registerReduction("ReduceMean", reduceMean, 18)
	ReduceL1        = registerReduction("ReduceL1", reduceL1, 18)
	ReduceL2        = registerReduction("ReduceL2", reduceL2, 18)
	ReduceLogSum    = registerReduction("ReduceLogSum", reduceLogSum, 18)
	ReduceSumSquare = registerReduction("ReduceSumSquare", reduceSumSquare, 18)
)

// sumFloat computes the sums of floating-point x: each reduced run summed
// by a row function in x's own type, each kept run's elements added to
// their outputs in float64.
func sumFloat[T float32 | float64](kind reduceKind, x []T, g *reduceGeom) []float64 {
	acc := make([]float64, g.n)
	_, innerRed := g.inner()
	// sumRuns adds row(run) into acc for reduced runs (row carries the
	// run's total from chunk to chunk), and for kept runs each element
	// mapped by sq (v², else |v| if abs, else v).
	sumRuns := func(row func(total float64, x []T) float64, abs, sq bool) {
		if innerRed {
			g.walkEach(func() walkFunc {
				var t float64
				return func(i, o, n int, end bool) {
					if t = row(t, x[i:i+n]); end {
						acc[o] += t
						t = 0
					}
				}
			})
			return
		}
		g.walk(func(i, o, n int, _ bool) {
			a, xs := acc[o:o+n], x[i:i+n]
			switch {
			case sq:
				for j, v := range xs {
					a[j] += float64(v) * float64(v)
				}
			case abs:
				for j, v := range xs {
					a[j] += math.Abs(float64(v))
				}
			default:
				for j, v := range xs {
					a[j] += float64(v)
				}
			}
		})
	}
	switch kind {
	case reduceSum, reduceMean, reduceLogSum:
		sumRuns(rowSum[T], false, false)
	case reduceL1:
		sumRuns(rowSumAbs[T], true, false)
	case reduceL2, reduceSumSquare:
		sumRuns(addSquares[T], false, true)
	}
	g.pieces(len(acc), func(lo, hi int) {
		a := acc[lo:hi]
		switch kind {
		case reduceMean:
			c := float64(g.count)
			for i := range a {
				a[i] /= c
			}
		case reduceL2:
			for i, v := range a {
				a[i] = math.Sqrt(v)
			}
		case reduceLogSum:
			for i, v := range a {
				a[i] = math.Log(v)
			}
		}
	})
	return acc
}

// Block bounds the run of elements summed in x's own type before the
// partial sums go into the float64 total.
const Block = 512

// rowSum returns total + Σ x: eight partial sums in T per block, blocks
// added to total in float64.
func rowSum[T float32 | float64](total float64, x []T) float64 {
	for len(x) > 0 {
		b := x[:min(len(x), Block)]
		x = x[len(b):]
		var s0, s1, s2, s3, s4, s5, s6, s7 T
		for len(b) >= 8 {
			v := b[:8:8]
			s0 += v[0]
			s1 += v[1]
			s2 += v[2]
			s3 += v[3]
			s4 += v[4]
			s5 += v[5]
			s6 += v[6]
			s7 += v[7]
			b = b[8:]
		}
		for _, v := range b {
			s0 += v
		}
		total += float64(((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))
	}
	return total
}

// rowSumAbs returns total + Σ |x| as rowSum does.
func rowSumAbs[T float32 | float64](total float64, x []T) float64 {
	abs := func(v T) T {
		if v < 0 {
			return -v
		}
		return v
	}
	for len(x) > 0 {
		b := x[:min(len(x), Block)]
		x = x[len(b):]
		var s0, s1, s2, s3 T
		for len(b) >= 4 {
			v := b[:4:4]
			s0 += abs(v[0])
			s1 += abs(v[1])
			s2 += abs(v[2])
			s3 += abs(v[3])
			b = b[4:]
		}
		for _, v := range b {
			s0 += abs(v)
		}
		total += float64((s0 + s1) + (s2 + s3))
	}
	return total
}

// RowSumSquares returns Σ x² as the reductions sum a row: eight partial
// sums in T per Block elements, blocks added in float64.
func RowSumSquares[T float32 | float64](x []T) float64 { return addSquares(0, x) }

// addSquares returns total + Σ x² as rowSum does.
func addSquares[T float32 | float64](total float64, x []T) float64 {
	for len(x) > 0 {
		b := x[:min(len(x), Block)]
		x = x[len(b):]
		var s0, s1, s2, s3, s4, s5, s6, s7 T
		for len(b) >= 8 {
			v := b[:8:8]
			s0 += v[0] * v[0]
			s1 += v[1] * v[1]
			s2 += v[2] * v[2]
			s3 += v[3] * v[3]
			s4 += v[4] * v[4]
			s5 += v[5] * v[5]
			s6 += v[6] * v[6]
			s7 += v[7] * v[7]
			b = b[8:]
		}
		for _, v := range b {
			s0 += v * v
		}
		total += float64(((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))
	}
	return total
}
