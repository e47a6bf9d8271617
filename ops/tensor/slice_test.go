package tensor

import (
	"fmt"
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestSliceEveryOpset(t *testing.T) {
	x := opstest.Seq(3, 4)
	// opset 1–9: attributes
	y := opstest.Run1(t, opstest.Node{Op: "Slice", Opset: 9, Attrs: []*onnxpb.Attribute{opstest.AttrInts("starts", 1, -3), opstest.AttrInts("ends", 100, -1), opstest.AttrInts("axes", 0, 1)}}, x)
	opstest.Check(t, "Slice-1", y, []int{2, 2}, []float32{5, 6, 9, 10})
	if _, err := opstest.Run(t, opstest.Node{Op: "Slice", Opset: 9, Attrs: []*onnxpb.Attribute{opstest.AttrInts("starts", 1)}}, x); err == nil {
		t.Error("Slice-1 without ends compiled")
	}
	// opset 10 on: inputs, negative steps, clamping, INT32 indices
	for _, c := range []struct {
		starts, ends, axes, steps []int64
		shape                     []int
		want                      []float32
	}{
		{[]int64{0}, []int64{math.MaxInt64}, []int64{1}, []int64{2}, []int{3, 2}, []float32{0, 2, 4, 6, 8, 10}},
		{[]int64{-1}, []int64{math.MinInt64}, []int64{1}, []int64{-1}, []int{3, 4}, []float32{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}},
		{[]int64{math.MaxInt64, 1}, []int64{math.MinInt64, 3}, []int64{0, -1}, []int64{-2, 1}, []int{2, 2}, []float32{9, 10, 1, 2}},
		{[]int64{1}, []int64{1}, []int64{0}, []int64{1}, []int{0, 4}, []float32{}},
		{[]int64{10}, []int64{20}, []int64{0}, []int64{1}, []int{0, 4}, []float32{}},
		{[]int64{0}, []int64{3}, []int64{0}, []int64{math.MaxInt64}, []int{1, 4}, []float32{0, 1, 2, 3}},
		{[]int64{2}, []int64{-10}, []int64{0}, []int64{math.MinInt64}, []int{1, 4}, []float32{8, 9, 10, 11}},
	} {
		y := opstest.Run1(t, opstest.Node{Op: "Slice", Opset: 13}, x, opstest.I64s(c.starts...), opstest.I64s(c.ends...), opstest.I64s(c.axes...), opstest.I64s(c.steps...))
		opstest.Check(t, fmt.Sprintf("Slice %v:%v axes %v steps %v", c.starts, c.ends, c.axes, c.steps), y, c.shape, c.want)
	}
	i32 := func(v ...int32) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }
	y = opstest.Run1(t, opstest.Node{Op: "Slice", Opset: 13}, x, i32(1), i32(3))
	opstest.Check(t, "Slice INT32 default axes", y, []int{2, 4}, []float32{4, 5, 6, 7, 8, 9, 10, 11})
	// an empty input along a sliced axis
	y = opstest.Run1(t, opstest.Node{Op: "Slice", Opset: 13}, opstest.Seq(0, 3), opstest.I64s(-1), opstest.I64s(0), opstest.I64s(0), opstest.I64s(-1))
	opstest.Check(t, "Slice of an empty axis", y, []int{0, 3}, []float32{})
	for _, c := range []struct {
		ins  []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{x, opstest.I64s(0), opstest.I64s(1), opstest.I64s(0), opstest.I64s(0)}, "step is 0"},
		{[]*tensor.Tensor{x, opstest.I64s(0, 0), opstest.I64s(1, 1), opstest.I64s(1, -1), nil}, "repeat axis"},
		{[]*tensor.Tensor{x, opstest.I64s(0), opstest.I64s(1, 2)}, "differ in length"},
		{[]*tensor.Tensor{x, opstest.I64s(0), opstest.I64s(1), opstest.I64s(2)}, "out of range"},
		{[]*tensor.Tensor{x, opstest.I64s(0, 0, 0), opstest.I64s(1, 1, 1)}, "3 starts for rank 2"},
		{[]*tensor.Tensor{x, tensor.From([]int{1}, []float32{0}), opstest.I64s(1)}, "INT32 or INT64"},
		{[]*tensor.Tensor{x, tensor.From([]int{1, 1}, []int64{0}), opstest.I64s(1)}, "must be 1-D"},
	} {
		opstest.WantInputError(t, opstest.Node{Op: "Slice", Opset: 13}, c.want, c.ins...)
	}
}

// TestSliceView: the view the gradient of Slice walks.
func TestSliceView(t *testing.T) {
	shape, strides, base, err := SliceView([]int{3, 4}, []int64{-1, 1}, []int64{math.MinInt64, 3}, []int64{0, 1}, []int64{-2, 1})
	if err != nil || fmt.Sprint(shape, strides, base) != "[2 2] [-8 1] 9" {
		t.Errorf("SliceView = %v %v %v, %v; want [2 2] [-8 1] 9", shape, strides, base, err)
	}
}

// BenchmarkSlice takes the middle third of 1×128×768 (a fused QKV
// projection).
func BenchmarkSlice(b *testing.B) {
	x := opstest.Seq(1, 128, 768)
	rows := tensor.Strides(x.Shape)
	starts, ends, axes := []int64{256}, []int64{512}, []int64{2}
	b.Run("runs", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len() / 3))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sliceTensor(nil, x, starts, ends, axes, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("elements", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len() / 3))
		b.ReportAllocs()
		for b.Loop() {
			stridedByElement(x.Data.([]float32), []int{1, 128, 256}, rows, 256)
		}
	})
}
