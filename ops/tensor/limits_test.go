package tensor

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestHugeOutputsAreInputErrors: shapes an untrusted request asks for
// beyond tensor.MaxElements are refused before anything is allocated.
func TestHugeOutputsAreInputErrors(t *testing.T) {
	x := opstest.Seq(2, 2)
	big := int64(1) << 40
	for _, c := range []struct {
		op   string
		ins  []*tensor.Tensor
		want string
	}{
		{"Tile", []*tensor.Tensor{x, opstest.I64s(big, big)}, "invalid"},
		{"Tile", []*tensor.Tensor{x, opstest.I64s(1<<20, 1<<20)}, "too many elements"},
		{"Tile", []*tensor.Tensor{x, opstest.I64s(-1, 2)}, "invalid"},
		{"Tile", []*tensor.Tensor{x, opstest.I64s(2)}, "do not fit rank 2"},
		{"Expand", []*tensor.Tensor{x, opstest.I64s(big, 1, 1)}, "invalid dimension"},
		{"Expand", []*tensor.Tensor{x, opstest.I64s(1<<20, 1<<20, 1, 1)}, "too many elements"},
		{"Expand", []*tensor.Tensor{x, opstest.I64s(-2, 2)}, "invalid dimension"},
		{"Expand", []*tensor.Tensor{x, opstest.I64s(3, 2)}, "cannot be broadcast"},
		{"Reshape", []*tensor.Tensor{x, opstest.I64s(big, big)}, "invalid dimension"},
		{"Reshape", []*tensor.Tensor{x, opstest.I64s(1<<20, 1<<20, 0, -1)}, "too large"},
		{"Range", []*tensor.Tensor{tensor.Scalar(int64(0)), tensor.Scalar(int64(math.MaxInt64)), tensor.Scalar(int64(1))}, "more than"},
		{"Range", []*tensor.Tensor{tensor.Scalar(float32(0)), tensor.Scalar(float32(1e30)), tensor.Scalar(float32(1))}, "no finite size"},
		{"Range", []*tensor.Tensor{tensor.Scalar(float32(0)), tensor.Scalar(float32(math.Inf(1))), tensor.Scalar(float32(1))}, "no finite size"},
		{"Range", []*tensor.Tensor{tensor.Scalar(float64(0)), tensor.Scalar(float64(1)), tensor.Scalar(math.NaN())}, "no finite size"},
		{"Range", []*tensor.Tensor{tensor.Scalar(int32(0)), tensor.Scalar(int32(5)), tensor.Scalar(int32(0))}, "delta is 0"},
		{"Range", []*tensor.Tensor{tensor.Scalar(int32(0)), tensor.Scalar(int64(5)), tensor.Scalar(int32(1))}, "types"},
	} {
		opstest.WantInputError(t, opstest.Node{Op: c.op, Opset: 13}, c.want, c.ins...)
	}
}

// TestEmptyTensorsWithHugeDimensions: a request may send a tensor with no
// elements whose other dimensions are each as large as the protocol
// allows ([2³¹, 0, 2³¹]); the operators answer at once, without walking
// or allocating by those dimensions.
func TestEmptyTensorsWithHugeDimensions(t *testing.T) {
	huge := tensor.MaxElements
	x := tensor.From([]int{huge, 0, huge}, []float32{})
	none := []float32{}
	opstest.Check(t, "Concat", opstest.Run1(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}}, x, x), []int{huge, 0, huge}, none)
	opstest.Check(t, "Concat", opstest.Run1(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 2)}}, x, x), []int{huge, 0, 2 * huge}, none)
	opstest.Check(t, "Transpose", opstest.Run1(t, opstest.Node{Op: "Transpose", Opset: 13}, x), []int{huge, 0, huge}, none)
	opstest.Check(t, "Slice", opstest.Run1(t, opstest.Node{Op: "Slice", Opset: 13}, x, opstest.I64s(1), opstest.I64s(-1), opstest.I64s(2)), []int{huge, 0, huge - 2}, none)
	opstest.Check(t, "Tile", opstest.Run1(t, opstest.Node{Op: "Tile", Opset: 13}, x, opstest.I64s(1, 3, 1)), []int{huge, 0, huge}, none)
	opstest.Check(t, "Expand", opstest.Run1(t, opstest.Node{Op: "Expand", Opset: 13}, x, opstest.I64s(1, 1, 1)), []int{huge, 0, huge}, none)
	opstest.Check(t, "Flatten", opstest.Run1(t, opstest.Node{Op: "Flatten", Opset: 13}, x), []int{huge, 0}, none)
	outs, err := opstest.Run(t, opstest.Node{Op: "Split", Opset: 18, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 2), opstest.AttrInt("num_outputs", 2)}, Outputs: 2}, x)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "Split", outs[1], []int{huge, 0, huge / 2}, none)
}
