package tensor

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestReshapeTarget(t *testing.T) {
	cases := []struct {
		in        []int
		spec      []int64
		allowZero bool
		want      []int
		err       bool
	}{
		{[]int{2, 3, 4}, []int64{0, -1}, false, []int{2, 12}, false},
		{[]int{2, 3, 4}, []int64{-1}, false, []int{24}, false},
		{[]int{2, 3, 4}, []int64{4, 0, 2}, false, []int{4, 3, 2}, false},
		{[]int{0, 3}, []int64{0, 3}, true, []int{0, 3}, false},
		{[]int{2, 3}, []int64{-1, -1}, false, nil, true},
		{[]int{2, 3}, []int64{5, -1}, false, nil, true},
		{[]int{2, 3}, []int64{-2}, false, nil, true},
		{[]int{2, 3}, []int64{1 << 40, 1 << 40}, false, nil, true},
	}
	for _, c := range cases {
		got, err := reshapeTarget(c.in, c.spec, c.allowZero)
		if (err != nil) != c.err || !c.err && !slices.Equal(got, c.want) {
			t.Errorf("reshapeTarget(%v, %v) = %v, %v", c.in, c.spec, got, err)
		}
	}
}

// TestReshapeFlattenSqueeze: the operators that only change a shape
// share their input's data.
func TestReshapeFlattenSqueeze(t *testing.T) {
	x := opstest.Seq(2, 1, 3)
	allowZero := []*onnxpb.Attribute{opstest.AttrInt("allowzero", 1)}
	for _, c := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.Attribute
		in    []*tensor.Tensor
		shape []int
	}{
		{"Reshape", 14, nil, []*tensor.Tensor{x, opstest.I64s(0, -1)}, []int{2, 3}},
		{"Reshape", 14, allowZero, []*tensor.Tensor{opstest.Seq(0, 3), opstest.I64s(3, 0)}, []int{3, 0}},
		{"Flatten", 13, nil, []*tensor.Tensor{x}, []int{2, 3}},
		{"Flatten", 13, []*onnxpb.Attribute{opstest.AttrInt("axis", -1)}, []*tensor.Tensor{x}, []int{2, 3}},
		{"Flatten", 13, []*onnxpb.Attribute{opstest.AttrInt("axis", 0)}, []*tensor.Tensor{x}, []int{1, 6}},
		{"Flatten", 13, []*onnxpb.Attribute{opstest.AttrInt("axis", 3)}, []*tensor.Tensor{x}, []int{6, 1}},
		{"Squeeze", 11, nil, []*tensor.Tensor{x}, []int{2, 3}},
		{"Squeeze", 11, []*onnxpb.Attribute{opstest.AttrInts("axes", -2)}, []*tensor.Tensor{x}, []int{2, 3}},
		{"Squeeze", 13, nil, []*tensor.Tensor{x, opstest.I64s(1)}, []int{2, 3}},
		{"Squeeze", 13, nil, []*tensor.Tensor{opstest.Seq(1, 1)}, nil},
		{"Unsqueeze", 11, []*onnxpb.Attribute{opstest.AttrInts("axes", 0, -1)}, []*tensor.Tensor{x}, []int{1, 2, 1, 3, 1}},
		{"Unsqueeze", 13, nil, []*tensor.Tensor{x, opstest.I64s(4, 1)}, []int{2, 1, 1, 3, 1}},
	} {
		y := opstest.Run1(t, opstest.Node{Op: c.op, Opset: c.opset, Attrs: c.attrs}, c.in...)
		if !slices.Equal(y.Shape, c.shape) || y.Len() > 0 && &y.Data.([]float32)[0] != &c.in[0].Data.([]float32)[0] {
			t.Errorf("%s %v: shape %v, want %v sharing the input's data", c.op, c.attrs, y.Shape, c.shape)
		}
	}
	for _, c := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.Attribute
		in    []*tensor.Tensor
		want  string
	}{
		{"Reshape", 14, nil, []*tensor.Tensor{x, tensor.From([]int{2}, []int32{3, 2})}, "1-D INT64"},
		{"Reshape", 14, nil, []*tensor.Tensor{x, opstest.I64s(4, -1)}, "cannot reshape"},
		{"Reshape", 14, nil, []*tensor.Tensor{x, opstest.I64s(0, 0, 0, 0)}, "copies dimension 3"},
		{"Flatten", 13, []*onnxpb.Attribute{opstest.AttrInt("axis", 4)}, []*tensor.Tensor{x}, "out of range"},
		{"Squeeze", 13, nil, []*tensor.Tensor{x, opstest.I64s(0)}, "has size 2, not 1"},
		{"Squeeze", 13, nil, []*tensor.Tensor{x, tensor.From([]int{1}, []int32{1})}, "must be INT64"},
		{"Unsqueeze", 13, nil, []*tensor.Tensor{x, opstest.I64s(0, 0)}, "repeat an axis"},
		{"Unsqueeze", 13, nil, []*tensor.Tensor{x, opstest.I64s(5)}, "out of range"},
		{"Unsqueeze", 11, nil, []*tensor.Tensor{x}, "needs axes"},
	} {
		opstest.WantInputError(t, opstest.Node{Op: c.op, Opset: c.opset, Attrs: c.attrs}, c.want, c.in...)
	}
}

// TestShapeAndSize: Shape's start and end clamp to the rank and count
// from the end when negative.
func TestShapeAndSize(t *testing.T) {
	x := opstest.Seq(2, 3, 0, 5)
	for _, c := range []struct {
		attrs []*onnxpb.Attribute
		want  []int64
	}{
		{nil, []int64{2, 3, 0, 5}},
		{[]*onnxpb.Attribute{opstest.AttrInt("start", 1)}, []int64{3, 0, 5}},
		{[]*onnxpb.Attribute{opstest.AttrInt("start", -10), opstest.AttrInt("end", -1)}, []int64{2, 3, 0}},
		{[]*onnxpb.Attribute{opstest.AttrInt("start", 3), opstest.AttrInt("end", 1)}, []int64{}},
		{[]*onnxpb.Attribute{opstest.AttrInt("end", 100)}, []int64{2, 3, 0, 5}},
	} {
		opstest.Check(t, "Shape", opstest.Run1(t, opstest.Node{Op: "Shape", Opset: 21, Attrs: c.attrs}, x), []int{len(c.want)}, c.want)
	}
	opstest.Check(t, "Shape of a scalar", opstest.Run1(t, opstest.Node{Op: "Shape", Opset: 21}, tensor.Scalar(int32(1))), []int{0}, []int64{})
	opstest.Check(t, "Size", opstest.Run1(t, opstest.Node{Op: "Size", Opset: 13}, opstest.Seq(3, 0, 2)), nil, []int64{0})
	opstest.Check(t, "Size", opstest.Run1(t, opstest.Node{Op: "Size", Opset: 13}, opstest.Seq(3, 2)), nil, []int64{6})
}
