package norm

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// run compiles one node of op at opset with attrs and nOut outputs for
// the inputs in and runs it on them.
func run(t testing.TB, opset int64, op string, nOut int, in []*tensor.Tensor, attrs ...*onnxpb.Attribute) ([]*tensor.Tensor, error) {
	t.Helper()
	return opstest.Run(t, opstest.Node{Op: op, Opset: opset, Outputs: nOut, Attrs: attrs}, in...)
}

// compile compiles one node of op at opset with attrs, inputs inputs and
// nOut outputs.
func compile(opset int64, op string, inputs, nOut int, attrs ...*onnxpb.Attribute) (ops.Operator, error) {
	o, _, err := opstest.Compile(opstest.Node{Op: op, Opset: opset, Outputs: nOut, Attrs: attrs}, inputs)
	return o, err
}

// background is the Context of a run outside any request.
func background() *ops.Context { return ops.NewContext(context.Background(), nil, false) }

func attrInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func attrInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func attrFloat(name string, f float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: f}
}

// random returns a float32 tensor of the given shape with normal values.
func random(r *rand.Rand, shape ...int) *tensor.Tensor {
	x := make([]float32, ops.ProdInts(shape))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return tensor.From(shape, x)
}

// positive returns n values in [0.5, 2).
func positive(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 0.5 + 1.5*r.Float32()
	}
	return v
}

// castTo returns a float32 tensor's values in the floating-point type dt.
func castTo(x *tensor.Tensor, dt tensor.DataType) *tensor.Tensor {
	return ops.FromFloat64s(dt, x.Shape, x.Float64s())
}

func closeTo(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}
