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

func (c constantOfShape) Run(oc *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
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
	if err := oc.ReserveTensor(c.val.DType, shape); err != nil {
		return nil, err
	}
	t, err := tensor.New(c.val.DType, shape)
	if err != nil {
		return nil, ops.InputErrorf("ConstantOfShape: %v", err)
	}
	if err := fillFirst(oc, t.Data, c.val.Data); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

// fillFirst sets every element of dst to the first element of src, a
// slice of the same type, piece by piece under the request.
func fillFirst(c *ops.Context, dst, src any) error {
	switch d := dst.(type) {
	case []bool:
		return Fill(c, d, src.([]bool)[0])
	case []uint8:
		return Fill(c, d, src.([]uint8)[0])
	case []uint16:
		return Fill(c, d, src.([]uint16)[0])
	case []uint32:
		return Fill(c, d, src.([]uint32)[0])
	case []uint64:
		return Fill(c, d, src.([]uint64)[0])
	case []int8:
		return Fill(c, d, src.([]int8)[0])
	case []int16:
		return Fill(c, d, src.([]int16)[0])
	case []int32:
		return Fill(c, d, src.([]int32)[0])
	case []int64:
		return Fill(c, d, src.([]int64)[0])
	case []float32:
		return Fill(c, d, src.([]float32)[0])
	case []float64:
		return Fill(c, d, src.([]float64)[0])
	case []tensor.F16:
		return Fill(c, d, src.([]tensor.F16)[0])
	case []tensor.BF16:
		return Fill(c, d, src.([]tensor.BF16)[0])
	case []string:
		return Fill(c, d, src.([]string)[0])
	}
	return nil
}

// Fill sets every element of d, a slice fresh from tensor.New (all zero),
// to v, piece by piece; it stops with the request's error once the
// request ends (c may be nil: no request to watch).
func Fill[T tensor.Elem](c *ops.Context, d []T, v T) error {
	var zero T
	if v == zero {
		return nil // already zero
	}
	return c.InPieces(len(d), func(lo, hi int) {
		d := d[lo:hi]
		for i := range d {
			d[i] = v
		}
	})
}
