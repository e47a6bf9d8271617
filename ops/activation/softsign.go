package activation

import (
	"math"

	"github.com/quantserve/quantserve/ops"
)

// Softsign is the Softsign operator.
var Softsign = ops.Op{
	ops.Register(ops.Descriptor{Type: "Softsign", Since: 1, Fold: true}, floatBuilder("Softsign", cheapCost, nil, softsign)),
}

// softsign is x/(1 + |x|).
func softsign(v float64) float64 { return v / (1 + math.Abs(v)) }
