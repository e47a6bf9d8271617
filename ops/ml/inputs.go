package ml

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// arity checks a node's input and output counts; every input of the ml
// operators is required, so none may be left out by an empty name.
func arity(n *ops.Node, minIn, maxIn, minOut, maxOut int) error {
	if err := n.CheckArity(minIn, maxIn, minOut, maxOut); err != nil {
		return err
	}
	return n.RequireFrom(minIn)
}

// maxTargets bounds the targets of a regressor: each row's output has
// that many values.
const maxTargets = 1 << 20

// numeric are the input types of the classifiers, regressors and scalers.
var numeric = []tensor.DataType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32}

// readRows reads a classifier's or regressor's input X, [N,F] or [F] (one
// row), of one of types, as float64 values row after row.
func readRows(op string, x *tensor.Tensor, types ...tensor.DataType) (v []float64, n, f int, err error) {
	if x == nil {
		return nil, 0, 0, ops.InputErrorf("%s needs its input X", op)
	}
	if !slices.Contains(types, x.DType) {
		return nil, 0, 0, ops.InputErrorf("%s does not take %v input", op, x.DType)
	}
	switch x.Rank() {
	case 1:
		n, f = 1, x.Shape[0]
	case 2:
		n, f = x.Shape[0], x.Shape[1]
	default:
		return nil, 0, 0, ops.InputErrorf("%s takes X of shape [N,F] or [F], got %s", op, tensor.ShapeString(x.Shape))
	}
	return x.Float64s(), n, f, nil
}

// outputShape checks that an ml operator's output of the given shape
// stays within the elements any tensor may have.
func outputShape(op string, shape ...int) error {
	if _, err := tensor.NumElements(shape); err != nil {
		return ops.InputErrorf("%s: output of shape %s is too large", op, tensor.ShapeString(shape))
	}
	return nil
}

// take returns data[idx[i]] for each i, for every element type
// including strings.
func take(data any, idx []int) any { return ops.Gather(data, idx) }

// pick is take for a typed slice.
func pick[T any](d []T, idx []int) []T {
	r := make([]T, len(idx))
	for i, j := range idx {
		r[i] = d[j]
	}
	return r
}

// appendFirst returns a followed by b's first element, two slices of one
// element type.
func appendFirst(a, b any) any {
	switch a := a.(type) {
	case []string:
		return append(a, b.([]string)[0])
	case []int64:
		return append(a, b.([]int64)[0])
	case []int32:
		return append(a, b.([]int32)[0])
	case []int16:
		return append(a, b.([]int16)[0])
	case []float32:
		return append(a, b.([]float32)[0])
	case []float64:
		return append(a, b.([]float64)[0])
	}
	panic(fmt.Sprintf("ml: appendFirst of %T", a))
}

func argmax(s []float64) int {
	best := 0
	for i, v := range s {
		if v > s[best] {
			best = i
		}
	}
	return best
}

func float32s(v []float64) []float32 {
	f := make([]float32, len(v))
	for i, e := range v {
		f[i] = float32(e)
	}
	return f
}
