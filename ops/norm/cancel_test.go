package norm

import (
	"context"
	"errors"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestCancelled: every normalization over a large input stops with the
// request's error once its context is cancelled.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, nil, false)
	const N, C, S = 4, 8, 1 << 15
	x := tensor.From([]int{N, C, S}, make([]float32, N*C*S))
	ch := func(v float32) *tensor.Tensor {
		p := make([]float32, C)
		for i := range p {
			p[i] = v
		}
		return tensor.From([]int{C}, p)
	}
	one, zero := ch(1), ch(0)
	for _, tc := range []struct {
		opset int64
		op    string
		outs  int
		in    []*tensor.Tensor
		attrs []*onnxpb.Attribute
	}{
		{15, "BatchNormalization", 1, []*tensor.Tensor{x, one, zero, zero, one}, nil},
		{15, "BatchNormalization", 3, []*tensor.Tensor{x, one, zero, zero, one}, []*onnxpb.Attribute{opstest.AttrInt("training_mode", 1)}},
		{22, "InstanceNormalization", 1, []*tensor.Tensor{x, one, zero}, nil},
		{21, "GroupNormalization", 1, []*tensor.Tensor{x, one, zero}, []*onnxpb.Attribute{opstest.AttrInt("num_groups", 2)}},
		{13, "LRN", 1, []*tensor.Tensor{x}, []*onnxpb.Attribute{opstest.AttrInt("size", 3)}},
		{13, "MeanVarianceNormalization", 1, []*tensor.Tensor{x}, []*onnxpb.Attribute{opstest.AttrInts("axes", 0, 2)}},
		{22, "LpNormalization", 1, []*tensor.Tensor{x}, []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}},
		{17, "LayerNormalization", 1, []*tensor.Tensor{x, tensor.From([]int{S}, make([]float32, S))}, nil},
		{23, "RMSNormalization", 1, []*tensor.Tensor{x, tensor.From([]int{S}, make([]float32, S))}, nil},
		{13, "Softmax", 1, []*tensor.Tensor{x}, nil},
		{13, "Softmax", 1, []*tensor.Tensor{x}, []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}},
		{13, "LogSoftmax", 1, []*tensor.Tensor{x}, nil},
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
