package tensor

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestHugeOutputsAreInputErrors: shapes an untrusted request asks for
// beyond tensor.MaxElements are refused before anything is allocated.
func TestHugeOutputsAreInputErrors(t *testing.T) {
	x := seq(2, 2)
	big := int64(1) << 40
	for _, c := range []struct {
		op   string
		ins  []*tensor.Tensor
		want string
	}{
		{"Tile", []*tensor.Tensor{x, i64s(big, big)}, "invalid"},
		{"Tile", []*tensor.Tensor{x, i64s(1<<20, 1<<20)}, "too many elements"},
		{"Tile", []*tensor.Tensor{x, i64s(-1, 2)}, "invalid"},
		{"Tile", []*tensor.Tensor{x, i64s(2)}, "do not fit rank 2"},
		{"Expand", []*tensor.Tensor{x, i64s(big, 1, 1)}, "invalid dimension"},
		{"Expand", []*tensor.Tensor{x, i64s(1<<20, 1<<20, 1, 1)}, "too many elements"},
		{"Expand", []*tensor.Tensor{x, i64s(-2, 2)}, "invalid dimension"},
		{"Expand", []*tensor.Tensor{x, i64s(3, 2)}, "cannot be broadcast"},
		{"Reshape", []*tensor.Tensor{x, i64s(big, big)}, "invalid dimension"},
		{"Reshape", []*tensor.Tensor{x, i64s(1<<20, 1<<20, 0, -1)}, "too large"},
		{"Range", []*tensor.Tensor{tensor.Scalar(int64(0)), tensor.Scalar(int64(math.MaxInt64)), tensor.Scalar(int64(1))}, "more than"},
		{"Range", []*tensor.Tensor{tensor.Scalar(float32(0)), tensor.Scalar(float32(1e30)), tensor.Scalar(float32(1))}, "no finite size"},
		{"Range", []*tensor.Tensor{tensor.Scalar(float32(0)), tensor.Scalar(float32(math.Inf(1))), tensor.Scalar(float32(1))}, "no finite size"},
		{"Range", []*tensor.Tensor{tensor.Scalar(float64(0)), tensor.Scalar(float64(1)), tensor.Scalar(math.NaN())}, "no finite size"},
		{"Range", []*tensor.Tensor{tensor.Scalar(int32(0)), tensor.Scalar(int32(5)), tensor.Scalar(int32(0))}, "delta is 0"},
		{"Range", []*tensor.Tensor{tensor.Scalar(int32(0)), tensor.Scalar(int64(5)), tensor.Scalar(int32(1))}, "types"},
	} {
		wantInputError(t, c.op, 13, nil, 1, c.ins, c.want)
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
	check(t, "Concat", run1(t, "Concat", 13, []*onnxpb.Attribute{intAttr("axis", 1)}, x, x), []int{huge, 0, huge}, none)
	check(t, "Concat", run1(t, "Concat", 13, []*onnxpb.Attribute{intAttr("axis", 2)}, x, x), []int{huge, 0, 2 * huge}, none)
	check(t, "Transpose", run1(t, "Transpose", 13, nil, x), []int{huge, 0, huge}, none)
	check(t, "Slice", run1(t, "Slice", 13, nil, x, i64s(1), i64s(-1), i64s(2)), []int{huge, 0, huge - 2}, none)
	check(t, "Tile", run1(t, "Tile", 13, nil, x, i64s(1, 3, 1)), []int{huge, 0, huge}, none)
	check(t, "Expand", run1(t, "Expand", 13, nil, x, i64s(1, 1, 1)), []int{huge, 0, huge}, none)
	check(t, "Flatten", run1(t, "Flatten", 13, nil, x), []int{huge, 0}, none)
	outs, err := runOuts(t, "Split", 18, []*onnxpb.Attribute{intAttr("axis", 2), intAttr("num_outputs", 2)}, 2, x)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Split", outs[1], []int{huge, 0, huge / 2}, none)
}
