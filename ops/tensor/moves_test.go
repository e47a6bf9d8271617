package tensor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
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

// runOuts compiles a node of op with outs outputs and runs it on in.
func runOuts(t *testing.T, op string, opset int64, attrs []*onnxpb.Attribute, outs int, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	return opstest.Run(t, opstest.Node{Op: op, Opset: opset, Attrs: attrs, Outputs: outs}, in...)
}

// run1 runs a one-output operator that must succeed.
func run1(t *testing.T, op string, opset int64, attrs []*onnxpb.Attribute, in ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	out, err := run(t, op, opset, attrs, in...)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return out[0]
}

// wantInputError runs a node and checks that it fails with an input error
// mentioning want.
func wantInputError(t *testing.T, op string, opset int64, attrs []*onnxpb.Attribute, outs int, in []*tensor.Tensor, want string) {
	t.Helper()
	_, err := runOuts(t, op, opset, attrs, outs, in...)
	if err == nil || !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want an input error mentioning %q", op, err, want)
	}
}

func intsAttr(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func intAttr(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func i64s(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }

// seq returns a float32 tensor of shape holding 0, 1, 2, ...
func seq(shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(i)
	}
	return tensor.From(shape, d)
}

func check(t *testing.T, what string, got *tensor.Tensor, shape []int, want any) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no output", what)
	}
	if !slices.Equal(got.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	if fmt.Sprint(got.Data) != fmt.Sprint(want) {
		t.Fatalf("%s: %v, want %v", what, got.Data, want)
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
		check(t, "Transpose "+x.DType.String(), run1(t, "Transpose", 13, nil, x), []int{3, 2}, pick(0, 3, 1, 4, 2, 5))
		check(t, "Concat "+x.DType.String(), run1(t, "Concat", 13, []*onnxpb.Attribute{intAttr("axis", 1)}, x, x), []int{2, 6}, pick(0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5))
		check(t, "Slice "+x.DType.String(), run1(t, "Slice", 13, nil, x, i64s(-1), i64s(0), i64s(1), i64s(-2)), []int{2, 1}, pick(2, 5))
		check(t, "Tile "+x.DType.String(), run1(t, "Tile", 13, nil, x, i64s(1, 2)), []int{2, 6}, pick(0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5))
		check(t, "Expand "+x.DType.String(), run1(t, "Expand", 13, nil, x, i64s(2, 1, 1)), []int{2, 2, 3}, pick(0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5))
	}
}
