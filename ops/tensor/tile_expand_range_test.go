package tensor

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestTile(t *testing.T) {
	x := opstest.Seq(2, 2)
	opstest.Check(t, "Tile", opstest.Run1(t, opstest.Node{Op: "Tile", Opset: 13}, x, opstest.I64s(2, 3)), []int{4, 6}, []float32{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3})
	opstest.Check(t, "Tile by 0", opstest.Run1(t, opstest.Node{Op: "Tile", Opset: 13}, x, opstest.I64s(0, 3)), []int{0, 6}, []float32{})
	opstest.Check(t, "Tile INT32 repeats", opstest.Run1(t, opstest.Node{Op: "Tile", Opset: 13}, x, tensor.From([]int{2}, []int32{1, 2})), []int{2, 4}, []float32{0, 1, 0, 1, 2, 3, 2, 3})
}

func TestExpand(t *testing.T) {
	opstest.Check(t, "Expand", opstest.Run1(t, opstest.Node{Op: "Expand", Opset: 13}, opstest.Seq(3, 1), opstest.I64s(2, 1, 4)), []int{2, 3, 4}, []float32{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2})
	// bidirectional: stays [3,1]
	opstest.Check(t, "Expand to a smaller shape", opstest.Run1(t, opstest.Node{Op: "Expand", Opset: 13}, opstest.Seq(3, 1), opstest.I64s(1, 1)), []int{3, 1}, []float32{0, 1, 2})
}

func TestRange(t *testing.T) {
	y := opstest.Run1(t, opstest.Node{Op: "Range", Opset: 11}, tensor.Scalar(int64(10)), tensor.Scalar(int64(4)), tensor.Scalar(int64(-2)))
	opstest.Check(t, "Range down", y, []int{3}, []int64{10, 8, 6})
	y = opstest.Run1(t, opstest.Node{Op: "Range", Opset: 11}, tensor.Scalar(int64(math.MinInt64)), tensor.Scalar(int64(math.MinInt64+3)), tensor.Scalar(int64(math.MaxInt64)))
	opstest.Check(t, "Range of extremes", y, []int{1}, []int64{math.MinInt64})
	y = opstest.Run1(t, opstest.Node{Op: "Range", Opset: 11}, tensor.Scalar(int16(1)), tensor.Scalar(int16(1)), tensor.Scalar(int16(1)))
	opstest.Check(t, "empty Range", y, []int{0}, []int16{})
	y = opstest.Run1(t, opstest.Node{Op: "Range", Opset: 11}, tensor.Scalar(int32(-1)), tensor.Scalar(int32(4)), tensor.Scalar(int32(2)))
	opstest.Check(t, "INT32 Range", y, []int{3}, []int32{-1, 1, 3})
	y = opstest.Run1(t, opstest.Node{Op: "Range", Opset: 11}, tensor.Scalar(0.5), tensor.Scalar(2.0), tensor.Scalar(0.5))
	opstest.Check(t, "DOUBLE Range", y, []int{3}, []float64{0.5, 1, 1.5})
	y = opstest.Run1(t, opstest.Node{Op: "Range", Opset: 11}, tensor.Scalar(float32(1)), tensor.Scalar(float32(0)), tensor.Scalar(float32(-0.25)))
	opstest.Check(t, "FLOAT Range", y, []int{4}, []float32{1, 0.75, 0.5, 0.25})
	y = opstest.Run1(t, opstest.Node{Op: "Range", Opset: 27}, tensor.Scalar(tensor.F16From(0)), tensor.Scalar(tensor.F16From(1)), tensor.Scalar(tensor.F16From(0.25)))
	opstest.Check(t, "FP16 Range", y, []int{4}, tensor.Float32ToHalf[tensor.F16]([]float32{0, 0.25, 0.5, 0.75}))
	// stash_type FLOAT computes start + i·delta in float32 and rounds
	// once; another accumulates in BF16, where 256 + 1 rounds back to 256.
	start, limit, delta := tensor.Scalar(tensor.BF16From(256)), tensor.Scalar(tensor.BF16From(262)), tensor.Scalar(tensor.BF16From(1))
	y = opstest.Run1(t, opstest.Node{Op: "Range", Opset: 27}, start, limit, delta)
	opstest.Check(t, "BF16 Range in float32", y, []int{6}, tensor.Float32ToHalf[tensor.BF16]([]float32{256, 257, 258, 259, 260, 261}))
	y = opstest.Run1(t, opstest.Node{Op: "Range", Opset: 27, Attrs: []*onnxpb.Attribute{opstest.AttrInt("stash_type", 16)}}, start, limit, delta)
	opstest.Check(t, "BF16 Range accumulated", y, []int{6}, tensor.Float32ToHalf[tensor.BF16]([]float32{256, 256, 256, 256, 256, 256}))
	opstest.WantInputError(t, opstest.Node{Op: "Range", Opset: 11}, "does not take BOOL", tensor.Scalar(true), tensor.Scalar(true), tensor.Scalar(true))
	opstest.WantInputError(t, opstest.Node{Op: "Range", Opset: 11}, "must be a scalar", opstest.I64s(1, 2), tensor.Scalar(int64(3)), tensor.Scalar(int64(1)))
}
