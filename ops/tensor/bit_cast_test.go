package tensor

import (
	"fmt"
	"math"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func TestBitCast(t *testing.T) {
	f := tensor.From([]int{2}, []float32{1, -2})
	to := func(dt onnxpb.DataType) []*onnxpb.Attribute { return []*onnxpb.Attribute{intAttr("to", int64(dt))} }
	check(t, "BitCast FP32→UINT32", run1(t, "BitCast", 26, to(onnxpb.Uint32), f), []int{2}, []uint32{math.Float32bits(1), math.Float32bits(-2)})
	h := tensor.From([]int{1}, []tensor.F16{0xbc00})
	if y := run1(t, "BitCast", 26, to(onnxpb.Int16), h); fmt.Sprint(y.Data) != "[-17408]" {
		t.Errorf("BitCast FP16→INT16 = %v", y.Data)
	}
	wantInputError(t, "BitCast", 26, to(onnxpb.Int16), 1, []*tensor.Tensor{f}, "element sizes differ")
	if _, err := runOuts(t, "BitCast", 26, to(onnxpb.String), 1, f); err == nil {
		t.Error("BitCast to strings compiled")
	}
}
