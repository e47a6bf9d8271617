package tensor

import (
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestSplitVariants(t *testing.T) {
	x := opstest.Seq(2, 7)
	// num_outputs (18): parts of ⌈7/3⌉, the last smaller
	outs, err := opstest.Run(t, opstest.Node{Op: "Split", Opset: 18, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", -1), opstest.AttrInt("num_outputs", 3)}, Outputs: 3}, x)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "part 0", outs[0], []int{2, 3}, []float32{0, 1, 2, 7, 8, 9})
	opstest.Check(t, "part 2", outs[2], []int{2, 1}, []float32{6, 13})
	// split as an attribute (opset 11) and as an input (13), zero sizes allowed
	outs, err = opstest.Run(t, opstest.Node{Op: "Split", Opset: 11, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1), opstest.AttrInts("split", 0, 7)}, Outputs: 2}, x)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "empty part", outs[0], []int{2, 0}, []float32{})
	opstest.Check(t, "whole part", outs[1], []int{2, 7}, x.Data)
	outs, err = opstest.Run(t, opstest.Node{Op: "Split", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}, Outputs: 2}, x, opstest.I64s(5, 2))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "split input", outs[1], []int{2, 2}, []float32{5, 6, 12, 13})
	// opset 2–12 without split: equal parts
	outs, err = opstest.Run(t, opstest.Node{Op: "Split", Opset: 7, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 0)}, Outputs: 2}, x)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "equal halves", outs[1], []int{1, 7}, []float32{7, 8, 9, 10, 11, 12, 13})
	// opset 1: split as an input too
	outs, err = opstest.Run(t, opstest.Node{Op: "Split", Opset: 1, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}, Outputs: 2}, x, opstest.I64s(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "Split-1 input", outs[0], []int{2, 3}, []float32{0, 1, 2, 7, 8, 9})
	for _, c := range []struct {
		ins  []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{x, opstest.I64s(3, 3)}, "sums to 6"},
		{[]*tensor.Tensor{x, opstest.I64s(8, -1)}, "invalid size"},
		{[]*tensor.Tensor{x, opstest.I64s(7)}, "1 entries for 2 outputs"},
	} {
		opstest.WantInputError(t, opstest.Node{Op: "Split", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}, Outputs: 2}, c.want, c.ins...)
	}
	// 1 element cannot be cut in 3 parts of ⌈1/3⌉ = 1 with the last smaller
	opstest.WantInputError(t, opstest.Node{Op: "Split", Opset: 13, Outputs: 3}, "cannot cut", opstest.Seq(1))
	// Malformed nodes are refused at load: num_outputs must match the
	// outputs, comes with no split input and only from opset 18; split is
	// an input from opset 13.
	for _, n := range []struct {
		opset int64
		attrs []*onnxpb.Attribute
		outs  int
		ins   int
	}{
		{18, []*onnxpb.Attribute{opstest.AttrInt("num_outputs", 2)}, 3, 1},
		{18, []*onnxpb.Attribute{opstest.AttrInt("num_outputs", 2)}, 2, 2},
		{13, []*onnxpb.Attribute{opstest.AttrInt("num_outputs", 2)}, 2, 1},
		{13, []*onnxpb.Attribute{opstest.AttrInts("split", 3, 4)}, 2, 1},
		{11, nil, 2, 2},
	} {
		if _, _, err := opstest.Compile(opstest.Node{Op: "Split", Opset: n.opset, Attrs: n.attrs, Outputs: n.outs}, n.ins); err == nil {
			t.Errorf("Split-%d %v with %d inputs and %d outputs compiled", n.opset, n.attrs, n.ins, n.outs)
		}
	}
}

// BenchmarkSplit cuts 1×128×768 (a fused QKV projection) into three
// 1×128×256 along the last axis.
func BenchmarkSplit(b *testing.B) {
	x := opstest.Seq(1, 128, 768)
	rows := tensor.Strides(x.Shape)
	b.Run("runs", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := splitTensor(nil, x, 2, []int{256, 256, 256}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("elements", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		b.ReportAllocs()
		for b.Loop() {
			for i := 0; i < 3; i++ {
				stridedByElement(x.Data.([]float32), []int{1, 128, 256}, rows, 256*i)
			}
		}
	})
}
