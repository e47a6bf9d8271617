package index

import (
	"fmt"
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestTopK(t *testing.T) {
	x := tensor.From([]int{2, 4}, []float32{3, 1, 3, float32(math.NaN()), 0, 2, 2, -1})
	outs, err := opstest.Run(t, opstest.Node{Op: "TopK", Opset: 11, Outputs: 2}, x, opstest.I64s(3))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(outs[0].Data) != "[NaN 3 3 2 2 0]" {
		t.Errorf("TopK values %v", outs[0].Data)
	}
	opstest.Check(t, "TopK indices (ties: lower index first)", outs[1], []int{2, 3}, []int64{3, 0, 2, 1, 2, 0})
	outs, err = opstest.Run(t, opstest.Node{Op: "TopK", Opset: 11, Attrs: []*onnxpb.Attribute{opstest.AttrInt("largest", 0), opstest.AttrInt("axis", 0)}, Outputs: 2}, x, opstest.I64s(1))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "TopK smallest", outs[1], []int{1, 4}, []int64{1, 0, 1, 1})
	// uint64 beyond float64 precision orders exactly
	u := tensor.From([]int{3}, []uint64{1<<63 + 1, 1<<63 + 3, 1<<63 + 2})
	outs, err = opstest.Run(t, opstest.Node{Op: "TopK", Opset: 11, Outputs: 2}, u, opstest.I64s(2))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "TopK uint64", outs[1], []int{2}, []int64{1, 2})
	// opset 1–9: k as an attribute
	outs, err = opstest.Run(t, opstest.Node{Op: "TopK", Opset: 9, Attrs: []*onnxpb.Attribute{opstest.AttrInt("k", 1)}, Outputs: 2}, x)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "TopK-1", outs[1], []int{2, 1}, []int64{3, 1})
	if _, err := opstest.Run(t, opstest.Node{Op: "TopK", Opset: 9, Outputs: 2}, x); err == nil {
		t.Error("TopK-1 without k compiled")
	}
	if _, err := opstest.Run(t, opstest.Node{Op: "TopK", Opset: 11, Attrs: []*onnxpb.Attribute{opstest.AttrInt("k", 1)}, Outputs: 2}, x, opstest.I64s(1)); err == nil {
		t.Error("TopK-11 with a k attribute compiled")
	}
	opstest.WantInputError(t, opstest.Node{Op: "TopK", Opset: 11, Outputs: 2}, "K 5 is out of range", x, opstest.I64s(5))
	opstest.WantInputError(t, opstest.Node{Op: "TopK", Opset: 11, Outputs: 2}, "K -1 is out of range", x, opstest.I64s(-1))
	opstest.WantInputError(t, opstest.Node{Op: "TopK", Opset: 11, Outputs: 2}, "one value", x, opstest.I64s(1, 2))
}

func TestUnique(t *testing.T) {
	s := tensor.From([]int{5}, []string{"b", "a", "b", "c", "a"})
	outs, err := opstest.Run(t, opstest.Node{Op: "Unique", Opset: 11, Outputs: 4}, s)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "Unique strings", outs[0], []int{3}, []string{"a", "b", "c"})
	opstest.Check(t, "first indices", outs[1], []int{3}, []int64{1, 0, 3})
	opstest.Check(t, "inverse", outs[2], []int{5}, []int64{1, 0, 1, 2, 0})
	opstest.Check(t, "counts", outs[3], []int{3}, []int64{2, 2, 1})
	outs, err = opstest.Run(t, opstest.Node{Op: "Unique", Opset: 11, Attrs: []*onnxpb.Attribute{opstest.AttrInt("sorted", 0), opstest.AttrInt("axis", 1)}, Outputs: 4}, tensor.From([]int{2, 3}, []int32{2, 1, 2, 5, 0, 5}))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "Unique columns in order", outs[0], []int{2, 2}, []int32{2, 1, 5, 0})
	opstest.Check(t, "inverse", outs[2], []int{3}, []int64{0, 1, 0})
	outs, err = opstest.Run(t, opstest.Node{Op: "Unique", Opset: 11, Outputs: 4}, tensor.From([]int{0}, []float32{}))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "Unique of nothing", outs[3], []int{0}, []int64{})
}
