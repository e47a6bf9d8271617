package tensor

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Constant", Since: 1, Fold: true}, buildConstant)
}

// ConstantAttrs are Constant's attributes: exactly one holds the value.
type ConstantAttrs struct {
	Value       *tensor.Tensor `onnx:"value"`
	ValueFloat  *float32       `onnx:"value_float"`
	ValueFloats []float32      `onnx:"value_floats"`
	ValueInt    *int64         `onnx:"value_int"`
	ValueInts   []int64        `onnx:"value_ints"`
	ValueString *string        `onnx:"value_string"`
	ValueStrs   []string       `onnx:"value_strings"`
}

// constant is a compiled Constant: the tensor it outputs on every run.
type constant struct{ t *tensor.Tensor }

func buildConstant(n *ops.Node, at *ConstantAttrs) (ops.Operator, error) {
	if err := n.CheckArity(0, 0, 1, 1); err != nil {
		return nil, err
	}
	if len(n.Attrs) != 1 {
		return nil, fmt.Errorf("needs exactly one value attribute, has %d", len(n.Attrs))
	}
	var t *tensor.Tensor
	switch {
	case at.Value != nil:
		t = at.Value
	case at.ValueFloat != nil:
		t = tensor.Scalar(*at.ValueFloat)
	case at.ValueFloats != nil:
		t = tensor.From([]int{len(at.ValueFloats)}, at.ValueFloats)
	case at.ValueInt != nil:
		t = tensor.Scalar(*at.ValueInt)
	case at.ValueInts != nil:
		t = tensor.From([]int{len(at.ValueInts)}, at.ValueInts)
	case at.ValueString != nil:
		t = tensor.Scalar(*at.ValueString)
	case at.ValueStrs != nil:
		t = tensor.From([]int{len(at.ValueStrs)}, at.ValueStrs)
	}
	return constant{t: t}, nil
}

func (k constant) Run(_ *ops.Context, _ []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return []*tensor.Tensor{k.t}, nil
}
