package tensor

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "ConstantOfShape", Since: 9, Fold: true}, buildConstantOfShape)
}

// ConstantOfShapeAttrs are ConstantOfShape's attributes: a one-element
// tensor whose value and type fill the output (FLOAT 0 when absent).
type ConstantOfShapeAttrs struct {
	Value *tensor.Tensor `onnx:"value"`
}

// constantOfShape is a compiled ConstantOfShape: the one-element tensor
// that fills its output.
type constantOfShape struct{ val *tensor.Tensor }

func buildConstantOfShape(n *ops.Node, at *ConstantOfShapeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	val := at.Value
	if val == nil {
		val = tensor.Scalar(float32(0))
	}
	if val.Len() != 1 {
		return nil, fmt.Errorf("ConstantOfShape value must have one element, has %d", val.Len())
	}
	return constantOfShape{val: val}, nil
}

func (c constantOfShape) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s := in[0]
	dims, ok := s.Data.([]int64)
	if !ok || s.Rank() != 1 {
		return nil, ops.InputErrorf("ConstantOfShape takes a 1-D INT64 shape, got %v%s", s.DType, tensor.ShapeString(s.Shape))
	}
	shape := make([]int, len(dims))
	for i, d := range dims {
		if d < 0 || d > tensor.MaxElements {
			return nil, ops.InputErrorf("ConstantOfShape: dimension %d is %d", i, d)
		}
		shape[i] = int(d)
	}
	t, err := tensor.New(c.val.DType, shape)
	if err != nil {
		return nil, ops.InputErrorf("ConstantOfShape: %v", err)
	}
	fillFirst(t.Data, c.val.Data)
	return []*tensor.Tensor{t}, nil
}

// fillFirst sets every element of dst to the first element of src, a
// slice of the same type.
func fillFirst(dst, src any) {
	switch d := dst.(type) {
	case []bool:
		Fill(d, src.([]bool)[0])
	case []uint8:
		Fill(d, src.([]uint8)[0])
	case []uint16:
		Fill(d, src.([]uint16)[0])
	case []uint32:
		Fill(d, src.([]uint32)[0])
	case []uint64:
		Fill(d, src.([]uint64)[0])
	case []int8:
		Fill(d, src.([]int8)[0])
	case []int16:
		Fill(d, src.([]int16)[0])
	case []int32:
		Fill(d, src.([]int32)[0])
	case []int64:
		Fill(d, src.([]int64)[0])
	case []float32:
		Fill(d, src.([]float32)[0])
	case []float64:
		Fill(d, src.([]float64)[0])
	case []tensor.F16:
		Fill(d, src.([]tensor.F16)[0])
	case []tensor.BF16:
		Fill(d, src.([]tensor.BF16)[0])
	case []string:
		Fill(d, src.([]string)[0])
	}
}

// Fill sets every element of d, a slice fresh from tensor.New (all zero),
// to v.
func Fill[T tensor.Elem](d []T, v T) {
	var zero T
	if v == zero {
		return // already zero
	}
	for i := range d {
		d[i] = v
	}
}
