package activation

import (
	"context"
	"errors"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// filledTensor returns n copies of v as a 1-D tensor.
func filledTensor[T tensor.Elem](n int, v T) *tensor.Tensor {
	d := make([]T, n)
	for i := range d {
		d[i] = v
	}
	return tensor.From([]int{n}, d)
}

// TestCancelled: every operator of the package stops with the request's
// error once its context is cancelled (inputs just above ops.TickEvery
// elements, of every type path), and answers the same inputs under a live
// context.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, nil, false)
	n := ops.TickEvery + 1
	f32, f64, bf16 := filledTensor(n, float32(-0.5)), filledTensor(n, -0.5), filledTensor(n, tensor.BF16From(-0.5))
	i32 := filledTensor(n, int32(-3))
	type node struct {
		op      string
		opset   int64
		attrs   []*onnxpb.Attribute
		outputs int
		in      []*tensor.Tensor
	}
	var cases []node
	for _, op := range []string{"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu",
		"Softplus", "Softsign", "Mish", "Shrink", "Gelu", "Swish", "Celu", "ThresholdedRelu"} {
		for _, x := range []*tensor.Tensor{f32, f64, bf16} {
			cases = append(cases, node{op, 24, nil, 1, []*tensor.Tensor{x}})
		}
	}
	cases = append(cases,
		node{"Gelu", 24, []*onnxpb.Attribute{opstest.AttrString("approximate", "tanh")}, 1, []*tensor.Tensor{f32}},
		node{"Relu", 14, nil, 1, []*tensor.Tensor{i32}},
		node{"Shrink", 9, nil, 1, []*tensor.Tensor{i32}},
		node{"Clip", 6, nil, 1, []*tensor.Tensor{f32}},
		node{"Clip", 13, nil, 1, []*tensor.Tensor{f32, tensor.Scalar(float32(0)), tensor.Scalar(float32(1))}},
		node{"Clip", 13, nil, 1, []*tensor.Tensor{i32, tensor.Scalar(int32(0))}},
		node{"Clip", 13, nil, 1, []*tensor.Tensor{bf16}},
		node{"PRelu", 16, nil, 1, []*tensor.Tensor{f32, tensor.Scalar(float32(0.1))}},
		node{"PRelu", 16, nil, 1, []*tensor.Tensor{i32, i32}},
		node{"Dropout", 7, nil, 2, []*tensor.Tensor{f32}},
		node{"Dropout", 10, nil, 2, []*tensor.Tensor{f64}},
		node{"Dropout", 13, nil, 2, []*tensor.Tensor{bf16}},
	)
	for _, tc := range cases {
		op, _, err := opstest.Compile(opstest.Node{Op: tc.op, Opset: tc.opset, Attrs: tc.attrs, Outputs: tc.outputs}, len(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.op, err)
		}
		if _, err := op.Run(c, tc.in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s on %v: %v, want the context's error", tc.op, tc.in[0].DType, err)
		}
		if _, err := op.Run(opstest.Background(), tc.in); err != nil {
			t.Errorf("%s on %v: %v", tc.op, tc.in[0].DType, err)
		}
	}
}
