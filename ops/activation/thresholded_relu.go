package activation

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/tensor"
)

// ThresholdedRelu is the ThresholdedRelu operator.
var ThresholdedRelu = ops.Op{
	ops.Register(ops.Descriptor{Type: "ThresholdedRelu", Since: 10, Fold: true}, buildThresholdedRelu),
}

// ThresholdedReluAttrs are ThresholdedRelu's attributes.
type ThresholdedReluAttrs struct {
	Alpha float32 `onnx:"alpha" default:"1"`
}

// thresholdedRelu implements ThresholdedRelu: x above alpha, 0 elsewhere.
type thresholdedRelu struct{ alpha float64 }

func buildThresholdedRelu(n *ops.Node, at *ThresholdedReluAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return thresholdedRelu{alpha: float64(at.Alpha)}, nil
}

func (r thresholdedRelu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(arith.MapFloat(c, "ThresholdedRelu", in[0], func(v float64) float64 {
		if v > r.alpha {
			return v
		}
		return 0
	}))
}
