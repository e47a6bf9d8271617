package ml

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "OneHotEncoder", Since: 1, Fold: true}, buildOneHotEncoder)
}

// OneHotEncoderAttrs are OneHotEncoder's attributes.
type OneHotEncoderAttrs struct {
	CatsInt64s  []int64  `onnx:"cats_int64s"`
	CatsStrings []string `onnx:"cats_strings"`
	Zeros       int64    `onnx:"zeros" default:"1"`
}

// oneHotEncoder is a compiled OneHotEncoder: its c categories, and
// whether an element of none of them gives a row of zeros (else an
// error).
type oneHotEncoder struct {
	keys  *keyIndex
	c     int
	zeros bool
}

func buildOneHotEncoder(n *ops.Node, a *OneHotEncoderAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if (len(a.CatsInt64s) > 0) == (len(a.CatsStrings) > 0) {
		return nil, fmt.Errorf("needs exactly one of cats_int64s and cats_strings")
	}
	o := &oneHotEncoder{c: len(a.CatsInt64s), zeros: a.Zeros != 0}
	if o.c > 0 {
		o.keys = newKeyIndex(tensor.From([]int{o.c}, a.CatsInt64s), false)
	} else {
		o.c = len(a.CatsStrings)
		o.keys = newKeyIndex(tensor.From([]int{o.c}, a.CatsStrings), false)
	}
	return o, nil
}

func (o *oneHotEncoder) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, c := in[0], o.c
	if o.keys.dtype == tensor.Int64 {
		switch x.DType {
		case tensor.Int64, tensor.Int32, tensor.Float32, tensor.Float64:
			vs := x.Float64s()
			ints := make([]int64, len(vs))
			for i, v := range vs {
				if math.IsNaN(v) || v >= math.MaxInt64 || v < math.MinInt64 {
					ints[i] = math.MinInt64 // matches no category
				} else {
					ints[i] = int64(v)
				}
			}
			x = &tensor.Tensor{DType: tensor.Int64, Shape: x.Shape, Data: ints}
		default:
			return nil, ops.InputErrorf("OneHotEncoder with integer categories does not take %v input", x.DType)
		}
	}
	idx, err := o.keys.lookup("OneHotEncoder", x, -1)
	if err != nil {
		return nil, err
	}
	shape := append(slices.Clone(x.Shape), c)
	if err := outputShape("OneHotEncoder", shape...); err != nil {
		return nil, err
	}
	y := make([]float32, len(idx)*c)
	for i, j := range idx {
		if j < 0 {
			if !o.zeros {
				return nil, ops.InputErrorf("OneHotEncoder: element %d is not among the categories", i)
			}
			continue
		}
		y[i*c+j] = 1
	}
	return []*tensor.Tensor{tensor.From(shape, y)}, nil
}
