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

func (not) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	d, ok := x.Data.([]bool)
	if !ok {
		return nil, ops.InputErrorf("Not takes BOOL, got %v", x.DType)
	}
	r := make([]bool, len(d))
	err := c.InPieces(len(d), func(lo, hi int) {
		dst, src := r[lo:hi], d[lo:hi]
		for i, v := range src {
			dst[i] = !v
		}
	})
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: tensor.Bool, Shape: x.Shape, Data: r}}, nil
}
