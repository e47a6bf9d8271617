package tensor

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestConstantOfShape(t *testing.T) {
	shape := func(d ...int64) *tensor.Tensor { return tensor.From([]int{len(d)}, d) }
	value := func(v *tensor.Tensor) []*onnxpb.Attribute {
		return []*onnxpb.Attribute{{Name: "value", Type: onnxpb.AttrTensor, T: onnx.TensorToONNX("", v)}}
	}
	for _, c := range []struct {
		attrs []*onnxpb.Attribute
		shape *tensor.Tensor
		want  *tensor.Tensor
	}{
		{nil, shape(2, 3), tensor.From([]int{2, 3}, make([]float32, 6))},
		{value(tensor.From([]int{1}, []int64{7})), shape(0, 4), tensor.From([]int{0, 4}, []int64{})},
		{value(tensor.From([]int{1}, []int32{-2})), shape(), tensor.From(nil, []int32{-2})},
		{value(tensor.From([]int{1}, []bool{true})), shape(2), tensor.From([]int{2}, []bool{true, true})},
		{value(tensor.From([]int{1}, []tensor.F16{tensor.F16From(1.5)})), shape(1, 2), tensor.From([]int{1, 2}, []tensor.F16{tensor.F16From(1.5), tensor.F16From(1.5)})},
		{value(tensor.From([]int{1}, []string{"ab"})), shape(3), tensor.From([]int{3}, []string{"ab", "ab", "ab"})},
		{value(tensor.From([]int{1}, []uint64{math.MaxUint64})), shape(1), tensor.From([]int{1}, []uint64{math.MaxUint64})},
	} {
		out, err := opstest.Run(t, opstest.Node{Op: "ConstantOfShape", Opset: 25, Attrs: c.attrs}, c.shape)
		if err != nil {
			t.Fatal(err)
		}
		if out[0].DType != c.want.DType || !slices.Equal(out[0].Shape, c.want.Shape) || fmtData(out[0]) != fmtData(c.want) {
			t.Errorf("ConstantOfShape(%v) = %v %v %v, want %v %v %v", c.shape.Data, out[0].DType, out[0].Shape, out[0].Data, c.want.DType, c.want.Shape, c.want.Data)
		}
	}
	for _, bad := range []*tensor.Tensor{
		shape(2, -1),
		shape(1<<20, 1<<20, 1<<20),
		tensor.From([]int{2}, []int32{2, 2}),
		tensor.From([]int{1, 2}, []int64{2, 2}),
	} {
		if _, err := opstest.Run(t, opstest.Node{Op: "ConstantOfShape", Opset: 25}, bad); !errors.Is(err, ops.ErrInput) {
			t.Errorf("shape %v%v: %v", bad.DType, bad.Data, err)
		}
	}
	if _, err := opstest.Run(t, opstest.Node{Op: "ConstantOfShape", Opset: 25, Attrs: value(tensor.From([]int{2}, []float32{1, 2}))}, shape(2)); err == nil {
		t.Error("a two-element value compiled")
	}
}
