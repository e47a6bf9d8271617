package index

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// TopK: K as an attribute (opsets 1–9) or an input (10 on); largest and
// sorted from opset 11.
func init() {
	ops.Register(ops.Descriptor{Type: "TopK", Since: 1, Until: 9, Fold: true}, buildTopK)
	ops.Register(ops.Descriptor{Type: "TopK", Since: 10, Fold: true}, buildTopK)
}

// TopKAttrs are TopK's attributes; K is an attribute before opset 10
// and an input after.
type TopKAttrs struct {
	Axis    int64  `onnx:"axis" default:"-1"`
	Largest bool   `onnx:"largest" default:"true"`
	Sorted  bool   `onnx:"sorted" default:"true"`
	K       *int64 `onnx:"k"`
}

// topK is a compiled TopK: its axis, whether it takes the largest
// entries, and K when it is an attribute (legacy).
type topK struct {
	axis    int64
	largest bool
	legacy  bool
	k       int64
}

func buildTopK(n *ops.Node, at *TopKAttrs) (ops.Operator, error) {
	legacy := n.Opset < 10
	op := topK{axis: at.Axis, largest: at.Largest, legacy: legacy}
	if legacy {
		if err := n.CheckArity(1, 1, 1, 2); err != nil {
			return nil, err
		}
		if at.K == nil {
			return nil, fmt.Errorf("TopK needs the k attribute before opset 10")
		}
		op.k = *at.K
	} else {
		if err := n.CheckArity(2, 2, 1, 2); err != nil {
			return nil, err
		}
		if at.K != nil {
			return nil, fmt.Errorf("TopK takes K as an input from opset 10, not an attribute")
		}
	}
	return op, nil
}

func (op topK) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	k := op.k
	if !op.legacy {
		kv, err := indexValues(in[1], "TopK K")
		if err != nil {
			return nil, err
		}
		if len(kv) != 1 {
			return nil, ops.InputErrorf("TopK K must hold one value, has %d", len(kv))
		}
		k = kv[0]
	}
	if x.Rank() == 0 {
		return nil, ops.InputErrorf("TopK needs rank >= 1")
	}
	a, err := ops.NormAxis(op.axis, x.Rank())
	if err != nil {
		return nil, err
	}
	if k < 0 || k > int64(x.Shape[a]) {
		return nil, ops.InputErrorf("TopK K %d is out of range for an axis of %d", k, x.Shape[a])
	}
	values, indices, err := topKAlong(c, x, a, int(k), op.largest)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{values, indices}, nil
}

// topKAlong returns the k largest (or smallest) entries along axis a and
// their indices, sorted; equal entries keep their order (lower index
// first).
func topKAlong(oc *ops.Context, x *tensor.Tensor, a, k int, largest bool) (*tensor.Tensor, *tensor.Tensor, error) {
	shape := slices.Clone(x.Shape)
	shape[a] = k
	values, size, err := NewTensor(oc, x.DType, shape)
	if err != nil {
		return nil, nil, err
	}
	idx := make([]int64, size)
	indices := tensor.From(shape, idx)
	if size == 0 {
		return values, indices, nil
	}
	order, err := compareOf(x)
	if err != nil {
		return nil, nil, err
	}
	if largest {
		asc := order
		order = func(i, j int) int { return asc(j, i) }
	}
	outer, dim, inner := geometry(x.Shape, a)
	cand := make([]int, dim)
	offs := make([]int, size)
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			base := o*dim*inner + j
			err := oc.InPieces(dim, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					cand[i] = base + i*inner
				}
			})
			if err != nil {
				return nil, nil, err
			}
			if err := sortStable(oc, cand, 1, order); err != nil {
				return nil, nil, err
			}
			err = oc.InPieces(k, func(lo, hi int) {
				for i, c := range cand[lo:hi] {
					p := (o*k+lo+i)*inner + j
					offs[p] = c
					idx[p] = int64((c - base) / inner)
				}
			})
			if err != nil {
				return nil, nil, err
			}
		}
	}
	if err := runs(oc, tensorops.MoverOf(x.DType), values.Data, 0, x.Data, 0, offs, 1); err != nil {
		return nil, nil, err
	}
	return values, indices, nil
}
