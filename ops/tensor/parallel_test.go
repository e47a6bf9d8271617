package tensor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// naiveStrided is the element-by-element reference for a strided view:
// out[i] = src[base + Σ coord_d(i)·strides[d]].
func naiveStrided[T any](src []T, shape, strides []int, base int) []T {
	out := make([]T, ops.ProdInts(shape))
	for i := range out {
		at, rem := base, i
		for d := len(shape) - 1; d >= 0; d-- {
			at += rem % shape[d] * strides[d]
			rem /= shape[d]
		}
		out[i] = src[at]
	}
	return out
}

// naiveConcat is the reference for Concat along axis a of tensors of
// shapes that differ only along a.
func naiveConcat[T any](ins [][]T, shapes [][]int, a int) []T {
	var out []T
	outer := ops.ProdInts(shapes[0][:a])
	for o := range outer {
		for k, x := range ins {
			part := ops.ProdInts(shapes[k][a:])
			out = append(out, x[o*part:(o+1)*part]...)
		}
	}
	return out
}

// TestMovesSplit: Transpose, Slice, Expand, Split and Concat of large
// odd-sized tensors split across two cores (the probe sees it), match
// the element-by-element reference, and give on one core what they give
// on two: gathers a stride apart, contiguous runs, a broadcast (stride
// 0), several types.
func TestMovesSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 5))
	f32 := func(shape ...int) *tensor.Tensor {
		d := make([]float32, ops.ProdInts(shape))
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
		return tensor.From(shape, d)
	}
	i64 := func(shape ...int) *tensor.Tensor {
		d := make([]int64, ops.ProdInts(shape))
		for i := range d {
			d[i] = r.Int64()
		}
		return tensor.From(shape, d)
	}
	strided := func(x *tensor.Tensor, shape, strides []int, base int) any {
		switch d := x.Data.(type) {
		case []float32:
			return naiveStrided(d, shape, strides, base)
		case []int64:
			return naiveStrided(d, shape, strides, base)
		}
		panic("type")
	}
	perm := func(x *tensor.Tensor, p ...int) any {
		st := tensor.Strides(x.Shape)
		shape, strides := make([]int, len(p)), make([]int, len(p))
		for i, a := range p {
			shape[i], strides[i] = x.Shape[a], st[a]
		}
		return strided(x, shape, strides, 0)
	}
	ints := opstest.AttrInts
	x4, xr, xl := f32(3, 37, 41, 29), f32(65, 33, 127), i64(5, 301, 211)
	xs, xe := f32(7, 300, 301), f32(1, 300, 1)
	xsp := f32(16, 300, 257)
	c0, c1, c2 := f32(5, 100, 517), f32(5, 1, 517), f32(5, 150, 517)
	for _, tc := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.Attribute
		in    []*tensor.Tensor
		want  []any
	}{
		{"Transpose", 21, []*onnxpb.Attribute{ints("perm", 0, 2, 3, 1)}, []*tensor.Tensor{x4}, []any{perm(x4, 0, 2, 3, 1)}},
		{"Transpose", 21, []*onnxpb.Attribute{ints("perm", 1, 0, 2)}, []*tensor.Tensor{xr}, []any{perm(xr, 1, 0, 2)}},
		{"Transpose", 21, []*onnxpb.Attribute{ints("perm", 0, 2, 1)}, []*tensor.Tensor{xl}, []any{perm(xl, 0, 2, 1)}},
		{"Slice", 13, nil, []*tensor.Tensor{xs, opstest.I64s(1, 3), opstest.I64s(7, 290), opstest.I64s(0, 2), opstest.I64s(1, 2)},
			[]any{strided(xs, []int{6, 300, 144}, []int{300 * 301, 301, 2}, 300*301+3)}},
		{"Expand", 13, nil, []*tensor.Tensor{xe, opstest.I64s(7, 300, 301)}, []any{strided(xe, []int{7, 300, 301}, []int{0, 1, 0}, 0)}},
		{"Split", 18, nil, []*tensor.Tensor{xsp, opstest.I64s(100, 57, 143)}, []any{
			strided(xsp, []int{16, 100, 257}, []int{300 * 257, 257, 1}, 0),
			strided(xsp, []int{16, 57, 257}, []int{300 * 257, 257, 1}, 100*257),
			strided(xsp, []int{16, 143, 257}, []int{300 * 257, 257, 1}, 157*257)}},
		{"Concat", 13, []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}, []*tensor.Tensor{c0, c1, c2},
			[]any{naiveConcat([][]float32{c0.Data.([]float32), c1.Data.([]float32), c2.Data.([]float32)}, [][]int{c0.Shape, c1.Shape, c2.Shape}, 1)}},
	} {
		attrs := tc.attrs
		if tc.op == "Split" {
			attrs = []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}
		}
		op, _, err := opstest.Compile(opstest.Node{Op: tc.op, Opset: tc.opset, Attrs: attrs, Outputs: len(tc.want)}, len(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.op, err)
		}
		what := fmt.Sprintf("%s %v of %v %v", tc.op, tc.attrs, tc.in[0].DType, tc.in[0].Shape)
		got := opstest.SplitRun(t, what, op, tc.in...)
		for i, w := range tc.want {
			if !reflect.DeepEqual(got[i].Data, w) {
				t.Errorf("%s: output %d differs from the element-by-element reference", what, i)
			}
		}
	}
}

// TestMovesSplitStop: a long copy split across two cores stops with the
// request's error once the request has ended.
func TestMovesSplitStop(t *testing.T) {
	two := gemm.New(dispatch.Default(), 2)
	defer two.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x := tensor.From([]int{512, 1024}, make([]float32, 512*1024))
	if _, err := Permute(ops.NewContext(ctx, two, false), x, []int{1, 0}); !errors.Is(err, context.Canceled) {
		t.Errorf("Transpose under an ended request: %v", err)
	}
}
