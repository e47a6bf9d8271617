package logic

import (
	"context"
	"errors"
	"testing"

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
// elements), and answers the same inputs under a live context.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, nil, false)
	n := ops.TickEvery + 1
	f32, f64, b := filledTensor(n, float32(1)), filledTensor(n, 1.0), filledTensor(n, true)
	s := filledTensor(n, "a")
	// runs of 2: the walk looks at the request between runs too
	pairs := tensor.From([]int{n, 2}, make([]int32, 2*n))
	type node struct {
		op string
		in []*tensor.Tensor
	}
	cases := []node{
		{"Not", []*tensor.Tensor{b}},
		{"IsNaN", []*tensor.Tensor{f32}},
		{"IsInf", []*tensor.Tensor{f64}},
		{"Where", []*tensor.Tensor{b, f32, tensor.Scalar(float32(0))}},
		{"Where", []*tensor.Tensor{b, s, s}},
		{"Equal", []*tensor.Tensor{s, s}},
		{"Equal", []*tensor.Tensor{b, b}},
		{"Less", []*tensor.Tensor{pairs, tensor.From([]int{1, 2}, []int32{0, 1})}},
	}
	for _, op := range []string{"And", "Or", "Xor"} {
		cases = append(cases, node{op, []*tensor.Tensor{b, b}})
	}
	for _, op := range []string{"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"} {
		cases = append(cases, node{op, []*tensor.Tensor{f32, f32}})
	}
	for _, tc := range cases {
		op, _, err := opstest.Compile(opstest.Node{Op: tc.op, Opset: 20}, len(tc.in))
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
