package activation

import (
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
)

// Sigmoid is the Sigmoid operator.
var Sigmoid = ops.Op{
	ops.Register(ops.Descriptor{Type: "Sigmoid", Since: 1, Fold: true}, tableBuilder("Sigmoid", func(t *dispatch.Table) func(dst, src []float32) { return t.Sigmoid }, ops.Sigmoid)),
}
