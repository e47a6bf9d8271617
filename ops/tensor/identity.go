package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Identity is the Identity operator.
var Identity = ops.Op{
	ops.Register(ops.Descriptor{Type: "Identity", Since: 1, Fold: true}, buildIdentity),
}

// identity is a compiled Identity: its output is its input, the same
// tensor.
type identity struct{}

func buildIdentity(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return identity{}, nil
}

func (identity) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return []*tensor.Tensor{in[0]}, nil
}
