package pool

import (
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// run compiles one node of op at opset with attrs and nOut outputs for
// the input x and runs it on x.
func run(t testing.TB, opset int64, op string, x *tensor.Tensor, nOut int, attrs ...*onnxpb.Attribute) ([]*tensor.Tensor, error) {
	t.Helper()
	return opstest.Run(t, opstest.Node{Op: op, Opset: opset, Outputs: nOut, Attrs: attrs}, x)
}

// compile compiles one node of op at opset with attrs, inputs inputs and
// nOut outputs.
func compile(opset int64, op string, inputs, nOut int, attrs ...*onnxpb.Attribute) (ops.Operator, error) {
	o, _, err := opstest.Compile(opstest.Node{Op: op, Opset: opset, Outputs: nOut, Attrs: attrs}, inputs)
	return o, err
}

func sameFloats(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("%s: element %d = %v, the reference %v", what, i, got[i], want[i])
		}
	}
}
