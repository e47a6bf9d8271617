package model

import (
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		register(Descriptor{Type: op, Since: 7, Fold: true}, arithBuilder(op))
	}
}

func arithBuilder(op string) func(n *node, _ *noAttrs) (opFunc, error) {
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			a, b := in[0], in[1]
			if err := sameType(op, a, b); err != nil {
				return nil, err
			}
			var t *tensor.Tensor
			var err error
			switch ad := a.Data.(type) {
			case []float32:
				t, err = arith(op, ad, b.Data.([]float32), a.Shape, b.Shape)
			case []float64:
				t, err = arith(op, ad, b.Data.([]float64), a.Shape, b.Shape)
			case []int8:
				t, err = arith(op, ad, b.Data.([]int8), a.Shape, b.Shape)
			case []uint8:
				t, err = arith(op, ad, b.Data.([]uint8), a.Shape, b.Shape)
			case []int16:
				t, err = arith(op, ad, b.Data.([]int16), a.Shape, b.Shape)
			case []uint16:
				t, err = arith(op, ad, b.Data.([]uint16), a.Shape, b.Shape)
			case []int32:
				t, err = arith(op, ad, b.Data.([]int32), a.Shape, b.Shape)
			case []uint32:
				t, err = arith(op, ad, b.Data.([]uint32), a.Shape, b.Shape)
			case []int64:
				t, err = arith(op, ad, b.Data.([]int64), a.Shape, b.Shape)
			case []uint64:
				t, err = arith(op, ad, b.Data.([]uint64), a.Shape, b.Shape)
			default:
				return nil, inputErrorf("%s does not take %v", op, a.DType)
			}
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{t}, nil
		}, nil
	}
}

func arith[T tensor.Numeric](op string, a, b []T, as, bs []int) (*tensor.Tensor, error) {
	var f func(x, y T) T
	switch op {
	case "Add":
		f = func(x, y T) T { return x + y }
	case "Sub":
		f = func(x, y T) T { return x - y }
	case "Mul":
		f = func(x, y T) T { return x * y }
	case "Div":
		if !tensor.DTypeOf[T]().IsFloat() {
			for _, v := range b {
				if v == 0 {
					return nil, inputErrorf("integer division by zero")
				}
			}
		}
		f = func(x, y T) T { return x / y }
	}
	shape, r, err := binaryMap(a, b, as, bs, f)
	if err != nil {
		return nil, err
	}
	return tensor.From(shape, r), nil
}
