package reduce

// ReduceProd: Πx, 1 for none.

// ReduceProd is the ReduceProd operator, by opset range.
var ReduceProd = registerReduction("ReduceProd", reduceProd, 18)

// prodFloat computes the products of floating-point x in float64, in the
// order of the input.
func prodFloat[T float32 | float64](x []T, g *reduceGeom) []float64 {
	acc := make([]float64, g.n)
	g.pieces(len(acc), func(lo, hi int) {
		a := acc[lo:hi]
		for i := range a {
			a[i] = 1
		}
	})
	_, innerRed := g.inner()
	g.cost = chainCost
	g.walk(func(i, o, n int, _ bool) {
		if innerRed {
			p := acc[o]
			for _, v := range x[i : i+n] {
				p *= float64(v)
			}
			acc[o] = p
			return
		}
		a := acc[o : o+n]
		for j, v := range x[i : i+n] {
			a[j] *= float64(v)
		}
	})
	g.cost = 0
	return acc
}
