package index

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestCompressNonZeroOneHot(t *testing.T) {
	x := opstest.Seq(2, 3)
	cond := tensor.From([]int{3}, []bool{true, false, true})
	opstest.Check(t, "Compress axis 1", opstest.Run1(t, opstest.Node{Op: "Compress", Opset: 11, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", -1)}}, x, cond), []int{2, 2}, []float32{0, 2, 3, 5})
	opstest.Check(t, "Compress flat", opstest.Run1(t, opstest.Node{Op: "Compress", Opset: 11}, x, cond), []int{2}, []float32{0, 2})
	opstest.WantInputError(t, opstest.Node{Op: "Compress", Opset: 11, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 0)}}, "selects entry 2 of an axis of 2", x, cond)

	opstest.Check(t, "NonZero", opstest.Run1(t, opstest.Node{Op: "NonZero", Opset: 13}, tensor.From([]int{2, 2}, []int32{0, 3, -1, 0})), []int{2, 2}, []int64{0, 1, 1, 0})
	opstest.Check(t, "NonZero scalar", opstest.Run1(t, opstest.Node{Op: "NonZero", Opset: 13}, tensor.Scalar(float32(2))), []int{1, 1}, []int64{0})
	opstest.Check(t, "NonZero none", opstest.Run1(t, opstest.Node{Op: "NonZero", Opset: 13}, tensor.From([]int{2}, []bool{false, false})), []int{1, 0}, []int64{})

	ind := tensor.From([]int{3}, []int64{1, -1, 7})
	vals := tensor.From([]int{2}, []string{"off", "on"})
	y := opstest.Run1(t, opstest.Node{Op: "OneHot", Opset: 11}, ind, tensor.Scalar(float32(3.7)), vals)
	opstest.Check(t, "OneHot", y, []int{3, 3}, []string{"off", "on", "off", "off", "off", "on", "off", "off", "off"})
	y = opstest.Run1(t, opstest.Node{Op: "OneHot", Opset: 11, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 0)}}, ind, tensor.Scalar(int64(2)), tensor.From([]int{2}, []int32{0, 5}))
	opstest.Check(t, "OneHot axis 0", y, []int{2, 3}, []int32{0, 0, 0, 5, 5, 0})
	for _, c := range []struct {
		ins  []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{ind, tensor.Scalar(int64(1) << 40), vals}, "depth 1.099511627776e+12 is invalid"},
		{[]*tensor.Tensor{tensor.From([]int{1 << 12}, make([]int64, 1<<12)), tensor.Scalar(int64(1 << 20)), vals}, "too many elements"},
		{[]*tensor.Tensor{ind, tensor.Scalar(int64(-1)), vals}, "is invalid"},
		{[]*tensor.Tensor{ind, tensor.Scalar(float32(math.NaN())), vals}, "is invalid"},
		{[]*tensor.Tensor{ind, tensor.Scalar(int64(2)), tensor.From([]int{3}, []string{"a", "b", "c"})}, "[off, on]"},
	} {
		opstest.WantInputError(t, opstest.Node{Op: "OneHot", Opset: 11}, c.want, c.ins...)
	}
}
