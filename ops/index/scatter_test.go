package index

import (
	"errors"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestScatters(t *testing.T) {
	x := tensor.From([]int{2, 3}, []int32{1, 2, 3, 4, 5, 6})
	ind := tensor.From([]int{2, 2}, []int64{0, 0, 2, -1})
	upd := tensor.From([]int{2, 2}, []int32{10, 20, 30, 40})
	for red, want := range map[string][]int32{
		"none": {20, 2, 3, 4, 5, 40},
		"add":  {31, 2, 3, 4, 5, 76},
		"mul":  {200, 2, 3, 4, 5, 7200},
		"max":  {20, 2, 3, 4, 5, 40},
		"min":  {1, 2, 3, 4, 5, 6},
	} {
		y := opstest.Run1(t, opstest.Node{Op: "ScatterElements", Opset: 18, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1), opstest.AttrString("reduction", red)}}, x, ind, upd)
		opstest.Check(t, "ScatterElements "+red, y, []int{2, 3}, want)
	}
	for _, c := range []struct {
		opset int64
		red   string
	}{{13, "add"}, {16, "max"}} {
		n := opstest.Node{Op: "ScatterElements", Opset: c.opset, Attrs: []*onnxpb.Attribute{opstest.AttrString("reduction", c.red)}}
		if _, _, err := opstest.Compile(n, 3); !errors.Is(err, ops.ErrUnsupported) {
			t.Errorf("reduction %s at opset %d: %v, want ErrUnsupported", c.red, c.opset, err)
		}
	}
	// FP16 reductions compute in float32
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2, 3}))
	hu := tensor.From([]int{2}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, 0.25}))
	y := opstest.Run1(t, opstest.Node{Op: "ScatterElements", Opset: 18, Attrs: []*onnxpb.Attribute{opstest.AttrString("reduction", "add")}}, h, opstest.I64s(1, 1), hu)
	opstest.Check(t, "FP16 add", y, []int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2.75, 3}))
	// Scatter (opset 9–10) is ScatterElements without reductions
	y = opstest.Run1(t, opstest.Node{Op: "Scatter", Opset: 10, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}}, x, ind, upd)
	opstest.Check(t, "Scatter", y, []int{2, 3}, []int32{20, 2, 3, 4, 5, 40})
	strs := tensor.From([]int{3}, []string{"a", "b", "c"})
	opstest.Check(t, "ScatterElements strings", opstest.Run1(t, opstest.Node{Op: "ScatterElements", Opset: 13}, strs, opstest.I64s(2), tensor.From([]int{1}, []string{"z"})), []int{3}, []string{"a", "b", "z"})
	opstest.WantInputError(t, opstest.Node{Op: "ScatterElements", Opset: 18, Attrs: []*onnxpb.Attribute{opstest.AttrString("reduction", "add")}}, "does not take BYTES", strs, opstest.I64s(2), tensor.From([]int{1}, []string{"z"}))
	opstest.WantInputError(t, opstest.Node{Op: "ScatterElements", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}}, "out of range", x, tensor.From([]int{1, 1}, []int64{3}), tensor.From([]int{1, 1}, []int32{0}))
	opstest.WantInputError(t, opstest.Node{Op: "ScatterElements", Opset: 13}, "differ in shape", x, ind, tensor.From([]int{1, 2}, []int32{0, 0}))

	d := opstest.Seq(2, 2)
	y = opstest.Run1(t, opstest.Node{Op: "ScatterND", Opset: 18, Attrs: []*onnxpb.Attribute{opstest.AttrString("reduction", "mul")}}, d, tensor.From([]int{2, 1}, []int64{1, 1}), tensor.From([]int{2, 2}, []float32{2, 2, 3, 3}))
	opstest.Check(t, "ScatterND mul", y, []int{2, 2}, []float32{0, 1, 12, 18})
	y = opstest.Run1(t, opstest.Node{Op: "ScatterND", Opset: 13}, d, tensor.From([]int{1, 2}, []int64{-1, 0}), tensor.From([]int{1}, []float32{9}))
	opstest.Check(t, "ScatterND element", y, []int{2, 2}, []float32{0, 1, 9, 3})
	opstest.WantInputError(t, opstest.Node{Op: "ScatterND", Opset: 13}, "out of range", d, tensor.From([]int{1, 1}, []int64{2}), tensor.From([]int{1, 2}, []float32{0, 0}))
	opstest.WantInputError(t, opstest.Node{Op: "ScatterND", Opset: 13}, "updates have shape", d, tensor.From([]int{1, 1}, []int64{0}), tensor.From([]int{1, 3}, []float32{0, 0, 0}))
}

func TestTensorScatter(t *testing.T) {
	cache := opstest.Seq(2, 4, 1)
	upd := tensor.From([]int{2, 3, 1}, []float32{-1, -2, -3, -4, -5, -6})
	w := opstest.I64s(3, 1)
	y := opstest.Run1(t, opstest.Node{Op: "TensorScatter", Opset: 24, Attrs: []*onnxpb.Attribute{opstest.AttrString("mode", "circular")}}, cache, upd, w)
	opstest.Check(t, "circular", y, []int{2, 4, 1}, []float32{-2, -3, 2, -1, 4, -4, -5, -6})
	y = opstest.Run1(t, opstest.Node{Op: "TensorScatter", Opset: 24}, cache, upd)
	opstest.Check(t, "linear from 0", y, []int{2, 4, 1}, []float32{-1, -2, -3, 3, -4, -5, -6, 7})
	opstest.WantInputError(t, opstest.Node{Op: "TensorScatter", Opset: 24}, "leaves no room", cache, upd, w)
	opstest.WantInputError(t, opstest.Node{Op: "TensorScatter", Opset: 24}, "shape [2]", cache, upd, opstest.I64s(0))
	opstest.WantInputError(t, opstest.Node{Op: "TensorScatter", Opset: 24}, "does not fit", cache, opstest.Seq(2, 5, 1))
	opstest.WantInputError(t, opstest.Node{Op: "TensorScatter", Opset: 24, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 0)}}, "batch axis", cache, upd)
	if _, _, err := opstest.Compile(opstest.Node{Op: "TensorScatter", Opset: 24, Attrs: []*onnxpb.Attribute{opstest.AttrString("mode", "ring")}}, 2); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("mode ring: %v, want ErrUnsupported", err)
	}
}
