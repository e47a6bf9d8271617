package logic

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Not", Since: 1, Fold: true}, buildNot)
}

// not negates a BOOL tensor elementwise.
type not struct{}

func buildNot(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return not{}, nil
}

func (not) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	d, ok := x.Data.([]bool)
	if !ok {
		return nil, ops.InputErrorf("Not takes BOOL, got %v", x.DType)
	}
	r := make([]bool, len(d))
	for i, v := range d {
		r[i] = !v
	}
	return []*tensor.Tensor{{DType: tensor.Bool, Shape: x.Shape, Data: r}}, nil
}
