package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Expand is the Expand operator.
var Expand = ops.Op{
	ops.Register(ops.Descriptor{Type: "Expand", Since: 8, Fold: true}, buildExpand),
}

// expand is a compiled Expand: its input broadcast (both ways, numpy
// rules) with the shape its second input gives.
type expand struct{}

func buildExpand(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return expand{}, nil
}

func (expand) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	spec, err := indexList(in[1], "Expand shape")
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(spec))
	for i, d := range spec {
		if d < 0 || d > tensor.MaxElements {
			return nil, ops.InputErrorf("Expand shape %v has an invalid dimension %d", spec, d)
		}
		shape[i] = int(d)
	}
	out, err := ops.BroadcastShape(x.Shape, shape)
	if err != nil {
		return nil, err
	}
	// stridedView refuses an output beyond tensor.MaxElements before
	// allocating it.
	y, err := StridedView(c, x, out, tensor.BroadcastStrides(x.Shape, out), 0)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}
