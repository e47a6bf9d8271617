package ml

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// LabelEncoder-1 maps strings to their positions in classes_strings and
// back; from opset 2 it maps keys to values of any pair of types it
// names, given as attributes (opset 2) or tensors (opset 4).
func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "LabelEncoder", Since: 1, Until: 1, Fold: true}, buildLabelEncoder1)
	ops.Register(ops.Descriptor{Domain: domain, Type: "LabelEncoder", Since: 2, Until: 3, Fold: true}, buildLabelEncoder2)
	ops.Register(ops.Descriptor{Domain: domain, Type: "LabelEncoder", Since: 4, Fold: true}, buildLabelEncoder4)
}

// LabelEncoder1Attrs are LabelEncoder-1's attributes.
type LabelEncoder1Attrs struct {
	ClassesStrings []string `onnx:"classes_strings"`
	DefaultInt64   int64    `onnx:"default_int64" default:"-1"`
	DefaultString  string   `onnx:"default_string" default:"_Unused"`
}

func buildLabelEncoder1(n *ops.Node, a *LabelEncoder1Attrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	return newStringIntMapper("LabelEncoder", a.ClassesStrings, nil, a.DefaultInt64, a.DefaultString, false), nil
}

// LabelEncoderAttrs are LabelEncoder-2's attributes.
type LabelEncoderAttrs struct {
	DefaultFloat  float32   `onnx:"default_float" default:"-0"`
	DefaultInt64  int64     `onnx:"default_int64" default:"-1"`
	DefaultString string    `onnx:"default_string" default:"_Unused"`
	KeysFloats    []float32 `onnx:"keys_floats"`
	KeysInt64s    []int64   `onnx:"keys_int64s"`
	KeysStrings   []string  `onnx:"keys_strings"`
	ValuesFloats  []float32 `onnx:"values_floats"`
	ValuesInt64s  []int64   `onnx:"values_int64s"`
	ValuesStrings []string  `onnx:"values_strings"`
}

// LabelEncoder4Attrs are LabelEncoder-4's: LabelEncoder-2's and tensors.
type LabelEncoder4Attrs struct {
	LabelEncoderAttrs
	DefaultTensor *tensor.Tensor `onnx:"default_tensor"`
	KeysTensor    *tensor.Tensor `onnx:"keys_tensor"`
	ValuesTensor  *tensor.Tensor `onnx:"values_tensor"`
}

func buildLabelEncoder2(n *ops.Node, a *LabelEncoderAttrs) (ops.Operator, error) {
	return buildLabelEncoder4(n, &LabelEncoder4Attrs{LabelEncoderAttrs: *a})
}

func buildLabelEncoder4(n *ops.Node, a *LabelEncoder4Attrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	var keys, values []*tensor.Tensor
	if a.KeysFloats != nil {
		keys = append(keys, tensor.From([]int{len(a.KeysFloats)}, a.KeysFloats))
	}
	if a.KeysInt64s != nil {
		keys = append(keys, tensor.From([]int{len(a.KeysInt64s)}, a.KeysInt64s))
	}
	if a.KeysStrings != nil {
		keys = append(keys, tensor.From([]int{len(a.KeysStrings)}, a.KeysStrings))
	}
	if a.KeysTensor != nil {
		keys = append(keys, a.KeysTensor)
	}
	var def *tensor.Tensor
	if a.ValuesFloats != nil {
		values = append(values, tensor.From([]int{len(a.ValuesFloats)}, a.ValuesFloats))
		def = tensor.Scalar(a.DefaultFloat)
	}
	if a.ValuesInt64s != nil {
		values = append(values, tensor.From([]int{len(a.ValuesInt64s)}, a.ValuesInt64s))
		def = tensor.Scalar(a.DefaultInt64)
	}
	if a.ValuesStrings != nil {
		values = append(values, tensor.From([]int{len(a.ValuesStrings)}, a.ValuesStrings))
		def = tensor.Scalar(a.DefaultString)
	}
	if a.ValuesTensor != nil {
		values = append(values, a.ValuesTensor)
		def = a.DefaultTensor
		if def == nil {
			var err error
			if def, err = labelEncoderDefault(a.ValuesTensor.DType); err != nil {
				return nil, err
			}
		}
	}
	if len(keys) != 1 || len(values) != 1 {
		return nil, fmt.Errorf("needs exactly one keys_* and one values_* attribute, has %d and %d", len(keys), len(values))
	}
	k, v := keys[0], values[0]
	if k.Len() != v.Len() {
		return nil, fmt.Errorf("has %d keys and %d values", k.Len(), v.Len())
	}
	if def.Len() != 1 || def.DType != v.DType {
		return nil, fmt.Errorf("default_tensor must be one %v, got %v %s", v.DType, def.DType, tensor.ShapeString(def.Shape))
	}
	for what, dt := range map[string]tensor.DataType{"keys": k.DType, "values": v.DType} {
		switch dt {
		case tensor.String, tensor.Int64, tensor.Int32, tensor.Int16, tensor.Float32, tensor.Float64:
		default:
			return nil, ops.Unsupportedf("LabelEncoder %s of type %v", what, dt)
		}
	}
	all := make([]int, v.Len())
	for i := range all {
		all[i] = i
	}
	table := &tensor.Tensor{DType: v.DType, Shape: []int{v.Len() + 1}, Data: appendFirst(take(v.Data, all), def.Data)}
	return newEncoder("LabelEncoder", newKeyIndex(k, true), table), nil
}

func labelEncoderDefault(dt tensor.DataType) (*tensor.Tensor, error) {
	switch dt {
	case tensor.String:
		return tensor.Scalar("_Unused"), nil
	case tensor.Float32:
		return tensor.Scalar(float32(math.Copysign(0, -1))), nil
	case tensor.Float64:
		return tensor.Scalar(math.Copysign(0, -1)), nil
	case tensor.Int64:
		return tensor.Scalar(int64(-1)), nil
	case tensor.Int32:
		return tensor.Scalar(int32(-1)), nil
	case tensor.Int16:
		return tensor.Scalar(int16(-1)), nil
	}
	return nil, ops.Unsupportedf("LabelEncoder values of type %v", dt)
}
