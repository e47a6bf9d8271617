package index

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "GatherElements", Since: 11, Fold: true}, buildGatherElements)
}

// GatherElementsAttrs are GatherElements' attributes.
type GatherElementsAttrs struct {
	Axis int64 `onnx:"axis"`
}

// gatherElements is a compiled GatherElements: the axis its indices
// address.
type gatherElements struct{ axis int64 }

func buildGatherElements(n *ops.Node, at *GatherElementsAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return gatherElements{axis: at.Axis}, nil
}

func (g gatherElements) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	offs, err := elementOffsets(c, "GatherElements", x, in[1], g.axis)
	if err != nil {
		return nil, err
	}
	y, _, err := NewTensor(c, x.DType, slices.Clone(in[1].Shape))
	if err != nil {
		return nil, err
	}
	if err := runs(c, tensorops.MoverOf(x.DType), y.Data, 0, x.Data, 0, offs, 1); err != nil {
		return nil, err
	}
	return out1(y), nil
}

// elementOffsets returns, for each element of indices (of x's rank, no
// larger than x off axis), the offset in x of the element it addresses:
// its own position with the index along axis (GatherElements,
// ScatterElements).
func elementOffsets(oc *ops.Context, op string, x, indices *tensor.Tensor, axis int64) ([]int, error) {
	r := x.Rank()
	if r == 0 {
		return nil, ops.InputErrorf("%s needs data of rank >= 1", op)
	}
	a, err := ops.NormAxis(axis, r)
	if err != nil {
		return nil, err
	}
	if indices.Rank() != r {
		return nil, ops.InputErrorf("%s indices have rank %d, data rank %d", op, indices.Rank(), r)
	}
	for i, d := range indices.Shape {
		if i != a && d > x.Shape[i] {
			return nil, ops.InputErrorf("%s indices %s do not fit data %s", op, tensor.ShapeString(indices.Shape), tensor.ShapeString(x.Shape))
		}
	}
	idx, err := indexValues(indices, op+" indices")
	if err != nil {
		return nil, err
	}
	offs := make([]int, len(idx))
	if len(idx) == 0 {
		return offs, nil
	}
	strides := tensor.Strides(x.Shape)
	walk := slices.Clone(strides)
	walk[a] = 0
	it := tensor.NewIter(indices.Shape, walk)
	for k := 0; it.Next(); k++ {
		j, err := wrap(idx[k], x.Shape[a], op)
		if err != nil {
			return nil, err
		}
		offs[k] = it.Off(0) + j*strides[a]
		if err := oc.Tick(1); err != nil {
			return nil, err
		}
	}
	return offs, nil
}
