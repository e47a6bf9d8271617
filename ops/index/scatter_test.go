package index

import (
	"errors"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
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
		y := run1(t, 18, "ScatterElements", []*onnxpb.Attribute{intAttr("axis", 1), strAttr("reduction", red)}, x, ind, upd)
		check(t, "ScatterElements "+red, y, []int{2, 3}, want)
	}
	for _, c := range []struct {
		opset int64
		red   string
	}{{13, "add"}, {16, "max"}} {
		n := opstest.Node{Op: "ScatterElements", Opset: c.opset, Attrs: []*onnxpb.Attribute{strAttr("reduction", c.red)}}
		if _, _, err := opstest.Compile(n, 3); !errors.Is(err, ops.ErrUnsupported) {
			t.Errorf("reduction %s at opset %d: %v, want ErrUnsupported", c.red, c.opset, err)
		}
	}
	// FP16 reductions compute in float32
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2, 3}))
	hu := tensor.From([]int{2}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, 0.25}))
	y := run1(t, 18, "ScatterElements", []*onnxpb.Attribute{strAttr("reduction", "add")}, h, i64s(1, 1), hu)
	check(t, "FP16 add", y, []int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2.75, 3}))
	// Scatter (opset 9–10) is ScatterElements without reductions
	y = run1(t, 10, "Scatter", []*onnxpb.Attribute{intAttr("axis", 1)}, x, ind, upd)
	check(t, "Scatter", y, []int{2, 3}, []int32{20, 2, 3, 4, 5, 40})
	strs := tensor.From([]int{3}, []string{"a", "b", "c"})
	check(t, "ScatterElements strings", run1(t, 13, "ScatterElements", nil, strs, i64s(2), tensor.From([]int{1}, []string{"z"})), []int{3}, []string{"a", "b", "z"})
	wantInputError(t, 18, "ScatterElements", []*onnxpb.Attribute{strAttr("reduction", "add")}, []*tensor.Tensor{strs, i64s(2), tensor.From([]int{1}, []string{"z"})}, 1, "does not take BYTES")
	wantInputError(t, 13, "ScatterElements", []*onnxpb.Attribute{intAttr("axis", 1)}, []*tensor.Tensor{x, tensor.From([]int{1, 1}, []int64{3}), tensor.From([]int{1, 1}, []int32{0})}, 1, "out of range")
	wantInputError(t, 13, "ScatterElements", nil, []*tensor.Tensor{x, ind, tensor.From([]int{1, 2}, []int32{0, 0})}, 1, "differ in shape")

	d := seq(2, 2)
	y = run1(t, 18, "ScatterND", []*onnxpb.Attribute{strAttr("reduction", "mul")}, d, tensor.From([]int{2, 1}, []int64{1, 1}), tensor.From([]int{2, 2}, []float32{2, 2, 3, 3}))
	check(t, "ScatterND mul", y, []int{2, 2}, []float32{0, 1, 12, 18})
	y = run1(t, 13, "ScatterND", nil, d, tensor.From([]int{1, 2}, []int64{-1, 0}), tensor.From([]int{1}, []float32{9}))
	check(t, "ScatterND element", y, []int{2, 2}, []float32{0, 1, 9, 3})
	wantInputError(t, 13, "ScatterND", nil, []*tensor.Tensor{d, tensor.From([]int{1, 1}, []int64{2}), tensor.From([]int{1, 2}, []float32{0, 0})}, 1, "out of range")
	wantInputError(t, 13, "ScatterND", nil, []*tensor.Tensor{d, tensor.From([]int{1, 1}, []int64{0}), tensor.From([]int{1, 3}, []float32{0, 0, 0})}, 1, "updates have shape")
}

func TestTensorScatter(t *testing.T) {
	cache := seq(2, 4, 1)
	upd := tensor.From([]int{2, 3, 1}, []float32{-1, -2, -3, -4, -5, -6})
	w := i64s(3, 1)
	y := run1(t, 24, "TensorScatter", []*onnxpb.Attribute{strAttr("mode", "circular")}, cache, upd, w)
	check(t, "circular", y, []int{2, 4, 1}, []float32{-2, -3, 2, -1, 4, -4, -5, -6})
	y = run1(t, 24, "TensorScatter", nil, cache, upd)
	check(t, "linear from 0", y, []int{2, 4, 1}, []float32{-1, -2, -3, 3, -4, -5, -6, 7})
	wantInputError(t, 24, "TensorScatter", nil, []*tensor.Tensor{cache, upd, w}, 1, "leaves no room")
	wantInputError(t, 24, "TensorScatter", nil, []*tensor.Tensor{cache, upd, i64s(0)}, 1, "shape [2]")
	wantInputError(t, 24, "TensorScatter", nil, []*tensor.Tensor{cache, seq(2, 5, 1)}, 1, "does not fit")
	wantInputError(t, 24, "TensorScatter", []*onnxpb.Attribute{intAttr("axis", 0)}, []*tensor.Tensor{cache, upd}, 1, "batch axis")
	if _, _, err := opstest.Compile(opstest.Node{Op: "TensorScatter", Opset: 24, Attrs: []*onnxpb.Attribute{strAttr("mode", "ring")}}, 2); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("mode ring: %v, want ErrUnsupported", err)
	}
}
