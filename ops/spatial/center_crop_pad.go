package spatial

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "CenterCropPad", Since: 18, Fold: true}, buildCenterCropPad)
}

// CenterCropPadAttrs are CenterCropPad's attributes.
type CenterCropPadAttrs struct {
	Axes []int64 `onnx:"axes"` // nil: every axis
}

// centerCropPad is a compiled CenterCropPad: the axes it sizes (nil:
// every axis).
type centerCropPad struct{ axes []int64 }

func buildCenterCropPad(n *ops.Node, at *CenterCropPadAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return &centerCropPad{axes: slices.Clone(at.Axes)}, nil
}

func (op *centerCropPad) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	shape, err := in[1].Int64s()
	if err != nil || in[1].Rank() != 1 {
		return nil, ops.InputErrorf("CenterCropPad shape must be a 1-D integer tensor, got %v%s", in[1].DType, tensor.ShapeString(in[1].Shape))
	}
	r := x.Rank()
	axes := op.axes
	if axes == nil {
		axes = make([]int64, r)
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if len(shape) != len(axes) {
		return nil, ops.InputErrorf("CenterCropPad has %d sizes for %d axes", len(shape), len(axes))
	}
	pads := make([]int64, 2*r)
	seen := make([]bool, r)
	for i, ax := range axes {
		a, err := ops.NormAxis(ax, r)
		if err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, ops.InputErrorf("CenterCropPad axes %v repeat axis %d", axes, a)
		}
		seen[a] = true
		want, dim := shape[i], int64(x.Shape[a])
		if want < 0 || want > tensor.MaxElements {
			return nil, ops.InputErrorf("CenterCropPad size %d is invalid", want)
		}
		var b int64
		if want < dim {
			b = -((dim - want) / 2) // crop: the larger half at the end
		} else {
			b = (want - dim) / 2 // pad: the larger half at the end
		}
		pads[a], pads[a+r] = b, want-dim-b
	}
	out, src, err := padSourceFor(c, x.Shape, "constant", pads)
	if err != nil {
		return nil, err
	}
	y, err := gather(c, x, out, src, nil)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}
