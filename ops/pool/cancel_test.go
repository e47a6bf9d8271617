package pool

import (
	"context"
	"errors"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestCancelled: every pool over a large input stops with the request's
// error once its context is cancelled.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, nil, false)
	const N, C, S = 2, 4, 256
	x := tensor.From([]int{N, C, S, S}, make([]float32, N*C*S*S))
	x64 := tensor.From([]int{N, C, S, S}, make([]float64, N*C*S*S))
	x3 := tensor.From([]int{N, C, 16, S, 16}, make([]float32, N*C*16*S*16))
	k3 := opstest.AttrInts("kernel_shape", 3, 3)
	idx := make([]int64, N*C*S*S)
	for i := range idx {
		idx[i] = int64(i)
	}
	for _, tc := range []struct {
		opset int64
		op    string
		outs  int
		in    []*tensor.Tensor
		attrs []*onnxpb.Attribute
	}{
		{22, "MaxPool", 1, []*tensor.Tensor{x}, []*onnxpb.Attribute{k3}},
		{22, "MaxPool", 2, []*tensor.Tensor{x}, []*onnxpb.Attribute{k3}},
		{22, "MaxPool", 1, []*tensor.Tensor{x64}, []*onnxpb.Attribute{k3}},
		{22, "MaxPool", 1, []*tensor.Tensor{x3}, []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2, 2, 2)}},
		{22, "AveragePool", 1, []*tensor.Tensor{x}, []*onnxpb.Attribute{k3}},
		{22, "AveragePool", 1, []*tensor.Tensor{x64}, []*onnxpb.Attribute{k3, opstest.AttrInt("count_include_pad", 1)}},
		{22, "LpPool", 1, []*tensor.Tensor{x}, []*onnxpb.Attribute{k3}},
		{22, "GlobalAveragePool", 1, []*tensor.Tensor{x}, nil},
		{22, "GlobalMaxPool", 1, []*tensor.Tensor{x64}, nil},
		{22, "GlobalLpPool", 1, []*tensor.Tensor{x}, nil},
		{22, "MaxUnpool", 1, []*tensor.Tensor{x, tensor.From(x.Shape, idx)}, []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 1, 1)}},
		{22, "MaxRoiPool", 1, []*tensor.Tensor{x, tensor.From([]int{1, 5}, []float32{0, 0, 0, S, S})}, []*onnxpb.Attribute{opstest.AttrInts("pooled_shape", 8, 8)}},
		{22, "RoiAlign", 1, []*tensor.Tensor{x, tensor.From([]int{1, 4}, []float32{0, 0, S, S}), tensor.From([]int{1}, []int64{0})}, []*onnxpb.Attribute{opstest.AttrInt("output_height", 8), opstest.AttrInt("output_width", 8)}},
	} {
		op, err := compile(tc.opset, tc.op, len(tc.in), tc.outs, tc.attrs...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.Run(c, tc.in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s %v: %v, want the context's error", tc.op, tc.attrs, err)
		}
	}
}
