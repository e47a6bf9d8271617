package conv

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestCancelled: every convolution stops with the request's error once
// its context is cancelled, on every path (the implicit GEMM, float and
// int8, the depthwise loop, the adjoint, the float64 definitions, the
// integer and deformable convolutions, the fused one).
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := rand.New(rand.NewPCG(51, 51))
	x := tensor.From([]int{1, 8, 32, 32}, randomFloats(r, []int{1, 8, 32, 32}))
	w := tensor.From([]int{8, 8, 3, 3}, randomFloats(r, []int{8, 8, 3, 3}))
	dw := tensor.From([]int{8, 1, 3, 3}, randomFloats(r, []int{8, 1, 3, 3}))
	x64, w64 := castTo(t, x, tensor.Float64), castTo(t, w, tensor.Float64)
	xu8 := castTo(t, tensor.From(x.Shape, make([]float32, x.Len())), tensor.Uint8)
	wi8 := castTo(t, w, tensor.Int8)
	off := tensor.From([]int{1, 18, 30, 30}, make([]float32, 18*30*30))
	pads := opstest.AttrInts("pads", 1, 1, 1, 1)
	group := opstest.AttrInt("group", 8)
	for _, c := range []struct {
		name string
		s    spec
		in   []*tensor.Tensor
	}{
		{"Conv", spec{op: "Conv", inputs: 2, attrs: []*onnxpb.Attribute{pads}}, []*tensor.Tensor{x, w}},
		{"Conv held int8", spec{op: "Conv", inputs: 2, consts: []*tensor.Tensor{nil, w}, quantize: true}, []*tensor.Tensor{x, w}},
		{"Conv depthwise", spec{op: "Conv", inputs: 2, consts: []*tensor.Tensor{nil, dw}, attrs: []*onnxpb.Attribute{group}}, []*tensor.Tensor{x, dw}},
		{"Conv FP64", spec{op: "Conv", inputs: 2}, []*tensor.Tensor{x64, w64}},
		{"ConvTranspose", spec{op: "ConvTranspose", inputs: 2}, []*tensor.Tensor{x, w}},
		{"ConvTranspose FP64", spec{op: "ConvTranspose", inputs: 2}, []*tensor.Tensor{x64, w64}},
		{"ConvInteger", spec{op: "ConvInteger", opset: 13, inputs: 2}, []*tensor.Tensor{xu8, wi8}},
		{"DeformConv", spec{op: "DeformConv", inputs: 3}, []*tensor.Tensor{x, w, off}},
		{"FusedConv", spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: 2, consts: []*tensor.Tensor{nil, w}}, []*tensor.Tensor{x, w}},
	} {
		_, err := mustCompile(t, c.s).runWith(ops.NewContext(ctx, nil, false), c.in...)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want the context's error", c.name, err)
		}
	}
}
