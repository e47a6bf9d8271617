package activation

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestSplitMatchesSerial: every activation whose loop splits across two
// cores gives the bits of one core, on an odd length whose chunks end
// mid-vector, NaNs and infinities included.
func TestSplitMatchesSerial(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 3))
	const n = 300007
	f32, i32 := make([]float32, n), make([]int32, n)
	for i := range f32 {
		f32[i] = float32(r.NormFloat64() * 4)
		i32[i] = int32(r.IntN(2001) - 1000)
	}
	f32[7], f32[n/2], f32[n-1] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	x, xi := tensor.From([]int{n}, f32), tensor.From([]int{n}, i32)
	for _, tc := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.Attribute
		in    []*tensor.Tensor
	}{
		{"Relu", 14, nil, []*tensor.Tensor{x}},
		{"Relu", 14, nil, []*tensor.Tensor{xi}},
		{"LeakyRelu", 16, []*onnxpb.Attribute{fattr("alpha", 0.1)}, []*tensor.Tensor{x}},
		{"Sigmoid", 13, nil, []*tensor.Tensor{x}},
		{"Tanh", 13, nil, []*tensor.Tensor{x}},
		{"HardSigmoid", 22, nil, []*tensor.Tensor{x}},
		{"HardSwish", 22, nil, []*tensor.Tensor{x}},
		{"Gelu", 20, nil, []*tensor.Tensor{x}},
		{"Gelu", 20, []*onnxpb.Attribute{opstest.AttrString("approximate", "tanh")}, []*tensor.Tensor{x}},
		{"Swish", 24, nil, []*tensor.Tensor{x}},
		{"Clip", 6, []*onnxpb.Attribute{fattr("min", -1), fattr("max", 6)}, []*tensor.Tensor{x}},
		{"Clip", 13, nil, []*tensor.Tensor{x, tensor.Scalar(float32(0)), tensor.Scalar(float32(6))}},
		{"Clip", 13, nil, []*tensor.Tensor{xi, tensor.Scalar(int32(-5))}},
		{"Shrink", 9, []*onnxpb.Attribute{fattr("lambd", 3)}, []*tensor.Tensor{xi}},
	} {
		op, _, err := opstest.Compile(opstest.Node{Op: tc.op, Opset: tc.opset, Attrs: tc.attrs}, len(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.op, err)
		}
		opstest.SplitRun(t, fmt.Sprintf("%s %v on %v", tc.op, tc.attrs, tc.in[0].DType), op, tc.in...)
	}
}
