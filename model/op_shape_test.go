package model

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func castAttr(to onnxpb.DataType) []*onnxpb.Attribute {
	return []*onnxpb.Attribute{{Name: "to", Type: onnxpb.AttrInt, I: int64(to)}}
}

// fmtData formats t's elements as Cast to STRING does.
func fmtData(t *tensor.Tensor) string {
	st, _ := castTo(t, tensor.String) // never fails to STRING
	s := "["
	for i, v := range st.Data.([]string) {
		if i > 0 {
			s += " "
		}
		s += v
	}
	return s + "]"
}

// TestConstantForms loads Constant with each of its value attributes;
// a sparse value is refused.
func TestConstantForms(t *testing.T) {
	f := float32(2.5)
	for _, c := range []struct {
		attr *onnxpb.Attribute
		want *tensor.Tensor
	}{
		{&onnxpb.Attribute{Name: "value", Type: onnxpb.AttrTensor, T: TensorToONNX("", tensor.From([]int{2}, []int16{1, 2}))}, tensor.From([]int{2}, []int16{1, 2})},
		{&onnxpb.Attribute{Name: "value_float", Type: onnxpb.AttrFloat, F: f}, tensor.Scalar(f)},
		{&onnxpb.Attribute{Name: "value_floats", Type: onnxpb.AttrFloats, Floats: []float32{1, f}}, tensor.From([]int{2}, []float32{1, f})},
		{&onnxpb.Attribute{Name: "value_int", Type: onnxpb.AttrInt, I: -3}, tensor.Scalar(int64(-3))},
		{&onnxpb.Attribute{Name: "value_ints", Type: onnxpb.AttrInts, Ints: []int64{4, 5}}, tensor.From([]int{2}, []int64{4, 5})},
		{&onnxpb.Attribute{Name: "value_string", Type: onnxpb.AttrString, S: []byte("héllo")}, tensor.Scalar("héllo")},
		{&onnxpb.Attribute{Name: "value_strings", Type: onnxpb.AttrStrings, Strings: [][]byte{[]byte("a"), {}}}, tensor.From([]int{2}, []string{"a", ""})},
	} {
		out, err := runOp(t, "Constant", 21, 1, []*onnxpb.Attribute{c.attr})
		if err != nil {
			t.Fatalf("%s: %v", c.attr.Name, err)
		}
		if out[0].DType != c.want.DType || !slices.Equal(out[0].Shape, c.want.Shape) || fmtData(out[0]) != fmtData(c.want) {
			t.Errorf("Constant %s = %v %v %v", c.attr.Name, out[0].DType, out[0].Shape, out[0].Data)
		}
	}
	_, err := runOp(t, "Constant", 21, 1, []*onnxpb.Attribute{{Name: "sparse_value", Type: onnxpb.AttrSparseTensor}})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("sparse_value: %v", err)
	}
}

// TestIdentityEveryType passes each element type through Identity.
func TestIdentityEveryType(t *testing.T) {
	for dt := tensor.Bool; dt <= tensor.String; dt++ {
		x, err := tensor.New(dt, []int{2, 0, 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []*tensor.Tensor{x, tensor.From([]int{1}, []string{"s"})} {
			if in.DType != dt && in.DType == tensor.String {
				continue
			}
			out, err := runOp(t, "Identity", 21, 1, nil, in)
			if err != nil || out[0] != in {
				t.Errorf("Identity on %v: %v, %v", dt, out, err)
			}
		}
	}
}
