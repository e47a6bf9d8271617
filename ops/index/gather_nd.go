package index

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "GatherND", Since: 11, Fold: true}, buildGatherND)
}

// GatherNDAttrs are GatherND's attributes (batch_dims from opset 12).
type GatherNDAttrs struct {
	BatchDims int64 `onnx:"batch_dims"`
}

// gatherND is a compiled GatherND: how many leading dimensions data and
// indices share as batch dimensions.
type gatherND struct{ batchDims int }

func buildGatherND(n *ops.Node, at *GatherNDAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	b := at.BatchDims
	if b < 0 {
		return nil, fmt.Errorf("GatherND batch_dims %d is negative", b)
	}
	return gatherND{batchDims: int(min(b, 64))}, nil
}

func (g gatherND) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	offs, run, shape, err := ndOffsets(c, "GatherND", x, in[1], g.batchDims)
	if err != nil {
		return nil, err
	}
	y, _, err := NewTensor(c, x.DType, shape)
	if err != nil {
		return nil, err
	}
	if err := runs(c, tensorops.MoverOf(x.DType), y.Data, 0, x.Data, 0, offs, run); err != nil {
		return nil, err
	}
	return out1(y), nil
}

// ndOffsets resolves GatherND/ScatterND indices (shape [..., k]) against
// x whose first b dimensions are batch dimensions shared with indices: the
// offset in x of each slice addressed, the slice's length, and the shape
// indices[:-1] + x[b+k:] of the gathered (or scattered) values.
func ndOffsets(oc *ops.Context, op string, x, indices *tensor.Tensor, b int) (offs []int, run int, shape []int, err error) {
	r, q := x.Rank(), indices.Rank()
	if q < 1 || b >= q || b >= r {
		return nil, 0, nil, ops.InputErrorf("%s batch_dims %d does not fit data of rank %d and indices of rank %d", op, b, r, q)
	}
	k := indices.Shape[q-1]
	if k > r-b {
		return nil, 0, nil, ops.InputErrorf("%s indices address %d dimensions of %d", op, k, r-b)
	}
	if !ops.EqualShape(x.Shape[:b], indices.Shape[:b]) {
		return nil, 0, nil, ops.InputErrorf("%s batch dimensions differ: %s and %s", op, tensor.ShapeString(x.Shape[:b]), tensor.ShapeString(indices.Shape[:b]))
	}
	idx, err := indexValues(indices, op+" indices")
	if err != nil {
		return nil, 0, nil, err
	}
	shape = slices.Concat(indices.Shape[:q-1], x.Shape[b+k:])
	size, err := tensor.NumElements(shape)
	if err != nil {
		return nil, 0, nil, ops.InputErrorf("%v", err)
	}
	if size == 0 {
		return nil, 0, shape, nil
	}
	run = product(x.Shape[b+k:])
	batches := product(x.Shape[:b])
	per := product(indices.Shape[b : q-1]) // index tuples per batch
	batchSize := product(x.Shape[b:])
	strides := tensor.Strides(x.Shape)
	offs = make([]int, batches*per)
	for bi := 0; bi < batches; bi++ {
		for i := 0; i < per; i++ {
			t := bi*per + i
			off := bi * batchSize
			for j := 0; j < k; j++ {
				v, err := wrap(idx[t*k+j], x.Shape[b+j], op)
				if err != nil {
					return nil, 0, nil, err
				}
				off += v * strides[b+j]
			}
			offs[t] = off
			if err := oc.Tick(k + 1); err != nil {
				return nil, 0, nil, err
			}
		}
	}
	return offs, run, shape, nil
}
