package activation

import (
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
)

// Sigmoid is the Sigmoid operator.
var Sigmoid = ops.Op{
	ops.Register(ops.Descriptor{Type: "Sigmoid", Since: 1, Fold: true}, tableBuilder("Sigmoid", func(t *dispatch.Table) func(dst, src []float32) { return t.Sigmoid }, ops.Sigmoid)),
}

// Sigmoidf returns 1/(1+e**-x) in float32 for a float64 argument, through
// e**x for negative x so that tiny results keep their precision: within
// 2.4 ulp of the float64 function. An argument computed in float64 (as
// Swish's alpha·x and Gelu's are) keeps its precision.
func Sigmoidf(x float64) float32 {
	e := arith.Expf(-math.Abs(x)) // NaN stays NaN
	// The numerator is e where x is negative (e/(1+e)), 1 elsewhere,
	// selected by the sign bit: random signs make a branch mispredict.
	neg := -uint32(math.Float64bits(x) >> 63)
	n := math.Float32frombits(math.Float32bits(e)&neg | math.Float32bits(1)&^neg)
	return n / (1 + e)
}
