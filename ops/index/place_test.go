package index

import (
	"fmt"
	"math"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func TestTriluEyeLikeHardmax(t *testing.T) {
	x := seq(2, 3)
	check(t, "triu k=1", run1(t, 14, "Trilu", nil, x, tensor.Scalar(int64(1))), []int{2, 3}, []float32{0, 1, 2, 0, 0, 5})
	check(t, "tril k=-1", run1(t, 14, "Trilu", []*onnxpb.Attribute{intAttr("upper", 0)}, x, tensor.Scalar(int64(-1))), []int{2, 3}, []float32{0, 0, 0, 3, 0, 0})
	check(t, "triu k=max", run1(t, 14, "Trilu", nil, x, tensor.Scalar(int64(math.MaxInt64))), []int{2, 3}, []float32{0, 0, 0, 0, 0, 0})
	check(t, "tril k=min", run1(t, 14, "Trilu", []*onnxpb.Attribute{intAttr("upper", 0)}, x, tensor.Scalar(int64(math.MinInt64))), []int{2, 3}, []float32{0, 0, 0, 0, 0, 0})
	check(t, "tril k=max", run1(t, 14, "Trilu", []*onnxpb.Attribute{intAttr("upper", 0)}, x, tensor.Scalar(int64(math.MaxInt64))), []int{2, 3}, x.Data)

	y := run1(t, 22, "EyeLike", []*onnxpb.Attribute{intAttr("dtype", int64(onnxpb.Bool)), intAttr("k", -1)}, x)
	check(t, "EyeLike bool k=-1", y, []int{2, 3}, []bool{false, false, false, true, false, false})
	check(t, "EyeLike k=max", run1(t, 22, "EyeLike", []*onnxpb.Attribute{intAttr("k", math.MaxInt64)}, x), []int{2, 3}, []float32{0, 0, 0, 0, 0, 0})
	wantInputError(t, 22, "EyeLike", nil, []*tensor.Tensor{seq(3)}, 1, "2-D")
	if _, err := runOuts(t, 22, "EyeLike", []*onnxpb.Attribute{intAttr("dtype", int64(onnxpb.String))}, []*tensor.Tensor{x}, 1); err == nil {
		t.Error("EyeLike of strings compiled")
	}

	h := tensor.From([]int{2, 2, 2}, []float32{1, 5, 5, 2, 0, 0, 0, 0})
	check(t, "Hardmax-13 axis -1", run1(t, 13, "Hardmax", nil, h), []int{2, 2, 2}, []float32{0, 1, 1, 0, 1, 0, 1, 0})
	check(t, "Hardmax-11 coerced at axis 1", run1(t, 11, "Hardmax", nil, h), []int{2, 2, 2}, []float32{0, 1, 0, 0, 1, 0, 0, 0})
	hf := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{1, 3, 2}))
	check(t, "Hardmax BF16", run1(t, 13, "Hardmax", nil, hf), []int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{0, 1, 0}))
	wantInputError(t, 13, "Hardmax", nil, []*tensor.Tensor{i64s(1, 2)}, 1, "does not take INT64")
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
		y := run1(t, 26, c.op, []*onnxpb.Attribute{intAttr("exclusive", c.exclusive), intAttr("reverse", c.reverse)}, x, tensor.Scalar(int32(-1)))
		check(t, fmt.Sprintf("%s exclusive=%d reverse=%d", c.op, c.exclusive, c.reverse), y, []int{2, 3}, c.want)
	}
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, 0.25, 2}))
	check(t, "CumSum FP16", run1(t, 14, "CumSum", nil, h, tensor.Scalar(int64(0))), []int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, 0.75, 2.75}))
	wantInputError(t, 14, "CumSum", nil, []*tensor.Tensor{x, tensor.Scalar(int64(2))}, 1, "out of range")
	wantInputError(t, 14, "CumSum", nil, []*tensor.Tensor{tensor.From([]int{1}, []bool{true}), tensor.Scalar(int64(0))}, 1, "CumSum does not take BOOL")

	sq := tensor.From([]int{3, 2}, []string{"a0", "b0", "a1", "b1", "a2", "b2"})
	y := run1(t, 10, "ReverseSequence", nil, sq, i64s(3, 0))
	check(t, "ReverseSequence", y, []int{3, 2}, []string{"a2", "b0", "a1", "b1", "a0", "b2"})
	wantInputError(t, 10, "ReverseSequence", nil, []*tensor.Tensor{sq, i64s(4, 0)}, 1, "length 4 is out of range")
	wantInputError(t, 10, "ReverseSequence", nil, []*tensor.Tensor{sq, i64s(1)}, 1, "batch of 2")
}
