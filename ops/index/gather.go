package index

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// Gather is the Gather operator.
var Gather = ops.Op{
	ops.Register(ops.Descriptor{Type: "Gather", Since: 1, Fold: true}, buildGather),
}

// GatherAttrs are Gather's attributes.
type GatherAttrs struct {
	Axis int64 `onnx:"axis"`
}

// gather is a compiled Gather: the axis it takes entries along.
type gather struct{ axis int64 }

func buildGather(n *ops.Node, at *GatherAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return gather{axis: at.Axis}, nil
}

func (g gather) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	y, err := gatherAxis(c, in[0], in[1], g.axis)
	if err != nil {
		return nil, err
	}
	return out1(y), nil
}

// gatherAxis takes the entries indices selects along axis of x: output
// shape x[:axis] + indices + x[axis+1:]. Each entry is a contiguous run
// of the trailing dimensions (a row of an embedding table), copied whole.
func gatherAxis(oc *ops.Context, x, indices *tensor.Tensor, axis int64) (*tensor.Tensor, error) {
	if x.Rank() == 0 {
		return nil, ops.InputErrorf("Gather needs data of rank >= 1")
	}
	a, err := ops.NormAxis(axis, x.Rank())
	if err != nil {
		return nil, err
	}
	idx, err := indexValues(indices, "Gather indices")
	if err != nil {
		return nil, err
	}
	shape := slices.Concat(x.Shape[:a], indices.Shape, x.Shape[a+1:])
	y, size, err := newFilled(oc, x.DType, shape) // every entry is copied
	if err != nil || size == 0 {
		return y, err
	}
	dim, inner, outer := x.Shape[a], product(x.Shape[a+1:]), product(x.Shape[:a])
	offs := make([]int, len(idx))
	for lo := 0; lo < len(idx); lo += ops.TickEvery {
		hi := min(lo+ops.TickEvery, len(idx))
		if err := oc.Tick(hi - lo); err != nil {
			return nil, err
		}
		for j, i := range idx[lo:hi] {
			k, err := wrap(i, dim, "Gather")
			if err != nil {
				return nil, err
			}
			offs[lo+j] = k * inner
		}
	}
	mv := tensorops.MoverOf(x.DType)
	for o := 0; o < outer; o++ {
		if err := runs(oc, mv, y.Data, o*len(offs)*inner, x.Data, o*dim*inner, offs, inner); err != nil {
			return nil, err
		}
	}
	return y, nil
}
