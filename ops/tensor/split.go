package tensor

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Split is the Split operator, by opset range.
var Split = ops.Op{
	ops.Register(ops.Descriptor{Type: "Split", Since: 1, Until: 1, Fold: true}, splitBuilder(1)),
	ops.Register(ops.Descriptor{Type: "Split", Since: 2, Until: 12, Fold: true}, splitBuilder(2)),
	ops.Register(ops.Descriptor{Type: "Split", Since: 13, Until: 17, Fold: true}, splitBuilder(13)),
	ops.Register(ops.Descriptor{Type: "Split", Since: 18, Fold: true}, splitBuilder(18)),
}

// SplitAttrs are Split's attributes: split is an attribute before opset
// 13 (an input after), num_outputs exists from opset 18.
type SplitAttrs struct {
	Axis       int64   `onnx:"axis"`
	Split      []int64 `onnx:"split"`
	NumOutputs *int64  `onnx:"num_outputs"`
}

// split is a compiled Split: the axis (possibly negative), the sizes of
// the split attribute (nil when absent; a split input replaces them) and
// the number of outputs.
type split struct {
	axis      int64
	attrSplit []int64
	outs      int
}

// splitBuilder returns Split's builder for the opset range starting at
// since: split as an attribute or input (1), an attribute (2–12), an
// input (13–17), an input or num_outputs (18 on).
func splitBuilder(since int64) func(n *ops.Node, at *SplitAttrs) (ops.Operator, error) {
	return func(n *ops.Node, at *SplitAttrs) (ops.Operator, error) {
		maxIn := 2
		if since == 2 {
			maxIn = 1
		}
		if err := n.CheckArity(1, maxIn, 1, 1<<16); err != nil {
			return nil, err
		}
		if at.Split != nil && since >= 13 {
			return nil, fmt.Errorf("Split takes split as an input from opset 13, not an attribute")
		}
		if at.NumOutputs != nil && since < 18 {
			return nil, ops.Unsupportedf("attribute %q before opset 18", "num_outputs")
		}
		outs := len(n.Outputs)
		if at.NumOutputs != nil {
			if *at.NumOutputs != int64(outs) {
				return nil, fmt.Errorf("Split has num_outputs %d but %d outputs", *at.NumOutputs, outs)
			}
			if len(n.Inputs) > 1 && n.Inputs[1] != "" {
				return nil, fmt.Errorf("Split takes the split input or num_outputs, not both")
			}
		}
		return split{axis: at.Axis, attrSplit: at.Split, outs: outs}, nil
	}
}

func (s split) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	a, err := ops.NormAxis(s.axis, x.Rank())
	if err != nil {
		return nil, err
	}
	parts := s.attrSplit
	if len(in) > 1 && in[1] != nil {
		if parts, err = indexList(in[1], "Split split"); err != nil {
			return nil, err
		}
	}
	sizes, err := splitSizes(x.Shape[a], parts, s.outs)
	if err != nil {
		return nil, err
	}
	return splitTensor(c, x, a, sizes)
}

// splitSizes returns the part sizes of Split along an axis of size dim:
// split when given, else outs parts of ⌈dim/outs⌉, the last smaller.
func splitSizes(dim int, split []int64, outs int) ([]int, error) {
	sizes := make([]int, outs)
	if split != nil {
		if len(split) != outs {
			return nil, ops.InputErrorf("Split split %v has %d entries for %d outputs", split, len(split), outs)
		}
		var sum int64
		for i, s := range split {
			if s < 0 || s > int64(dim) {
				return nil, ops.InputErrorf("Split split %v has an invalid size %d for an axis of %d", split, s, dim)
			}
			sum += s
			sizes[i] = int(s)
		}
		if sum != int64(dim) {
			return nil, ops.InputErrorf("Split split %v sums to %d, the axis has %d", split, sum, dim)
		}
		return sizes, nil
	}
	part := (dim + outs - 1) / outs
	left := dim
	for i := range sizes {
		sizes[i] = min(part, left)
		left -= sizes[i]
	}
	if outs > 1 && sizes[outs-2] != part {
		return nil, ops.InputErrorf("Split cannot cut an axis of %d into %d parts", dim, outs)
	}
	return sizes, nil
}

// splitTensor cuts x along axis a into parts of the given sizes.
func splitTensor(c *ops.Context, x *tensor.Tensor, a int, sizes []int) ([]*tensor.Tensor, error) {
	rows := tensor.Strides(x.Shape)
	outs := make([]*tensor.Tensor, len(sizes))
	off := 0
	for i, s := range sizes {
		shape := append([]int(nil), x.Shape...)
		shape[a] = s
		t, err := StridedView(c, x, shape, rows, off*rows[a])
		if err != nil {
			return nil, err
		}
		outs[i] = t
		off += s
	}
	return outs, nil
}
