package tensor

import (
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestShapeDescriptors pins the opset ranges of the shape and slicing
// operators, and that each folds.
func TestShapeDescriptors(t *testing.T) {
	for op, ranges := range map[string][][2]int64{
		"Identity": {{1, 0}}, "Flatten": {{1, 0}}, "Reshape": {{5, 0}}, "Constant": {{1, 0}},
		"Transpose": {{1, 0}}, "Shape": {{1, 0}}, "Size": {{1, 0}}, "Concat": {{1, 0}},
		"Squeeze": {{1, 12}, {13, 0}}, "Unsqueeze": {{1, 12}, {13, 0}}, "Slice": {{1, 9}, {10, 0}},
		"Split": {{1, 1}, {2, 12}, {13, 17}, {18, 0}}, "Tile": {{6, 0}}, "Expand": {{8, 0}},
		"Range": {{11, 26}, {27, 0}},
	} {
		ds := ops.Descriptors("", op)
		if len(ds) != len(ranges) {
			t.Errorf("%s: descriptors %v, want %d", op, ds, len(ranges))
			continue
		}
		for i, d := range ds {
			if d.Since != ranges[i][0] || d.Until != ranges[i][1] || !d.Fold || d.Refused {
				t.Errorf("%s: descriptor %v, want opsets %v that fold", op, d, ranges[i])
			}
		}
	}
}

// TestMovesKeepEveryElementType: the data-movement operators take every
// element type, FP16, BF16 and strings included.
func TestMovesKeepEveryElementType(t *testing.T) {
	for _, x := range []*tensor.Tensor{
		tensor.From([]int{2, 3}, []string{"a", "b", "c", "d", "e", "f"}),
		tensor.From([]int{2, 3}, tensor.Float32ToHalf[tensor.F16]([]float32{0, 1, 2, 3, 4, 5})),
		tensor.From([]int{2, 3}, tensor.Float32ToHalf[tensor.BF16]([]float32{0, 1, 2, 3, 4, 5})),
		tensor.From([]int{2, 3}, []bool{true, false, true, false, false, true}),
	} {
		d := x.Data
		pick := func(idx ...int) any { return ops.Gather(d, idx) }
		opstest.Check(t, "Transpose "+x.DType.String(), opstest.Run1(t, opstest.Node{Op: "Transpose", Opset: 13}, x), []int{3, 2}, pick(0, 3, 1, 4, 2, 5))
		opstest.Check(t, "Concat "+x.DType.String(), opstest.Run1(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}}, x, x), []int{2, 6}, pick(0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5))
		opstest.Check(t, "Slice "+x.DType.String(), opstest.Run1(t, opstest.Node{Op: "Slice", Opset: 13}, x, opstest.I64s(-1), opstest.I64s(0), opstest.I64s(1), opstest.I64s(-2)), []int{2, 1}, pick(2, 5))
		opstest.Check(t, "Tile "+x.DType.String(), opstest.Run1(t, opstest.Node{Op: "Tile", Opset: 13}, x, opstest.I64s(1, 2)), []int{2, 6}, pick(0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5))
		opstest.Check(t, "Expand "+x.DType.String(), opstest.Run1(t, opstest.Node{Op: "Expand", Opset: 13}, x, opstest.I64s(2, 1, 1)), []int{2, 2, 3}, pick(0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5))
	}
}
