package tensor

import (
	"fmt"
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestBitCast(t *testing.T) {
	f := tensor.From([]int{2}, []float32{1, -2})
	to := func(dt onnxpb.DataType) []*onnxpb.Attribute {
		return []*onnxpb.Attribute{opstest.AttrInt("to", int64(dt))}
	}
	opstest.Check(t, "BitCast FP32→UINT32", opstest.Run1(t, opstest.Node{Op: "BitCast", Opset: 26, Attrs: to(onnxpb.Uint32)}, f), []int{2}, []uint32{math.Float32bits(1), math.Float32bits(-2)})
	h := tensor.From([]int{1}, []tensor.F16{0xbc00})
	if y := opstest.Run1(t, opstest.Node{Op: "BitCast", Opset: 26, Attrs: to(onnxpb.Int16)}, h); fmt.Sprint(y.Data) != "[-17408]" {
		t.Errorf("BitCast FP16→INT16 = %v", y.Data)
	}
	opstest.WantInputError(t, opstest.Node{Op: "BitCast", Opset: 26, Attrs: to(onnxpb.Int16)}, "element sizes differ", f)
	if _, err := opstest.Run(t, opstest.Node{Op: "BitCast", Opset: 26, Attrs: to(onnxpb.String)}, f); err == nil {
		t.Error("BitCast to strings compiled")
	}
}
