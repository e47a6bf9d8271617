package matmul

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// filled returns a tensor of shape whose element i is f(i).
func filled[T tensor.Numeric](shape []int, f func(i int) T) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]T, n)
	for i := range d {
		d[i] = f(i)
	}
	return tensor.From(shape, d)
}

// TestCancelled: the products off the engine (integer and float64
// products, batched or not, the integer products' zero points and
// requantization) and the quantization operators stop with the request's
// error once it is cancelled (inputs of more than ops.TickEvery units of
// work), and answer under a live request.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := ops.TickEvery + 1
	small := func(i int) int32 { return int32(i%7 - 3) }
	u8 := func(i int) uint8 { return uint8(i % 251) }
	wide := filled([]int{2, 3}, small)
	long := filled([]int{3, n}, small)
	f64 := filled([]int{4, 64, 64}, func(i int) float64 { return float64(i%5) - 2 })
	x := filled([]int{n}, func(i int) float32 { return float32(i%9) - 4 })
	scalar := func(v float32) *tensor.Tensor { return tensor.Scalar(v) }
	bInt8 := filled([]int{256, 4}, func(i int) int8 { return int8(i%11 - 5) })
	aU8 := filled([]int{300, 256}, u8)
	for _, c := range []struct {
		s  spec
		in []*tensor.Tensor
	}{
		{spec{op: "MatMul", opset: 13, inputs: 2}, []*tensor.Tensor{wide, long}},
		{spec{op: "MatMul", opset: 13, inputs: 2}, []*tensor.Tensor{f64, f64}},
		{spec{op: "MatMul", opset: 13, inputs: 2}, []*tensor.Tensor{filled([]int{4, 64, 64}, func(i int) float32 { return 1 }), filled([]int{64, 64}, func(i int) float32 { return 1 })}},
		{spec{op: "Gemm", opset: 13, inputs: 3, attrs: []*onnxpb.Attribute{attrInt("transA", 1), attrFloat("alpha", 2)}},
			[]*tensor.Tensor{filled([]int{3, 2}, func(i int) float64 { return 1 }), filled([]int{3, n}, func(i int) float64 { return 1 }), filled([]int{n}, func(i int) float64 { return 1 })}},
		{spec{op: "MatMulInteger", opset: 10, inputs: 4}, []*tensor.Tensor{filled([]int{2, 3}, u8), filled([]int{3, n}, u8), tensor.Scalar(uint8(1)), tensor.Scalar(uint8(2))}},
		{spec{op: "MatMulInteger", opset: 10, inputs: 2, consts: []*tensor.Tensor{nil, bInt8}}, []*tensor.Tensor{aU8, bInt8}},
		{spec{op: "QLinearMatMul", opset: 10, inputs: 8}, []*tensor.Tensor{filled([]int{2, 3}, u8), scalar(0.5), tensor.Scalar(uint8(1)),
			filled([]int{3, n}, u8), scalar(0.25), tensor.Scalar(uint8(2)), scalar(4), tensor.Scalar(uint8(3))}},
		{spec{op: "QuantizeLinear", opset: 21, inputs: 3}, []*tensor.Tensor{x, scalar(0.5), tensor.Scalar(int8(1))}},
		{spec{op: "DequantizeLinear", opset: 21, inputs: 3}, []*tensor.Tensor{filled([]int{n}, u8), scalar(0.5), tensor.Scalar(uint8(1))}},
		{spec{op: "DynamicQuantizeLinear", opset: 11, inputs: 1, outputs: 3}, []*tensor.Tensor{x}},
	} {
		op, _ := mustCompile(t, c.s)
		if _, err := op.Run(ops.NewContext(ctx, gemm.Default(), false), c.in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s on %v: %v, want the context's error", c.s.op, c.in[0].DType, err)
		}
		if _, err := run(op, nil, c.in...); err != nil {
			t.Errorf("%s on %v: %v", c.s.op, c.in[0].DType, err)
		}
	}
}

// TestWideIntegerProductInStripes: a product whose rows are wider than
// ops.TickEvery (computed a stripe of columns at a time) gives the plain
// loop's answer, batched and not.
func TestWideIntegerProductInStripes(t *testing.T) {
	n, k := ops.TickEvery+77, 5
	a := filled([]int{2, 3, k}, func(i int) int64 { return int64(i%13 - 6) })
	b := filled([]int{k, n}, func(i int) int64 { return int64(i%17 - 8) })
	op, _ := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2})
	y := run1(t, op, nil, a, b)
	want := make([]int64, 2*3*n)
	ad, bd := a.Data.([]int64), b.Data.([]int64)
	for r := range 6 {
		for j := range n {
			var s int64
			for p := range k {
				s += ad[r*k+p] * bd[p*n+j]
			}
			want[r*n+j] = s
		}
	}
	if !slices.Equal(y.Shape, []int{2, 3, n}) || !slices.Equal(y.Data.([]int64), want) {
		t.Error("the striped product differs from the plain loop")
	}
}
