package ml

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// node is an ai.onnx.ml node of op at opset with outputs outputs.
func node(op string, opset int64, outputs int, attrs ...*onnxpb.Attribute) opstest.Node {
	return opstest.Node{Domain: domain, Op: op, Opset: opset, Outputs: outputs, Attrs: attrs}
}

// run runs n on in, failing the test on an error.
func run(t *testing.T, n opstest.Node, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	out, err := opstest.Run(t, n, in...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runErr runs n on in and returns its error (of compiling or running).
func runErr(t *testing.T, n opstest.Node, in ...*tensor.Tensor) error {
	t.Helper()
	_, err := opstest.Run(t, n, in...)
	return err
}

// compileErr compiles n for inputs inputs and returns its error.
func compileErr(n opstest.Node, inputs int) error {
	_, _, err := opstest.Compile(n, inputs)
	return err
}

// near reports whether got and want (float tensors) agree within tol,
// relative to max(1, |want|).
func near(got *tensor.Tensor, want []float64, tol float64) bool {
	g := got.Float64s()
	if len(g) != len(want) {
		return false
	}
	for i := range g {
		if !(math.Abs(g[i]-want[i]) <= tol*max(1, math.Abs(want[i]))) {
			return false
		}
	}
	return true
}
