package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Tile is the Tile operator.
var Tile = ops.Op{
	ops.Register(ops.Descriptor{Type: "Tile", Since: 6, Fold: true}, buildTile),
}

// tile is a compiled Tile: its input repeated along each axis as many
// times as its repeats input says.
type tile struct{}

func buildTile(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return tile{}, nil
}

func (tile) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	reps, err := indexList(in[1], "Tile repeats")
	if err != nil {
		return nil, err
	}
	y, err := tileTensor(c, x, reps)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// tileTensor repeats x reps[i] times along each axis i: a view of shape
// [r0, d0, r1, d1, ...] with stride 0 along the repeats. Shapes beyond
// tensor.MaxElements are input errors, refused before any allocation.
func tileTensor(c *ops.Context, x *tensor.Tensor, reps []int64) (*tensor.Tensor, error) {
	r := x.Rank()
	if len(reps) != r {
		return nil, ops.InputErrorf("Tile repeats %v do not fit rank %d", reps, r)
	}
	rows := tensor.Strides(x.Shape)
	shape := make([]int, r)
	view, strides := make([]int, 2*r), make([]int, 2*r)
	for i, rep := range reps {
		if rep < 0 || rep > tensor.MaxElements || x.Shape[i] > 0 && rep > int64(tensor.MaxElements/x.Shape[i]) {
			return nil, ops.InputErrorf("Tile repeat %d is invalid for a dimension of %d", rep, x.Shape[i])
		}
		view[2*i], view[2*i+1] = int(rep), x.Shape[i]
		strides[2*i+1] = rows[i]
		shape[i] = int(rep) * x.Shape[i]
	}
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	if n == 0 {
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: MoverOf(x.DType).Alloc(0)}, nil
	}
	y, err := StridedView(c, x, view, strides, 0)
	if err != nil {
		return nil, err
	}
	y.Shape = shape
	return y, nil
}
