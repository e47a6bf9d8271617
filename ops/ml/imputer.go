package ml

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "Imputer", Since: 1, Fold: true}, buildImputer)
}

// ImputerAttrs are Imputer's attributes.
type ImputerAttrs struct {
	ImputedValueFloats []float32 `onnx:"imputed_value_floats"`
	ImputedValueInt64s []int64   `onnx:"imputed_value_int64s"`
	ReplacedValueFloat float32   `onnx:"replaced_value_float" default:"0"`
	ReplacedValueInt64 int64     `onnx:"replaced_value_int64" default:"0"`
}

// imputer is a compiled Imputer: the value it replaces and the values
// (one, or one per feature) it puts in its place, floats or integers.
type imputer struct {
	floats        []float32
	ints          []int64
	replacedFloat float32
	replacedInt   int64
}

func buildImputer(n *ops.Node, a *ImputerAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if (len(a.ImputedValueFloats) > 0) == (len(a.ImputedValueInt64s) > 0) {
		return nil, fmt.Errorf("needs exactly one of imputed_value_floats and imputed_value_int64s")
	}
	return &imputer{floats: a.ImputedValueFloats, ints: a.ImputedValueInt64s,
		replacedFloat: a.ReplacedValueFloat, replacedInt: a.ReplacedValueInt64}, nil
}

func (p *imputer) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	var m int
	switch x.DType {
	case tensor.Float32, tensor.Float64:
		m = len(p.floats)
	case tensor.Int64, tensor.Int32:
		m = len(p.ints)
	default:
		return nil, ops.InputErrorf("Imputer does not take %v input", x.DType)
	}
	if m == 0 {
		kind := "float"
		if len(p.ints) > 0 {
			kind = "integer"
		}
		return nil, ops.InputErrorf("Imputer: the model imputes %s values, the input is %v", kind, x.DType)
	}
	f := 1
	if x.Rank() > 0 {
		f = x.Shape[x.Rank()-1]
	}
	if m != 1 && m != f {
		return nil, ops.InputErrorf("Imputer has %d imputed values, the input has %d features", m, f)
	}
	var out any
	switch d := x.Data.(type) {
	case []float32:
		out = impute(d, p.floats, p.replacedFloat, f)
	case []float64:
		out = impute(d, p.floats, float64(p.replacedFloat), f)
	case []int64:
		out = impute(d, p.ints, p.replacedInt, f)
	case []int32:
		if p.replacedInt != int64(int32(p.replacedInt)) {
			return []*tensor.Tensor{x}, nil // no INT32 value equals it
		}
		out = impute(d, p.ints, int32(p.replacedInt), f)
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
}

func impute[T float32 | float64 | int64 | int32, V float32 | int64](x []T, vals []V, old T, f int) []T {
	y := make([]T, len(x))
	nan := old != old
	for i, v := range x {
		if v == old || nan && v != v {
			if len(vals) == 1 {
				y[i] = T(vals[0])
			} else {
				y[i] = T(vals[i%f])
			}
		} else {
			y[i] = v
		}
	}
	return y
}
