package logic

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestIsNaNIsInf(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	vals := []float64{1, inf, -inf, nan, 0}
	for _, x := range []*tensor.Tensor{
		tensor.From([]int{5}, vals),
		tensor.From([]int{5}, f32s(vals)),
		tensor.From([]int{5}, tensor.Float32ToHalf[tensor.BF16](f32s(vals))),
		tensor.From([]int{5}, tensor.Float32ToHalf[tensor.F16](f32s(vals))),
	} {
		out, err := opstest.Run(t, opstest.Node{Op: "IsNaN", Opset: 20}, x)
		if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{false, false, false, true, false}) {
			t.Errorf("IsNaN %v = %v, %v", x.DType, out, err)
		}
		for _, c := range []struct {
			neg, pos int64
			want     []bool
		}{
			{1, 1, []bool{false, true, true, false, false}},
			{0, 1, []bool{false, true, false, false, false}},
			{1, 0, []bool{false, false, true, false, false}},
			{0, 0, []bool{false, false, false, false, false}},
		} {
			attrs := []*onnxpb.Attribute{{Name: "detect_negative", Type: onnxpb.AttrInt, I: c.neg}, {Name: "detect_positive", Type: onnxpb.AttrInt, I: c.pos}}
			out, err := opstest.Run(t, opstest.Node{Op: "IsInf", Opset: 20, Attrs: attrs}, x)
			if err != nil || !slices.Equal(out[0].Data.([]bool), c.want) {
				t.Errorf("IsInf %v neg=%d pos=%d = %v, %v", x.DType, c.neg, c.pos, out, err)
			}
		}
		out, err = opstest.Run(t, opstest.Node{Op: "IsInf", Opset: 20}, x) // both detected by default
		if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{false, true, true, false, false}) {
			t.Errorf("IsInf %v with default attributes = %v, %v", x.DType, out, err)
		}
	}
	for _, op := range []string{"IsNaN", "IsInf"} {
		if _, err := opstest.Run(t, opstest.Node{Op: op, Opset: 20}, tensor.Scalar(int32(1))); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s on INT32: %v", op, err)
		}
	}
}

// TestIsInfAttrs: the builder keeps its parsed attributes as it got them,
// and an attribute IsInf does not name is refused at load.
func TestIsInfAttrs(t *testing.T) {
	attrs := []*onnxpb.Attribute{{Name: "detect_negative", Type: onnxpb.AttrInt, I: 0}}
	_, params, err := opstest.Compile(opstest.Node{Op: "IsInf", Opset: 20, Attrs: attrs}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := params.(*IsInfAttrs); !ok || *at != (IsInfAttrs{DetectNegative: false, DetectPositive: true}) {
		t.Errorf("parsed attributes %#v", params)
	}
	bad := []*onnxpb.Attribute{{Name: "detect_nan", Type: onnxpb.AttrInt, I: 1}}
	if _, _, err := opstest.Compile(opstest.Node{Op: "IsInf", Opset: 20, Attrs: bad}, 1); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("IsInf with detect_nan: %v", err)
	}
}
