package model

import (
	"math"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		registry[op] = arithBuilder(op)
	}
	registry["Relu"] = unaryBuilder("Relu", true)
	registry["Sigmoid"] = unaryBuilder("Sigmoid", false)
	registry["Tanh"] = unaryBuilder("Tanh", false)
}

func arithBuilder(op string) opBuilder {
	return func(n *node) (opFunc, error) {
		if err := n.checkArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		if err := n.onlyAttrs(); err != nil {
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

func unaryBuilder(op string, ints bool) opBuilder {
	return func(n *node) (opFunc, error) {
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		if err := n.onlyAttrs(); err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			x := in[0]
			var out any
			switch d := x.Data.(type) {
			case []float32:
				out = unaryFloat(op, d)
			case []float64:
				out = unaryFloat(op, d)
			case []int8:
				if ints {
					out = relu(d)
				}
			case []int16:
				if ints {
					out = relu(d)
				}
			case []int32:
				if ints {
					out = relu(d)
				}
			case []int64:
				if ints {
					out = relu(d)
				}
			}
			if out == nil {
				return nil, inputErrorf("%s does not take %v", op, x.DType)
			}
			return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
		}, nil
	}
}

func relu[T tensor.Numeric](x []T) []T {
	r := make([]T, len(x))
	for i, v := range x {
		if v > 0 {
			r[i] = v
		}
	}
	return r
}

func unaryFloat[T float32 | float64](op string, x []T) []T {
	r := make([]T, len(x))
	switch op {
	case "Relu":
		for i, v := range x {
			if v > 0 || v != v {
				r[i] = v
			}
		}
	case "Sigmoid":
		for i, v := range x {
			r[i] = T(sigmoid(float64(v)))
		}
	case "Tanh":
		for i, v := range x {
			r[i] = T(math.Tanh(float64(v)))
		}
	}
	return r
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}
