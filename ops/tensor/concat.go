package tensor

import (
	"fmt"
	"slices"

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
	outer := 1
	for _, d := range shape[:a] {
		outer *= d
	}
	inner := 1
	for _, d := range shape[a+1:] {
		inner *= d
	}
	pos := 0
	for o := 0; o < outer; o++ {
		for _, t := range in {
			chunk := t.Shape[a] * inner
			for k := 0; k < chunk; k += ops.TickEvery {
				n := min(ops.TickEvery, chunk-k)
				if err := c.Tick(n); err != nil {
					return nil, err
				}
				mv.CopyN(out, pos+k, t.Data, o*chunk+k, n)
			}
			pos += chunk
		}
	}
	return []*tensor.Tensor{{DType: first.DType, Shape: shape, Data: out}}, nil
}
