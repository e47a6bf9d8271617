package activation

import (
	"math"

	"github.com/quantserve/quantserve/ops"
)

// Softplus and Mish, x·tanh(softplus(x)).
// Softplus is the Softplus operator.
var Softplus = ops.Op{
	ops.Register(ops.Descriptor{Type: "Softplus", Since: 1, Fold: true}, floatBuilder("Softplus", expCost, nil, softplus)),
}

// Mish is the Mish operator.
var Mish = ops.Op{
	ops.Register(ops.Descriptor{Type: "Mish", Since: 18, Fold: true}, floatBuilder("Mish", expCost, nil, mish)),
}

// softplus is log(1 + e**x), computed without overflow.
func softplus(v float64) float64 {
	if v > 0 {
		return v + math.Log1p(math.Exp(-v))
	}
	return math.Log1p(math.Exp(v))
}

// mish is x·tanh(softplus(x)).
func mish(v float64) float64 { return v * math.Tanh(softplus(v)) }
