package tensor

import (
	"fmt"
	"slices"
	"sort"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Concat is the Concat operator.
var Concat = ops.Op{
	ops.Register(ops.Descriptor{Type: "Concat", Since: 1, Fold: true}, buildConcat),
}

// ConcatAttrs are Concat's attributes.
type ConcatAttrs struct {
	Axis *int64 `onnx:"axis"`
}

// concat is a compiled Concat: the axis (possibly negative) it joins its
// inputs along.
type concat struct{ axis int64 }

func buildConcat(n *ops.Node, at *ConcatAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1<<16, 1, 1); err != nil {
		return nil, err
	}
	if at.Axis == nil {
		return nil, fmt.Errorf("Concat needs the axis attribute")
	}
	return concat{axis: *at.Axis}, nil
}

func (op concat) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	first := in[0]
	a, err := ops.NormAxis(op.axis, first.Rank())
	if err != nil {
		return nil, err
	}
	shape := slices.Clone(first.Shape)
	shape[a] = 0
	for _, t := range in {
		if t.DType != first.DType || t.Rank() != first.Rank() {
			return nil, ops.InputErrorf("Concat inputs differ in type or rank: %v%s and %v%s", first.DType, tensor.ShapeString(first.Shape), t.DType, tensor.ShapeString(t.Shape))
		}
		for i, d := range t.Shape {
			if i != a && d != first.Shape[i] {
				return nil, ops.InputErrorf("Concat inputs differ off axis %d: %s and %s", a, tensor.ShapeString(first.Shape), tensor.ShapeString(t.Shape))
			}
		}
		shape[a] += t.Shape[a]
	}
	total, err := tensor.NumElements(shape)
	if err != nil {
		return nil, ops.InputErrorf("Concat: %v", err)
	}
	mv := MoverOf(first.DType)
	out := mv.Alloc(total)
	if total == 0 { // the dimensions of an empty result need not multiply
		return []*tensor.Tensor{{DType: first.DType, Shape: shape, Data: out}}, nil
	}
	inner := 1
	for _, d := range shape[a+1:] {
		inner *= d
	}
	if err := concatInto(c, mv, out, total, in, a, shape[a]*inner, inner); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: first.DType, Shape: shape, Data: out}}, nil
}

// concatInto fills out (n elements > 0), rows of row elements (one per
// index of the axes before a), each row the inputs' rows (their
// Shape[a]·inner elements) one after another, in contiguous ranges of
// out split across the engine's cores (ops.Context.ParallelRows).
func concatInto(c *ops.Context, mv Mover, out any, n int, in []*tensor.Tensor, a, row, inner int) error {
	starts := make([]int, len(in)+1) // where each input's part of a row starts
	for i, t := range in {
		starts[i+1] = starts[i] + t.Shape[a]*inner
	}
	copyRange := func(lo, hi int) {
		for pos := lo; pos < hi; {
			o, w := pos/row, pos%row
			k := sort.Search(len(in), func(i int) bool { return starts[i+1] > w })
			part := starts[k+1] - starts[k]
			off := w - starts[k]
			n := min(part-off, hi-pos)
			mv.CopyN(out, pos, in[k].Data, o*part+off, n)
			pos += n
		}
	}
	return c.ParallelRows(n, runCost, copyRange)
}
