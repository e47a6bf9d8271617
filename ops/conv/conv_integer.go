package conv

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// ConvInteger is the ConvInteger operator: the exact int32 sums of a
// convolution of integers less their zero points.
var ConvInteger = ops.Op{ops.Register(ops.Descriptor{Type: "ConvInteger", Since: 10, Fold: true}, buildConvInteger)}

// convInteger is a compiled ConvInteger.
type convInteger struct{ intConv }

func buildConvInteger(n *ops.Node, at *ConvAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 4, 1, 1); err != nil {
		return nil, err
	}
	if err := checkAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	op := &convInteger{intConv{at: at}}
	wzpConst := len(n.Inputs) < 4 || n.Inputs[3] == "" || n.Const(3) != nil
	if w := n.Const(1); w != nil && wzpConst {
		held, err := holdIntWeight(n, w, n.Const(3), int(at.Group))
		if err != nil {
			return nil, err
		}
		if held != nil {
			op.held, op.heldShape = held, w.Shape
			n.HoldInputs(1, 3)
		}
	}
	return op, nil
}

func (o *convInteger) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	acc, shape, err := o.sums(c, "ConvInteger", in[0], input(in, 2), in[1], input(in, 3))
	if err != nil {
		return nil, err
	}
	return ops.Result(tensor.From(shape, acc), nil)
}
