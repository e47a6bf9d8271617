package tensor

import (
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
)

func TestConcat(t *testing.T) {
	a, b := opstest.Seq(2, 1), opstest.Seq(2, 2)
	axis := func(v int64) []*onnxpb.Attribute { return []*onnxpb.Attribute{opstest.AttrInt("axis", v)} }
	opstest.Check(t, "Concat axis -1", opstest.Run1(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: axis(-1)}, a, b, a), []int{2, 4}, []float32{0, 0, 1, 0, 1, 2, 3, 1})
	opstest.Check(t, "Concat of one", opstest.Run1(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: axis(0)}, b), []int{2, 2}, b.Data)
	opstest.Check(t, "Concat of an empty input", opstest.Run1(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: axis(0)}, opstest.Seq(0, 2), b), []int{2, 2}, b.Data)
	opstest.WantInputError(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: axis(0)}, "differ off axis 0", a, b)
	opstest.WantInputError(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: axis(1)}, "differ in type or rank", a, opstest.Seq(2))
	opstest.WantInputError(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: axis(1)}, "differ in type or rank", a, opstest.I64s(1, 2))
	opstest.WantInputError(t, opstest.Node{Op: "Concat", Opset: 13, Attrs: axis(2)}, "out of range", a, a)
	if _, err := opstest.Run(t, opstest.Node{Op: "Concat", Opset: 13}, a, a); err == nil {
		t.Error("Concat without axis compiled")
	}
}
