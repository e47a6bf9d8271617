package norm

import (
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
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
