package logic

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "IsInf", Since: 10, Fold: true}, buildIsInf)
}

// IsInfAttrs are IsInf's attributes.
type IsInfAttrs struct {
	DetectNegative bool `onnx:"detect_negative" default:"true"`
	DetectPositive bool `onnx:"detect_positive" default:"true"`
}

// isInf maps a floating-point tensor to BOOL: true where it holds an
// infinity of a sign it detects.
type isInf struct{ neg, pos bool }

func buildIsInf(n *ops.Node, at *IsInfAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return isInf{neg: at.DetectNegative, pos: at.DetectPositive}, nil
}

func (o isInf) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	t, err := floatPredicate(c, "IsInf", in[0], func(v float64) bool {
		return o.pos && math.IsInf(v, 1) || o.neg && math.IsInf(v, -1)
	})
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}
