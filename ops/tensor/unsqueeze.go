package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Unsqueeze is the Unsqueeze operator, by opset range.
var Unsqueeze = ops.Op{
	ops.Register(ops.Descriptor{Type: "Unsqueeze", Since: 1, Until: 12, Fold: true}, buildUnsqueeze),
	ops.Register(ops.Descriptor{Type: "Unsqueeze", Since: 13, Fold: true}, buildUnsqueeze13),
}

// unsqueeze is a compiled Unsqueeze: the axes of its attribute before
// opset 13 (nil when absent), or, from opset 13, those of its input.
type unsqueeze struct {
	fromInput bool
	axes      []int64
}

// buildUnsqueeze implements Unsqueeze before opset 13: axes as an
// attribute (AxesAttrs, as Squeeze's).
func buildUnsqueeze(n *ops.Node, at *AxesAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unsqueeze{axes: at.Axes}, nil
}

// buildUnsqueeze13 implements Unsqueeze from opset 13: axes as an input.
func buildUnsqueeze13(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return unsqueeze{fromInput: true}, nil
}

func (u unsqueeze) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	axes, given := u.axes, u.axes != nil
	if u.fromInput {
		var err error
		if axes, given, err = axesInput(in); err != nil {
			return nil, err
		}
	}
	t, err := unsqueezeAxes(in[0], axes, given)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

// unsqueezeAxes inserts axes of size 1 at the given output positions.
func unsqueezeAxes(x *tensor.Tensor, axes []int64, given bool) (*tensor.Tensor, error) {
	if !given {
		return nil, ops.InputErrorf("Unsqueeze needs axes")
	}
	r := x.Rank() + len(axes)
	insert := make([]bool, r)
	for _, ax := range axes {
		a, err := ops.NormAxis(ax, r)
		if err != nil {
			return nil, err
		}
		if insert[a] {
			return nil, ops.InputErrorf("Unsqueeze axes %v repeat an axis", axes)
		}
		insert[a] = true
	}
	shape := make([]int, 0, r)
	j := 0
	for i := 0; i < r; i++ {
		if insert[i] {
			shape = append(shape, 1)
		} else {
			shape = append(shape, x.Shape[j])
			j++
		}
	}
	return x.Reshaped(shape)
}
