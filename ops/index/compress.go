package index

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Compress", Since: 9, Fold: true}, buildCompress)
}

// CompressAttrs are Compress's attributes.
type CompressAttrs struct {
	Axis *int64 `onnx:"axis"` // nil: the input is flattened
}

// compress is a compiled Compress: the axis it selects along, or nil to
// select among the flattened input's elements.
type compress struct{ axis *int64 }

func buildCompress(n *ops.Node, at *CompressAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	var axis *int64
	if at.Axis != nil {
		a := *at.Axis
		axis = &a
	}
	return compress{axis: axis}, nil
}

func (op compress) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, cv := in[0], in[1]
	cond, ok := cv.Data.([]bool)
	if !ok || cv.Rank() != 1 {
		return nil, ops.InputErrorf("Compress condition must be a 1-D BOOL tensor, got %v%s", cv.DType, tensor.ShapeString(cv.Shape))
	}
	a, dim, flat := 0, x.Len(), op.axis == nil
	if !flat {
		var err error
		if a, err = ops.NormAxis(*op.axis, x.Rank()); err != nil {
			return nil, err
		}
		dim = x.Shape[a]
	}
	var sel []int
	for lo := 0; lo < len(cond); lo += ops.TickEvery {
		hi := min(lo+ops.TickEvery, len(cond))
		if err := c.Tick(hi - lo); err != nil {
			return nil, err
		}
		for i := lo; i < hi; i++ {
			if !cond[i] {
				continue
			}
			if i >= dim {
				return nil, ops.InputErrorf("Compress condition selects entry %d of an axis of %d", i, dim)
			}
			sel = append(sel, i)
		}
	}
	shape := []int{len(sel)}
	if !flat {
		shape = slices.Clone(x.Shape)
		shape[a] = len(sel)
	}
	y, size, err := NewTensor(c, x.DType, shape)
	if err != nil || size == 0 {
		return out1(y), err
	}
	outer, inner := 1, 1
	if !flat {
		outer, inner = product(x.Shape[:a]), product(x.Shape[a+1:])
	}
	offs := make([]int, len(sel))
	for j, s := range sel {
		offs[j] = s * inner // no more entries than the counted walk above
	}
	mv := tensorops.MoverOf(x.DType)
	for o := 0; o < outer; o++ {
		if err := runs(c, mv, y.Data, o*len(sel)*inner, x.Data, o*dim*inner, offs, inner); err != nil {
			return nil, err
		}
	}
	return out1(y), nil
}
