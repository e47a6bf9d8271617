package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Flatten is the Flatten operator.
var Flatten = ops.Op{
	ops.Register(ops.Descriptor{Type: "Flatten", Since: 1, Fold: true}, buildFlatten),
}

// FlattenAttrs are Flatten's attributes.
type FlattenAttrs struct {
	Axis int64 `onnx:"axis" default:"1"`
}

// flatten is a compiled Flatten: the axis (possibly negative) where the
// output's second dimension begins.
type flatten struct{ axis int64 }

func buildFlatten(n *ops.Node, at *FlattenAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return flatten{axis: at.Axis}, nil
}

func (f flatten) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	r := int64(x.Rank())
	a := f.axis
	if a < -r || a > r {
		return nil, ops.InputErrorf("axis %d is out of range for rank %d", f.axis, r)
	}
	if a < 0 {
		a += r
	}
	outer := 1
	for _, d := range x.Shape[:a] {
		outer *= d
	}
	inner := 1
	for _, d := range x.Shape[a:] {
		inner *= d
	}
	t, err := x.Reshaped([]int{outer, inner})
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}
