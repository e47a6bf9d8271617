package index

import (
	"fmt"
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestTriluEyeLikeHardmax(t *testing.T) {
	x := opstest.Seq(2, 3)
	opstest.Check(t, "triu k=1", opstest.Run1(t, opstest.Node{Op: "Trilu", Opset: 14}, x, tensor.Scalar(int64(1))), []int{2, 3}, []float32{0, 1, 2, 0, 0, 5})
	opstest.Check(t, "tril k=-1", opstest.Run1(t, opstest.Node{Op: "Trilu", Opset: 14, Attrs: []*onnxpb.Attribute{opstest.AttrInt("upper", 0)}}, x, tensor.Scalar(int64(-1))), []int{2, 3}, []float32{0, 0, 0, 3, 0, 0})
	opstest.Check(t, "triu k=max", opstest.Run1(t, opstest.Node{Op: "Trilu", Opset: 14}, x, tensor.Scalar(int64(math.MaxInt64))), []int{2, 3}, []float32{0, 0, 0, 0, 0, 0})
	opstest.Check(t, "tril k=min", opstest.Run1(t, opstest.Node{Op: "Trilu", Opset: 14, Attrs: []*onnxpb.Attribute{opstest.AttrInt("upper", 0)}}, x, tensor.Scalar(int64(math.MinInt64))), []int{2, 3}, []float32{0, 0, 0, 0, 0, 0})
	opstest.Check(t, "tril k=max", opstest.Run1(t, opstest.Node{Op: "Trilu", Opset: 14, Attrs: []*onnxpb.Attribute{opstest.AttrInt("upper", 0)}}, x, tensor.Scalar(int64(math.MaxInt64))), []int{2, 3}, x.Data)

	y := opstest.Run1(t, opstest.Node{Op: "EyeLike", Opset: 22, Attrs: []*onnxpb.Attribute{opstest.AttrInt("dtype", int64(onnxpb.Bool)), opstest.AttrInt("k", -1)}}, x)
	opstest.Check(t, "EyeLike bool k=-1", y, []int{2, 3}, []bool{false, false, false, true, false, false})
	opstest.Check(t, "EyeLike k=max", opstest.Run1(t, opstest.Node{Op: "EyeLike", Opset: 22, Attrs: []*onnxpb.Attribute{opstest.AttrInt("k", math.MaxInt64)}}, x), []int{2, 3}, []float32{0, 0, 0, 0, 0, 0})
	opstest.WantInputError(t, opstest.Node{Op: "EyeLike", Opset: 22}, "2-D", opstest.Seq(3))
	if _, err := opstest.Run(t, opstest.Node{Op: "EyeLike", Opset: 22, Attrs: []*onnxpb.Attribute{opstest.AttrInt("dtype", int64(onnxpb.String))}}, x); err == nil {
		t.Error("EyeLike of strings compiled")
	}

	h := tensor.From([]int{2, 2, 2}, []float32{1, 5, 5, 2, 0, 0, 0, 0})
	opstest.Check(t, "Hardmax-13 axis -1", opstest.Run1(t, opstest.Node{Op: "Hardmax", Opset: 13}, h), []int{2, 2, 2}, []float32{0, 1, 1, 0, 1, 0, 1, 0})
	opstest.Check(t, "Hardmax-11 coerced at axis 1", opstest.Run1(t, opstest.Node{Op: "Hardmax", Opset: 11}, h), []int{2, 2, 2}, []float32{0, 1, 0, 0, 1, 0, 0, 0})
	hf := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{1, 3, 2}))
	opstest.Check(t, "Hardmax BF16", opstest.Run1(t, opstest.Node{Op: "Hardmax", Opset: 13}, hf), []int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{0, 1, 0}))
	opstest.WantInputError(t, opstest.Node{Op: "Hardmax", Opset: 13}, "does not take INT64", opstest.I64s(1, 2))
}

func TestCumulativeReverseSequence(t *testing.T) {
	x := tensor.From([]int{2, 3}, []int32{1, 2, 3, 4, 5, 6})
	for _, c := range []struct {
		op        string
		exclusive int64
		reverse   int64
		want      []int32
	}{
		{"CumSum", 0, 0, []int32{1, 3, 6, 4, 9, 15}},
		{"CumSum", 1, 1, []int32{5, 3, 0, 11, 6, 0}},
		{"CumProd", 1, 0, []int32{1, 1, 2, 1, 4, 20}},
		{"CumProd", 0, 1, []int32{6, 6, 3, 120, 30, 6}},
	} {
		y := opstest.Run1(t, opstest.Node{Op: c.op, Opset: 26, Attrs: []*onnxpb.Attribute{opstest.AttrInt("exclusive", c.exclusive), opstest.AttrInt("reverse", c.reverse)}}, x, tensor.Scalar(int32(-1)))
		opstest.Check(t, fmt.Sprintf("%s exclusive=%d reverse=%d", c.op, c.exclusive, c.reverse), y, []int{2, 3}, c.want)
	}
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, 0.25, 2}))
	opstest.Check(t, "CumSum FP16", opstest.Run1(t, opstest.Node{Op: "CumSum", Opset: 14}, h, tensor.Scalar(int64(0))), []int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, 0.75, 2.75}))
	opstest.WantInputError(t, opstest.Node{Op: "CumSum", Opset: 14}, "out of range", x, tensor.Scalar(int64(2)))
	opstest.WantInputError(t, opstest.Node{Op: "CumSum", Opset: 14}, "CumSum does not take BOOL", tensor.From([]int{1}, []bool{true}), tensor.Scalar(int64(0)))

	sq := tensor.From([]int{3, 2}, []string{"a0", "b0", "a1", "b1", "a2", "b2"})
	y := opstest.Run1(t, opstest.Node{Op: "ReverseSequence", Opset: 10}, sq, opstest.I64s(3, 0))
	opstest.Check(t, "ReverseSequence", y, []int{3, 2}, []string{"a2", "b0", "a1", "b1", "a0", "b2"})
	opstest.WantInputError(t, opstest.Node{Op: "ReverseSequence", Opset: 10}, "length 4 is out of range", sq, opstest.I64s(4, 0))
	opstest.WantInputError(t, opstest.Node{Op: "ReverseSequence", Opset: 10}, "batch of 2", sq, opstest.I64s(1))
}
