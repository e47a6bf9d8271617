package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Squeeze is the Squeeze operator, by opset range.
var Squeeze = ops.Op{
	ops.Register(ops.Descriptor{Type: "Squeeze", Since: 1, Until: 12, Fold: true}, buildSqueeze),
	ops.Register(ops.Descriptor{Type: "Squeeze", Since: 13, Fold: true}, buildSqueeze13),
}

// AxesAttrs are the attributes of Squeeze and Unsqueeze before opset 13.
type AxesAttrs struct {
	Axes []int64 `onnx:"axes"` // nil when absent
}

// squeeze is a compiled Squeeze: the axes of its attribute before opset
// 13 (nil when absent), or, from opset 13, those of its optional input.
type squeeze struct {
	fromInput bool
	axes      []int64
}

// buildSqueeze implements Squeeze before opset 13: axes as an attribute.
func buildSqueeze(n *ops.Node, at *AxesAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return squeeze{axes: at.Axes}, nil
}

// buildSqueeze13 implements Squeeze from opset 13: axes as an input.
func buildSqueeze13(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	return squeeze{fromInput: true}, nil
}

func (s squeeze) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	axes, given := s.axes, s.axes != nil
	if s.fromInput {
		var err error
		if axes, given, err = axesInput(in); err != nil {
			return nil, err
		}
	}
	t, err := squeezeAxes(in[0], axes, given)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

// squeezeAxes drops the given axes of x (each of size 1), or every axis
// of size 1 when none are given.
func squeezeAxes(x *tensor.Tensor, axes []int64, given bool) (*tensor.Tensor, error) {
	drop := make([]bool, x.Rank())
	if !given {
		for i, d := range x.Shape {
			drop[i] = d == 1
		}
	}
	for _, ax := range axes {
		a, err := ops.NormAxis(ax, x.Rank())
		if err != nil {
			return nil, err
		}
		if x.Shape[a] != 1 {
			return nil, ops.InputErrorf("Squeeze axis %d has size %d, not 1", ax, x.Shape[a])
		}
		drop[a] = true
	}
	var shape []int
	for i, d := range x.Shape {
		if !drop[i] {
			shape = append(shape, d)
		}
	}
	return x.Reshaped(shape)
}
