package arith

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// cancelled returns a Context whose request is already cancelled.
func cancelled() *ops.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ops.NewContext(ctx, nil, false)
}

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
	n := ops.TickEvery + 1
	f32, f64 := filledTensor(n, float32(0.5)), filledTensor(n, 0.5)
	f16 := filledTensor(n, tensor.F16From(0.5))
	i32, u32 := filledTensor(n, int32(3)), filledTensor(n, uint32(3))
	type node struct {
		op    string
		opset int64
		attrs []*onnxpb.Attribute
		in    []*tensor.Tensor
	}
	cases := []node{
		{"Pow", 15, nil, []*tensor.Tensor{f32, tensor.Scalar(float32(2))}},
		{"Pow", 15, nil, []*tensor.Tensor{f32, tensor.Scalar(float32(0.5))}},
		{"Pow", 15, nil, []*tensor.Tensor{f32, tensor.Scalar(float32(3))}},
		{"Pow", 15, nil, []*tensor.Tensor{i32, tensor.Scalar(int64(2))}},
		{"Pow", 15, nil, []*tensor.Tensor{f16, tensor.Scalar(float32(2))}},
		{"Mod", 13, nil, []*tensor.Tensor{i32, i32}},
		{"Mod", 13, []*onnxpb.Attribute{opstest.AttrInt("fmod", 1)}, []*tensor.Tensor{f32, f32}},
		{"BitShift", 11, []*onnxpb.Attribute{opstest.AttrString("direction", "LEFT")}, []*tensor.Tensor{u32, u32}},
		{"BitwiseAnd", 18, nil, []*tensor.Tensor{i32, i32}},
		{"BitwiseOr", 18, nil, []*tensor.Tensor{i32, i32}},
		{"BitwiseXor", 18, nil, []*tensor.Tensor{i32, i32}},
		{"BitwiseNot", 18, nil, []*tensor.Tensor{i32}},
	}
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		cases = append(cases, node{op, 14, nil, []*tensor.Tensor{f32, f32}}, node{op, 14, nil, []*tensor.Tensor{i32, i32}},
			node{op, 14, nil, []*tensor.Tensor{f16, f16}})
	}
	for _, op := range []string{"Min", "Max", "Sum", "Mean"} {
		cases = append(cases, node{op, 13, nil, []*tensor.Tensor{f32, f32, f32}}, node{op, 13, nil, []*tensor.Tensor{f16, f16}})
	}
	for _, op := range unaryNames {
		cases = append(cases, node{op, 13, nil, []*tensor.Tensor{f32}}, node{op, 13, nil, []*tensor.Tensor{f64}},
			node{op, 13, nil, []*tensor.Tensor{f16}})
	}
	for _, op := range []string{"Abs", "Neg", "Sign"} {
		cases = append(cases, node{op, 13, nil, []*tensor.Tensor{i32}})
	}
	for _, tc := range cases {
		n := opstest.Node{Op: tc.op, Opset: tc.opset, Attrs: tc.attrs}
		op, _, err := opstest.Compile(n, len(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.op, err)
		}
		if _, err := op.Run(cancelled(), tc.in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s on %v: %v, want the context's error", tc.op, tc.in[0].DType, err)
		}
		if _, err := op.Run(opstest.Background(), tc.in); err != nil {
			t.Errorf("%s on %v: %v", tc.op, tc.in[0].DType, err)
		}
	}
}

// TestLongRunsInPieces: broadcasts whose runs are longer than
// ops.TickEvery (computed in pieces) give the index walk's answer.
func TestLongRunsInPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	n := ops.TickEvery + 4321
	f32 := map[binOp]func(x, y float32) float32{
		opAdd: func(x, y float32) float32 { return x + y }, opSub: func(x, y float32) float32 { return x - y },
		opDiv: func(x, y float32) float32 { return x / y }, opMax: func(x, y float32) float32 { return max(x, y) },
	}
	for _, shapes := range [][2][]int{
		{{n}, {n}},
		{{2, n}, {n}},
		{{n}, {1}},
		{{1}, {3, n}},
		{{2, n}, {2, 1}},
		{{3, 1, n}, {1, 2, 1}},
		{{n, 2}, {1, 2}},
	} {
		a, b := randF32(r, shapes[0]), randF32(r, shapes[1])
		for op, f := range f32 {
			got, err := compute(opstest.Background(), "op", op, a, b)
			if err != nil {
				t.Fatal(err)
			}
			shape, want := naive(a.Data.([]float32), b.Data.([]float32), shapes[0], shapes[1], f)
			if !slices.Equal(got.Shape, shape) || !slices.Equal(got.Data.([]float32), want) {
				t.Fatalf("op %d on %v and %v differs from the index walk", op, shapes[0], shapes[1])
			}
		}
	}
}
