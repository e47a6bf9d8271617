package activation

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Swish is the Swish operator.
var Swish = ops.Op{
	ops.Register(ops.Descriptor{Type: "Swish", Since: 24, Fold: true}, buildSwish),
}

// SwishAttrs are Swish's attributes: x·sigmoid(alpha·x).
type SwishAttrs struct {
	Alpha float32 `onnx:"alpha" default:"1"`
}

// swish implements Swish (opset 24): x·sigmoid(alpha·x), float32 on the
// engine's XSigmoid kernel (ops.ScaledSigmoid).
type swish struct{ k *ops.ScaledSigmoid }

func buildSwish(n *ops.Node, at *SwishAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return swish{k: ops.NewScaledSigmoid(float64(at.Alpha))}, nil
}

func (s swish) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	tb := c.Engine().Table()
	return ops.Result(floatMap32(c, "Swish", in[0], expCost, func(dst, src []float32) { s.k.Apply(tb, dst, src) }, s.k.Of))
}
