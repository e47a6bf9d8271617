package activation

import (
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
)

// Tanh is the Tanh operator.
var Tanh = ops.Op{
	ops.Register(ops.Descriptor{Type: "Tanh", Since: 1, Fold: true}, tableBuilder("Tanh", func(t *dispatch.Table) func(dst, src []float32) { return t.Tanh }, math.Tanh)),
}
