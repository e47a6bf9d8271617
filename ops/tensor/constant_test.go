package tensor

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestConstantForms compiles Constant with each of its value attributes;
// a sparse value is refused, and so are two values.
func TestConstantForms(t *testing.T) {
	f := float32(2.5)
	for _, c := range []struct {
		attr *onnxpb.Attribute
		want *tensor.Tensor
	}{
		{&onnxpb.Attribute{Name: "value", Type: onnxpb.AttrTensor, T: onnx.TensorToONNX("", tensor.From([]int{2}, []int16{1, 2}))}, tensor.From([]int{2}, []int16{1, 2})},
		{&onnxpb.Attribute{Name: "value_float", Type: onnxpb.AttrFloat, F: f}, tensor.Scalar(f)},
		{&onnxpb.Attribute{Name: "value_floats", Type: onnxpb.AttrFloats, Floats: []float32{1, f}}, tensor.From([]int{2}, []float32{1, f})},
		{&onnxpb.Attribute{Name: "value_int", Type: onnxpb.AttrInt, I: -3}, tensor.Scalar(int64(-3))},
		{&onnxpb.Attribute{Name: "value_ints", Type: onnxpb.AttrInts, Ints: []int64{4, 5}}, tensor.From([]int{2}, []int64{4, 5})},
		{&onnxpb.Attribute{Name: "value_string", Type: onnxpb.AttrString, S: []byte("héllo")}, tensor.Scalar("héllo")},
		{&onnxpb.Attribute{Name: "value_strings", Type: onnxpb.AttrStrings, Strings: [][]byte{[]byte("a"), {}}}, tensor.From([]int{2}, []string{"a", ""})},
	} {
		out, err := opstest.Run(t, opstest.Node{Op: "Constant", Opset: 21, Attrs: []*onnxpb.Attribute{c.attr}})
		if err != nil {
			t.Fatalf("%s: %v", c.attr.Name, err)
		}
		if out[0].DType != c.want.DType || !slices.Equal(out[0].Shape, c.want.Shape) || fmtData(out[0]) != fmtData(c.want) {
			t.Errorf("Constant %s = %v %v %v", c.attr.Name, out[0].DType, out[0].Shape, out[0].Data)
		}
	}
	_, err := opstest.Run(t, opstest.Node{Op: "Constant", Opset: 21, Attrs: []*onnxpb.Attribute{{Name: "sparse_value", Type: onnxpb.AttrSparseTensor}}})
	if !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("sparse_value: %v", err)
	}
	_, err = opstest.Run(t, opstest.Node{Op: "Constant", Opset: 21, Attrs: []*onnxpb.Attribute{{Name: "value_int", Type: onnxpb.AttrInt, I: 1}, {Name: "value_float", Type: onnxpb.AttrFloat, F: 1}}})
	if err == nil {
		t.Error("Constant with two values compiled")
	}
}
